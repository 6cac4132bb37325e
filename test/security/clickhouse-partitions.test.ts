import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifyClickhouseError } from '../../shared/platform/warehouse/clickhouse.js';
import { createWarehouse } from '../../shared/platform/warehouse/clickhouse-warehouse.js';
import { toInteractionRow } from '../../shared/ingestion/event-rows.warehouse.js';
import { rowLine } from '../../shared/platform/warehouse/tables.js';
import { MAX_PARTITIONS_PER_INSERT } from '../../shared/platform/warehouse/sql/inserts.js';
import type { Warehouse } from '../../shared/platform/warehouse/warehouse.js';
import { ClickhouseBatchWriter } from '../../workers/warehouse/clickhouse-batch-writer.js';

/**
 * The tables are partitioned by month of a client-given time: an insert spanning many months
 * creates a part per month and stalls ingestion for everyone. The engine's guard stays on, and a
 * shared batch over it does not poison the jobs that shared it.
 */
let ch: Warehouse;
const MONTH_MS = 31 * 86_400_000;
const now = Date.now();

function line(projectId: string, userId: string, ms: number, i: number): string {
  const row = toInteractionRow(
    { projectId, userId, treatmentId: 't', treatmentTrackingId: 't_r', surface: 's', interactionType: 'VIEWED', interactionTimeMicros: BigInt(ms) * 1000n },
    `j:${userId}:${i}`,
    now,
  );
  return rowLine('interactions', row);
}
/** One row per month, `months` months back from now. */
const spanning = (projectId: string, userId: string, months: number) =>
  Array.from({ length: months }, (_, i) => line(projectId, userId, now - i * MONTH_MS, i));

async function count(projectId: string): Promise<number> {
  const rows = await ch.query<{ n: number }>('SELECT toUInt32(count()) AS n FROM interactions FINAL WHERE project_id = {p:String}', { p: projectId });
  return rows[0].n;
}

beforeAll(async () => {
  ch = createWarehouse({ dataDir: mkdtempSync(join(tmpdir(), 'tds-partitions-')) });
  await ch.migrate();
}, 60_000);
afterAll(async () => {
  await ch?.close();
});

describe('partitions per insert', () => {
  it('the engine refuses an insert spanning more monthly partitions than allowed, and the error is permanent', async () => {
    const err = await ch.insertLines('interactions', spanning('p-many', 'u', MAX_PARTITIONS_PER_INSERT + 20)).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(Error);
    expect(String((err as Error).message)).toMatch(/partitions/i);
    expect(classifyClickhouseError(err)).toBe('permanent');
    expect(await count('p-many')).toBe(0);
  });

  it('accepts rows over the bounded window the API allows (RETENTION_DAYS back to 24 h ahead: about 15 months)', async () => {
    // 12 monthly steps back (341 days: inside the 400-day retention TTL, which would drop older
    // rows at once) and one row a day ahead: the window the API accepts, 13–14 partitions
    const lines = [...spanning('p-ok', 'u', 12), line('p-ok', 'u', now + 23 * 3_600_000, 99)];
    await ch.insertLines('interactions', lines);
    expect(await count('p-ok')).toBe(13);
  });

  it('a shared batch over the limit is retried caller by caller: the callers within bounds are stored, only the bad one fails', async () => {
    const writer = new ClickhouseBatchWriter(ch, pino({ level: 'silent' }), { maxDelayMs: 20, isPermanent: (e) => classifyClickhouseError(e) === 'permanent' });
    // many jobs of 12 months each, together over the limit only because of one job of 120 months
    const good = Array.from({ length: 30 }, (_, j) => writer.write('interactions', spanning('p-batch', `u${j}`, 12)));
    const bad = writer.write('interactions', spanning('p-batch-bad', 'u', MAX_PARTITIONS_PER_INSERT + 20));
    const results = await Promise.allSettled([...good, bad]);
    expect(results.slice(0, 30).every((r) => r.status === 'fulfilled')).toBe(true);
    expect(results[30].status).toBe('rejected');
    expect(classifyClickhouseError((results[30] as PromiseRejectedResult).reason)).toBe('permanent');
    expect(await count('p-batch')).toBe(30 * 12);
    expect(await count('p-batch-bad')).toBe(0);
  });
});
