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
import type { DecisionRecord } from '../../shared/impact/index.js';
import type { DecisionRow } from '../../shared/impact/decisions.warehouse.js';
import { decisionRowsChunk } from '../../workers/impact/decisions.processor.js';

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

const AT = Date.UTC(2026, 10, 28, 9, 30, 0, 123);
const decisionIngest = toClickhouseDateTime64(AT + 1000);
const rec = (projectId: string, userId: string, responseId: string, treatments: string[]): DecisionRecord => ({
  projectId,
  userId,
  responseId,
  decideTimeMs: AT,
  decisions: treatments.map((t, i) => ({ treatmentId: t, versionNumber: i + 1, surface: `s-${i}`, rank: i, outcome: i === 0 ? 'RETURNED' : 'HOLDOUT' })),
});

type Row = Omit<DecisionRow, 'project_id' | 'ingest_ts'>;

const storedDecisions = async (projectId: string, final = 'FINAL'): Promise<Row[]> =>
  (
    await client.query({
      query: `SELECT user_id, response_id, treatment_id, version_number, surface, rank, outcome, toString(decide_time) AS decide_time
              FROM decisions ${final} WHERE project_id = {p:String} ORDER BY response_id, rank`,
      query_params: { p: projectId },
      format: 'JSONEachRow',
    })
  ).json<Row>();

/**
 * The decision log writes one `decisions_input` row per response (its decisions as arrays); the
 * table stores nothing and its view stores each decision as a row of `decisions`, the table D36
 * describes and every reader reads.
 */
describe('decisions_input', () => {
  it('stores each decision of a response as one row of decisions, and a response without decisions as none', async () => {
    const records = [rec('p-in', 'ü "u" \\ 東京', 'r-1', ['t-a', 't-b', 't-c']), rec('p-in', 'u-2', 'r-2', []), rec('p-in', 'u-3', 'r-3', ['t-d'])];
    const { chunk, rows } = decisionRowsChunk(records, decisionIngest);
    expect(rows).toBe(4);
    await insertLines(client, 'decisions_input', [chunk], { dedupToken: false });

    const at = '2026-11-28 09:30:00.123';
    expect(await storedDecisions('p-in')).toEqual([
      { user_id: 'ü "u" \\ 東京', response_id: 'r-1', treatment_id: 't-a', version_number: 1, surface: 's-0', rank: 0, outcome: 'RETURNED', decide_time: at },
      { user_id: 'ü "u" \\ 東京', response_id: 'r-1', treatment_id: 't-b', version_number: 2, surface: 's-1', rank: 1, outcome: 'HOLDOUT', decide_time: at },
      { user_id: 'ü "u" \\ 東京', response_id: 'r-1', treatment_id: 't-c', version_number: 3, surface: 's-2', rank: 2, outcome: 'HOLDOUT', decide_time: at },
      { user_id: 'u-3', response_id: 'r-3', treatment_id: 't-d', version_number: 1, surface: 's-0', rank: 0, outcome: 'RETURNED', decide_time: at },
    ]);
    const inputRows = await (await client.query({ query: 'SELECT count() AS n FROM decisions_input', format: 'JSONEachRow' })).json<{ n: string }>();
    expect(Number(inputRows[0].n)).toBe(0);
  });

  it('a retried insert (the same chunk again, in another insert or in the same one) is read once with FINAL', async () => {
    const { chunk } = decisionRowsChunk([rec('p-retry', 'u', 'r-1', ['t-a', 't-b'])], decisionIngest);
    await insertLines(client, 'decisions_input', [chunk], { dedupToken: false });
    await insertLines(client, 'decisions_input', [chunk, chunk], { dedupToken: false });
    expect(await storedDecisions('p-retry', '')).toHaveLength(6);
    expect((await storedDecisions('p-retry')).map((r) => r.treatment_id)).toEqual(['t-a', 't-b']);
  });
});
