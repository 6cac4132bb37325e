import { describe, expect, it } from 'vitest';
import pino from 'pino';
import { ClickhouseBatchWriter } from '../../workers/warehouse/clickhouse-batch-writer.js';

/** The batch writer's timing, over a recording warehouse (its inserts are tested against ClickHouse elsewhere). */
describe('ClickhouseBatchWriter', () => {
  it('flushes a table after its own delay, the others after the default one; a full buffer at once', async () => {
    const inserts: { table: string; rows: number; at: number }[] = [];
    const started = performance.now();
    const warehouse = {
      insertLines: async (table: string, lines: readonly (string | Buffer)[]) =>
        void inserts.push({ table, rows: lines.join('\n').split('\n').length, at: performance.now() - started }),
    };
    const writer = new ClickhouseBatchWriter(warehouse as never, pino({ level: 'silent' }), {
      maxRows: 5,
      maxDelayMs: 20,
      tables: { decisions: { delayMs: 200 } },
    });
    const events = writer.write('events', ['a', 'b']);
    const decisions = writer.write('decisions', ['x']);
    await events;
    expect(inserts).toEqual([{ table: 'events', rows: 2, at: expect.any(Number) }]);
    expect(inserts[0].at).toBeLessThan(150);
    await writer.write('decisions', ['y', 'z', 'w', 'v']); // five rows: flushed at once with the first
    await decisions;
    expect(inserts.map((i) => [i.table, i.rows])).toEqual([
      ['events', 2],
      ['decisions', 5],
    ]);
    const late = writer.write('decisions', ['u']);
    await new Promise((r) => setTimeout(r, 60));
    expect(inserts).toHaveLength(2); // still waiting for its 200 ms
    await late;
    expect(inserts.map((i) => [i.table, i.rows])).toEqual([
      ['events', 2],
      ['decisions', 5],
      ['decisions', 1],
    ]);
  });

  it('holds a table with its own row limit until that limit, the others until the default one', async () => {
    const inserts: [string, number][] = [];
    const warehouse = {
      insertLines: async (table: string, lines: readonly (string | Buffer)[]) => void inserts.push([table, lines.join('\n').split('\n').length]),
    };
    const writer = new ClickhouseBatchWriter(warehouse as never, pino({ level: 'silent' }), {
      maxRows: 5,
      maxDelayMs: 10_000,
      tables: { decisions: { delayMs: 10_000, maxRows: 8 } },
    });
    const events = writer.write('events', ['a', 'b', 'c', 'd', 'e']);
    const decisions = writer.write('decisions', ['u', 'v', 'w', 'x', 'y', 'z']);
    await events; // five rows: the default limit, flushed at once
    await new Promise((r) => setTimeout(r, 50));
    expect(inserts).toEqual([['events', 5]]); // six decisions wait: their limit is eight
    await writer.write('decisions', ['s', 't']);
    await decisions;
    expect(inserts).toEqual([
      ['events', 5],
      ['decisions', 8],
    ]);
  });

  it('stores a row that finds its table quiet after the quiet delay, and never starts two inserts closer than the delay', async () => {
    const started = performance.now();
    const at: number[] = [];
    const warehouse = { insertLines: async () => void at.push(performance.now() - started) };
    const writer = new ClickhouseBatchWriter(warehouse as never, pino({ level: 'silent' }), {
      tables: { events: { delayMs: 300, quietDelayMs: 20 } },
    });
    await writer.write('events', ['a']); // a quiet table: 20 ms, not 300
    expect(at[0]).toBeLessThan(150);
    const second = writer.write('events', ['b']); // right after an insert: the rest of the 300 ms
    await new Promise((r) => setTimeout(r, 150));
    expect(at).toHaveLength(1);
    await second;
    expect(at[1] - at[0]).toBeGreaterThanOrEqual(295);
    await new Promise((r) => setTimeout(r, 320)); // quiet again
    const quietAgain = performance.now() - started;
    await writer.write('events', ['c']);
    expect(at[2] - quietAgain).toBeLessThan(150);
  });

  it("hands each caller's lines to one insert intact and in order, several callers' lines together", async () => {
    const bodies: string[] = [];
    const writer = new ClickhouseBatchWriter(
      { insertLines: async (_table: string, lines: readonly (string | Buffer)[]) => void bodies.push(`${lines.join('\n')}\n`) } as never,
      pino({ level: 'silent' }),
      { maxRows: 100, maxDelayMs: 10 },
    );
    await Promise.all([writer.write('events', ['[1]', '[2]']), writer.write('events', ['[3]']), writer.write('events', ['[4]', '[5]', '[6]'])]);
    expect(bodies).toEqual(['[1]\n[2]\n[3]\n[4]\n[5]\n[6]\n']);
    expect(writer.rowsWritten).toBe(6);
  });
});
