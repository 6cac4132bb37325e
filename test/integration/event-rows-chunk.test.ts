import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClickhouse, type ClickHouseClient } from '../../shared/platform/warehouse/clickhouse.js';
import { runMigrations } from '../../shared/platform/warehouse/migrations.js';
import { insertLines } from '../../shared/platform/warehouse/sql/inserts.js';
import { toClickhouseDateTime64 } from '../../shared/platform/warehouse/clickhouse-datetime.js';
import { eventRowLine, eventRowsChunk } from '../../shared/ingestion/event-rows.warehouse.js';
import type { EventPayload } from '../../shared/ingestion/jobs.js';
import { TABLE_COLUMNS } from '../../shared/platform/warehouse/tables.js';

/**
 * The ingest workers write a request's rows as one chunk: rows separated by commas, each property
 * map a JSON object that ClickHouse stores as its text. Whatever a client sent, the stored rows
 * must be exactly those of one line per row with the maps as strings (eventRowLine), which
 * recomputes, reports and exports read. Real embedded engine.
 */
const dataDir = mkdtempSync(join(tmpdir(), 'tds-rows-chunk-'));
let client: ClickHouseClient;

beforeAll(async () => {
  client = createClickhouse({ dataDir });
  await runMigrations(client);
});

afterAll(async () => {
  await client?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const NOW = Date.now() - 3_600_000;
const ingest = toClickhouseDateTime64(NOW);
/** Property texts a client may send: quotes, backslashes, control characters, non-Latin scripts, emoji, JSON-looking text. */
const TRICKY = ['say "hi"', 'back\\slash \\u0041', 'line\nbreak\ttab\u0001', 'Zürich 東京 🚀', '{"not":"an object"}', '', '</script>'];

const events: EventPayload[] = [
  ...TRICKY.map((text, i) => ({
    eventName: `e-${i}`,
    clientEventTs: NOW - i * 60_000,
    insertId: `ins-${i}`,
    eventProperties: { text: { stringValue: text }, n: { longValue: String(i) }, [`k ${text}`]: { booleanValue: true } },
    ...(i % 2 ? { userProperties: { tier: { stringValue: text } }, serverReceivedTs: NOW } : {}),
  })),
  { eventName: 'bare', clientEventTs: NOW, sessionId: 's-1', country: 'DE' },
  { eventName: 'empty maps', clientEventTs: NOW, eventProperties: {}, userProperties: {}, deviceId: 'd "1"' },
];

const COLUMNS = TABLE_COLUMNS.events.filter((c) => c !== 'project_id').join(', ');
const stored = async (projectId: string) =>
  (
    await client.query({
      query: `SELECT ${COLUMNS} FROM events WHERE project_id = {p:String} ORDER BY dedup_key`,
      query_params: { p: projectId },
      format: 'JSONEachRow',
    })
  ).json<Record<string, unknown>>();

describe("a request's rows as one chunk", () => {
  it('are stored exactly as one line per row would be, property maps included', async () => {
    const dedupKey = (_e: EventPayload, i: number) => `j:job-1:${i}`;
    const owner = (projectId: string) => ({ projectId, userId: 'ü "user"' });
    const lines = events.map((e, i) => eventRowLine(owner('p-lines'), e, e.clientEventTs, e.serverReceivedTs, dedupKey(e, i), ingest, 'api'));
    const chunk = eventRowsChunk(owner('p-chunk'), events, dedupKey, ingest, 'api');
    // one string for the request: rows separated by commas, not lines
    expect(chunk.startsWith('["p-chunk"')).toBe(true);
    expect(chunk).not.toContain('\n');
    // beside a chunk of another request, as the batch writer joins them: as the UTF-8 bytes it
    // holds them in while they wait for their insert (the other as text: both forms in one insert)
    const other = eventRowsChunk(owner('p-chunk'), [{ eventName: 'next', clientEventTs: NOW }], () => 'j:job-2:0', ingest, 'api');
    await insertLines(client, 'events', lines);
    await insertLines(client, 'events', [Buffer.from(chunk, 'utf8'), other]);

    const fromLines = await stored('p-lines');
    const fromChunk = await stored('p-chunk');
    expect(fromLines).toHaveLength(events.length);
    expect(fromChunk).toEqual([...fromLines, expect.objectContaining({ event_name: 'next', dedup_key: 'j:job-2:0' })]);
    // and the maps' text is the JSON a client's map serialises to
    expect(fromChunk.map((r) => r.event_properties).slice(0, events.length)).toEqual(events.map((e) => JSON.stringify(e.eventProperties ?? {})));
    expect(fromChunk.map((r) => r.user_properties).slice(0, events.length)).toEqual(events.map((e) => JSON.stringify(e.userProperties ?? {})));
  });

  it('copies inside one insert are kept by the insert and read once with FINAL', async () => {
    // A job's rows can reach one shared insert twice (a stalled job run again beside its first
    // run). Inserts skip the engine's collapse of their own block (optimize_on_insert = 0): the
    // copies collapse at the next merge, and the reads that need each row once use FINAL.
    const row = eventRowLine({ projectId: 'p-copies', userId: 'u' }, events[0], NOW, undefined, 'j:job-3:0', ingest, 'api');
    const decision = JSON.stringify(['p-copies', 'u', 'resp-1', 't-1', 1, 'home', 0, 'RETURNED', ingest, ingest]);
    await insertLines(client, 'events', [row, row]);
    await insertLines(client, 'decisions', [decision, decision]);
    const count = async (table: string, final: string) =>
      Number(
        (
          await (
            await client.query({ query: `SELECT count() AS n FROM ${table} ${final} WHERE project_id = 'p-copies'`, format: 'JSONEachRow' })
          ).json<{ n: string }>()
        )[0].n,
      );
    for (const table of ['events', 'decisions']) {
      expect(await count(table, '')).toBe(2);
      expect(await count(table, 'FINAL')).toBe(1);
    }
  });
});
