import { copyFileSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ClickHouseError } from '@clickhouse/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifyClickhouseError, createClickhouse, rawInsertOf, type ClickHouseClient } from '../../shared/platform/warehouse/clickhouse.js';
import { loadMigrations, MIGRATIONS_DIR, runMigrations, splitStatements, type MigrationReport } from '../../shared/platform/warehouse/migrations.js';
import { insertLines, insertRows } from '../../shared/platform/warehouse/sql/inserts.js';
import { microsToClickhouseDateTime64, toClickhouseDateTime64 } from '../../shared/platform/warehouse/clickhouse-datetime.js';
import { eventDedupKey, eventRowLine, toEventRows, toInteractionRow, type EventInput } from '../../shared/ingestion/event-rows.warehouse.js';
import { toDeadLetterRow } from '../../shared/ingestion/dead-letters.warehouse.js';

// chDB binds one data directory per process; vitest runs each test file in its own fork.
const dataDir = mkdtempSync(join(tmpdir(), 'tds-ch-migrations-'));
const DAY = 86_400_000;
const HOUR = 3_600_000;
// The tables' RETENTION_DAYS TTL drops rows by the real clock: the times stored here are days old.
/** Midnight UTC a week ago; the tests' "now" is 15:00 that day. */
const DAY0 = Math.floor(Date.now() / DAY) * DAY - 7 * DAY;
const NOW = DAY0 + 15 * HOUR;
const iso = (ms: number) => new Date(ms).toISOString();
/** `hours` into the day `days` after DAY0, as RFC 3339. */
const at = (days: number, hours = 0) => iso(DAY0 + days * DAY + hours * HOUR);
/** A DateTime64(3) as ClickHouse shows it (UTC), and a Date. */
const shown = (ms: number) => iso(ms).slice(0, 23).replace('T', ' ');
const dayOf = (ms: number) => iso(ms).slice(0, 10);

let client: ClickHouseClient;
let firstRun: MigrationReport;

beforeAll(async () => {
  client = createClickhouse({ dataDir });
  firstRun = await runMigrations(client);
});

afterAll(async () => {
  await client?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

async function rows<T>(query: string, params: Record<string, unknown> = {}): Promise<T[]> {
  const rs = await client.query({ query, query_params: params, format: 'JSONEachRow' });
  return rs.json<T>();
}

/** UInt64 is a JSON number from chDB and a string from a server: compare as numbers. */
async function count(query: string, params: Record<string, unknown> = {}): Promise<number> {
  const [row] = await rows<{ n: number | string }>(query, params);
  return Number(row.n);
}

function migrationsCopy(extra: Record<string, string>): URL {
  const dir = mkdtempSync(join(dataDir, 'migrations-'));
  for (const f of readdirSync(MIGRATIONS_DIR)) copyFileSync(new URL(f, MIGRATIONS_DIR), join(dir, f));
  for (const [name, sql] of Object.entries(extra)) writeFileSync(join(dir, name), sql);
  return pathToFileURL(`${dir}/`);
}

describe('runMigrations', () => {
  it('applies every migration file on a fresh chDB path, in version order', async () => {
    const files = await loadMigrations();
    expect(files.map((m) => m.version)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(firstRun.applied).toEqual(files.map((m) => ({ version: m.version, name: m.name })));
    const recorded = await rows<{ version: number }>('SELECT version FROM schema_migrations FINAL ORDER BY version');
    expect(recorded.map((r) => Number(r.version))).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it('creates ReplacingMergeTree tables whose sorting key is the de-duplication key', async () => {
    const tables = await rows<{ name: string; engine: string; sorting_key: string; partition_key: string }>(
      `SELECT name, engine, sorting_key, partition_key FROM system.tables
       WHERE database = currentDatabase() AND engine LIKE '%MergeTree' AND name != 'schema_migrations' ORDER BY name`,
    );
    expect(tables).toEqual([
      { name: 'dead_letters', engine: 'ReplacingMergeTree', sorting_key: 'project_id, source, message_id', partition_key: '' },
      {
        name: 'decisions',
        engine: 'ReplacingMergeTree',
        sorting_key: 'project_id, user_id, response_id, treatment_id, surface',
        partition_key: 'toYYYYMM(decide_time)',
      },
      { name: 'events', engine: 'ReplacingMergeTree', sorting_key: 'project_id, user_id, dedup_key', partition_key: 'toYYYYMM(client_event_ts)' },
      { name: 'interactions', engine: 'ReplacingMergeTree', sorting_key: 'project_id, user_id, dedup_key', partition_key: 'toYYYYMM(interaction_time)' },
      { name: 'user_attribute_updates', engine: 'ReplacingMergeTree', sorting_key: 'project_id, user_id, dedup_key', partition_key: 'toYYYYMM(update_ts)' },
    ]);
  });

  it('gives the decision log a table that stores nothing and a view into decisions', async () => {
    const others = await rows<{ name: string; engine: string }>(
      `SELECT name, engine FROM system.tables WHERE database = currentDatabase() AND engine NOT LIKE '%MergeTree' ORDER BY name`,
    );
    expect(others).toEqual([
      { name: 'decisions_input', engine: 'Null' },
      { name: 'decisions_input_mv', engine: 'MaterializedView' },
    ]);
  });

  it('makes merges wait for 10 parts of a size in the tables written on every request (events, decisions)', async () => {
    const tables = await rows<{ name: string; engine_full: string }>(
      `SELECT name, engine_full FROM system.tables WHERE database = currentDatabase() AND engine LIKE '%MergeTree' AND name != 'schema_migrations' ORDER BY name`,
    );
    const base = (t: { engine_full: string }) => /merge_selector_base = (\d+)/.exec(t.engine_full)?.[1];
    expect(Object.fromEntries(tables.map((t) => [t.name, base(t)]))).toEqual({
      dead_letters: undefined,
      decisions: '10',
      events: '10',
      interactions: undefined,
      user_attribute_updates: undefined,
    });
  });

  it('is a no-op when re-run, and applies only a new file later', async () => {
    expect((await runMigrations(client)).applied).toEqual([]);
    const dir = migrationsCopy({
      '0901_probe.sql': '-- a later migration\nCREATE TABLE IF NOT EXISTS probe_a (x UInt8)\nENGINE = MergeTree ORDER BY x;\n',
    });
    expect((await runMigrations(client, undefined, { dir })).applied).toEqual([{ version: 901, name: 'probe' }]);
    expect((await runMigrations(client, undefined, { dir })).applied).toEqual([]);
    expect(await count("SELECT count() AS n FROM system.tables WHERE database = currentDatabase() AND name = 'probe_a'")).toBe(1);
    expect(await count('SELECT count() AS n FROM schema_migrations FINAL')).toBe(10);
  });

  it('records a migration only after all of its statements succeeded', async () => {
    const good = 'CREATE TABLE IF NOT EXISTS probe_b (x UInt8) ENGINE = MergeTree ORDER BY x;\n';
    const broken = migrationsCopy({ '0902_probe_b.sql': `${good}CREATE TABLE probe_c (x NoSuchType) ENGINE = Memory;\n` });
    const err = await runMigrations(client, undefined, { dir: broken }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(classifyClickhouseError(err)).toBe('permanent');
    expect(await count('SELECT count() AS n FROM schema_migrations FINAL WHERE version = 902')).toBe(0);
    // The fixed file re-runs from its first statement, which IF NOT EXISTS makes harmless.
    const fixed = migrationsCopy({ '0902_probe_b.sql': good });
    expect((await runMigrations(client, undefined, { dir: fixed })).applied).toEqual([{ version: 902, name: 'probe_b' }]);
  });

  it('splits statements at a trailing semicolon and drops comment lines', () => {
    const sql = "-- header; not a statement\nCREATE TABLE a (x String DEFAULT ';')\nENGINE = Memory;\n\n  -- between\nSELECT 1;\nSELECT 2\n";
    expect(splitStatements(sql)).toEqual(["CREATE TABLE a (x String DEFAULT ';')\nENGINE = Memory", 'SELECT 1', 'SELECT 2']);
  });
});

function event(name: string, ts: string, extra: Partial<EventInput> = {}): EventInput {
  return { eventName: name, clientEventTimestamp: ts, ...extra };
}

describe('events', () => {
  it('stores a byte-identical retried insert once, even before any merge', async () => {
    const batch = { projectId: 'p-retry', userId: 'u1', events: [event('open', at(-9, 10)), event('open', at(-9, 11))] };
    const eventRows = toEventRows(batch, { jobId: '17' }, { source: 'api', ingestMs: NOW });
    expect(eventRows.map((r) => r.dedup_key)).toEqual(['j:17:0', 'j:17:1']);
    await insertRows(client, 'events', eventRows);
    await insertRows(client, 'events', eventRows);
    expect(await count("SELECT count() AS n FROM events WHERE project_id = 'p-retry'")).toBe(2);
  });

  it("hands the embedded engine the rows as bytes (its raw insert), exactly as written, and a bad row's error stays permanent", async () => {
    expect(rawInsertOf(client)).toBeDefined();
    const server = createClickhouse({ url: 'http://127.0.0.1:1', dataDir });
    expect(rawInsertOf(server)).toBeUndefined(); // a server: the statement
    await server.close();
    const batch = {
      projectId: 'p-raw',
      userId: 'ü-1',
      events: [event('öffnen', at(-3, 10), { insertId: 'r-1', eventProperties: { city: { stringValue: 'Zürich 東京 🚀' } } })],
    };
    await insertLines(client, 'events', [
      eventRowLine(batch, batch.events[0], batch.events[0].clientEventTimestamp, undefined, 'i:r-1', toClickhouseDateTime64(NOW), 'api'),
    ]);
    const rows = await (
      await client.query({ query: "SELECT user_id, event_name, event_properties FROM events WHERE project_id = 'p-raw'", format: 'JSONEachRow' })
    ).json();
    expect(rows).toEqual([{ user_id: 'ü-1', event_name: 'öffnen', event_properties: JSON.stringify({ city: { stringValue: 'Zürich 東京 🚀' } }) }]);
    const bad = await insertLines(client, 'events', [
      '["p-raw","u","e","k","","not a time",null,"2026-01-01 00:00:00.000","{}","{}","","","","","","","","","api"]',
    ]).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(Error);
    expect(classifyClickhouseError(bad)).toBe('permanent');
  });

  it('counts the same event (same dedup key) once with FINAL; the later ingest wins', async () => {
    await client.command({ query: 'SYSTEM STOP MERGES events' });
    try {
      const first = {
        projectId: 'p-dup',
        userId: 'u1',
        events: [event('buy', at(-5, 10), { insertId: 'i-1', eventProperties: { plan: { stringValue: 'basic' } } }), event('buy', at(-5, 11))],
      };
      const again = {
        projectId: 'p-dup',
        userId: 'u1',
        events: [event('buy', at(-5, 10), { insertId: 'i-1', eventProperties: { plan: { stringValue: 'pro' } } })],
      };
      await insertRows(client, 'events', toEventRows(first, { jobId: '1' }, { source: 'api', ingestMs: NOW }));
      await insertRows(client, 'events', toEventRows(again, { messageId: 'm-9' }, { source: 'pubsub', ingestMs: NOW + 1000 }));
      expect(await count("SELECT count() AS n FROM events WHERE project_id = 'p-dup'")).toBe(3);
      expect(await count("SELECT count() AS n FROM events FINAL WHERE project_id = 'p-dup'")).toBe(2);
      expect(
        await count(`SELECT count() AS n FROM events FINAL WHERE project_id = 'p-dup'
        AND JSONExtractString(event_properties, 'plan', 'stringValue') = 'pro'`),
      ).toBe(1);
      // The other exact form, for queries that cannot use FINAL: one group per dedup key.
      const [exact] = await rows<{ n: number; from_pubsub: number }>(
        `SELECT count() AS n, countIf(src = 'pubsub') AS from_pubsub FROM
           (SELECT dedup_key, argMax(source, ingest_ts) AS src FROM events
            WHERE project_id = 'p-dup' GROUP BY dedup_key)`,
      );
      expect([Number(exact.n), Number(exact.from_pubsub)]).toEqual([2, 1]);
    } finally {
      await client.command({ query: 'SYSTEM START MERGES events' });
    }
    await client.command({ query: 'OPTIMIZE TABLE events FINAL' });
    expect(await count("SELECT count() AS n FROM events WHERE project_id = 'p-dup'")).toBe(2);
  });

  it('de-duplicates an insertId per project and user only; events without insertId never', async () => {
    const same = (projectId: string, userId: string) => ({ projectId, userId, events: [event('open', at(-8, 9), { insertId: 'shared' })] });
    for (const [i, b] of [same('p-scope', 'a'), same('p-scope', 'b'), same('p-scope-2', 'a')].entries()) {
      await insertRows(client, 'events', toEventRows(b, { jobId: `s${i}` }, { source: 'api', ingestMs: NOW }));
    }
    const plain = { projectId: 'p-scope', userId: 'c', events: [event('open', at(-8, 9))] };
    await insertRows(client, 'events', toEventRows(plain, { jobId: 'x1' }, { source: 'api', ingestMs: NOW }));
    await insertRows(client, 'events', toEventRows(plain, { jobId: 'x2' }, { source: 'api', ingestMs: NOW }));
    expect(await count("SELECT count() AS n FROM events FINAL WHERE project_id IN ('p-scope', 'p-scope-2')")).toBe(5);
  });

  it('counts one user per UTC day over a LAST_3D window, with first and latest timestamps', async () => {
    const events = [
      event('view', iso(DAY0 - 2 * DAY - 1)), // the day before the window
      event('view', at(-2)),
      event('view', `${at(-1, 1).slice(0, 19)}+02:00`), // day −2, 23:00 UTC
      event('view', at(-1, 12), { insertId: 'v-9' }),
      event('view', iso(NOW - 60_000)),
      event('click', at(0, 10)),
    ];
    await insertRows(client, 'events', toEventRows({ projectId: 'p-win', userId: 'u1', events }, { jobId: 'w1' }, { source: 'api', ingestMs: NOW }));
    const retried = [event('view', at(-1, 12), { insertId: 'v-9' })];
    await insertRows(
      client,
      'events',
      toEventRows({ projectId: 'p-win', userId: 'u1', events: retried }, { jobId: 'w2' }, { source: 'api', ingestMs: NOW + 5 }),
    );
    await insertRows(
      client,
      'events',
      toEventRows({ projectId: 'p-win', userId: 'u2', events: [event('view', at(0, 9))] }, { jobId: 'w3' }, { source: 'api', ingestMs: NOW }),
    );

    const n = 3;
    const windowStart = Math.floor(NOW / DAY) * DAY - (n - 1) * DAY;
    const params = { p: 'p-win', u: 'u1', e: 'view', start: toClickhouseDateTime64(windowStart) };
    const daily = await rows<{ day: string; n: number }>(
      `SELECT toDate(client_event_ts) AS day, count() AS n FROM events FINAL
       WHERE project_id = {p:String} AND user_id = {u:String} AND event_name = {e:String}
         AND client_event_ts >= toDateTime64({start:String}, 3, 'UTC')
       GROUP BY day ORDER BY day
       SETTINGS do_not_merge_across_partitions_select_final = 1`,
      params,
    );
    expect(daily.map((d) => ({ day: d.day, n: Number(d.n) }))).toEqual([
      { day: dayOf(DAY0 - 2 * DAY), n: 2 },
      { day: dayOf(DAY0 - DAY), n: 1 },
      { day: dayOf(DAY0), n: 1 },
    ]);
    const [span] = await rows<{ first: string; latest: string }>(
      `SELECT min(client_event_ts) AS first, max(client_event_ts) AS latest FROM events FINAL
       WHERE project_id = {p:String} AND user_id = {u:String} AND event_name = {e:String}`,
      params,
    );
    expect(span).toEqual({ first: shown(DAY0 - 2 * DAY - 1), latest: shown(NOW - 60_000) });
  });
});

describe('interactions', () => {
  it('stores a retried job once and counts by type, treatment, surface and distinct tracking id', async () => {
    const base = { projectId: 'p-int', userId: 'u1', treatmentId: '1', treatmentTrackingId: '1_a', surface: 'home', interactionType: 'VIEWED' };
    const noon = BigInt(DAY0 + 12 * HOUR) * 1000n; // epoch micros
    const calls = [
      { job: 'j1', input: { ...base, interactionTimeMicros: String(noon + 123_456n) } },
      { job: 'j2', input: { ...base, interactionTimeMicros: Number(noon + 60_000_000n) } }, // recurring view
      { job: 'j3', input: { ...base, interactionType: 'CLICKED', interactionTimeMicros: String(noon + 70_000_000n), actionName: 'cta' } },
      { job: 'j4', input: { ...base, treatmentId: '2', treatmentTrackingId: '2_b', surface: 'inbox', interactionTimeMicros: String(noon + 80_000_000n) } },
    ];
    for (const c of calls) await insertRows(client, 'interactions', [toInteractionRow(c.input, `j:${c.job}`, NOW)]);
    await insertRows(client, 'interactions', [toInteractionRow(calls[0].input, 'j:j1', NOW + 1000)]);

    const [agg] = await rows<Record<string, number>>(
      `SELECT count() AS total, countIf(interaction_type = 'VIEWED') AS viewed,
              countIf(interaction_type = 'VIEWED' AND surface = 'home') AS viewed_home,
              countIf(interaction_type = 'VIEWED' AND treatment_id = '2') AS viewed_t2,
              uniqExactIf(treatment_tracking_id, interaction_type = 'VIEWED') AS viewed_distinct
       FROM interactions FINAL WHERE project_id = 'p-int' AND user_id = 'u1'`,
    );
    expect(Object.fromEntries(Object.entries(agg).map(([k, v]) => [k, Number(v)]))).toEqual({
      total: 4,
      viewed: 3,
      viewed_home: 2,
      viewed_t2: 1,
      viewed_distinct: 2,
    });
    const [first] = await rows<{ t: string }>("SELECT min(interaction_time) AS t FROM interactions WHERE project_id = 'p-int'");
    expect(first.t).toBe(`${shown(DAY0 + 12 * HOUR).slice(0, 19)}.123456`);
  });
});

describe('dead letters', () => {
  it('stores a redelivered dead letter once, keeping the latest receive time', async () => {
    const letter = {
      projectId: 'p-dl',
      messageId: 'm-1',
      source: 'pubsub' as const,
      reason: 'undecodable payload',
      dataType: 'EventData',
      payload: Buffer.from([0xff, 0x00, 0x01]),
    };
    await insertRows(client, 'dead_letters', [toDeadLetterRow({ ...letter, receiveMs: NOW })]);
    await insertRows(client, 'dead_letters', [toDeadLetterRow({ ...letter, receiveMs: NOW + 60_000 })]);
    await insertRows(client, 'dead_letters', [toDeadLetterRow({ ...letter, messageId: 'm-2', receiveMs: NOW })]);
    const stored = await rows<{ message_id: string; receive_time: string; payload_base64: string }>(
      "SELECT message_id, receive_time, payload_base64 FROM dead_letters FINAL WHERE project_id = 'p-dl' ORDER BY message_id",
    );
    expect(stored).toEqual([
      { message_id: 'm-1', receive_time: shown(NOW + 60_000), payload_base64: '/wAB' },
      { message_id: 'm-2', receive_time: shown(NOW), payload_base64: '/wAB' },
    ]);
  });
});

describe('a named database with chDB', () => {
  it('is created and used by a second client on the same path', async () => {
    const other = createClickhouse({ dataDir, database: 'tds_other' });
    try {
      expect((await runMigrations(other)).applied.map((m) => m.version)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
      const rs = await other.query({ query: 'SELECT currentDatabase() AS db, count() AS n FROM events', format: 'JSONEachRow' });
      expect((await rs.json<{ db: string; n: number }>()).map((r) => ({ db: r.db, n: Number(r.n) }))).toEqual([{ db: 'tds_other', n: 0 }]);
    } finally {
      await other.close();
    }
    expect(await count("SELECT count() AS n FROM events WHERE project_id = 'p-retry'")).toBe(2);
  });
});

describe('row values and error classes', () => {
  it('formats DateTime64 values in UTC and refuses ambiguous or out-of-range input', () => {
    expect(toClickhouseDateTime64(Date.UTC(2024, 0, 2, 3, 4, 5, 6))).toBe('2024-01-02 03:04:05.006');
    expect(toClickhouseDateTime64('2024-01-02T05:04:05.006789+02:00')).toBe('2024-01-02 03:04:05.006');
    expect(microsToClickhouseDateTime64(-1n)).toBe('1969-12-31 23:59:59.999999');
    expect(() => toClickhouseDateTime64('2024-01-02T03:04:05')).toThrow(RangeError);
    expect(() => toClickhouseDateTime64('1899-12-31T23:59:59Z')).toThrow(RangeError);
    expect(() => microsToClickhouseDateTime64('12abc')).toThrow(RangeError);
  });

  it('derives dedup keys that a client insertId can never equal', () => {
    expect(eventDedupKey('j:1:0', { jobId: '1' }, 0)).toBe('i:j:1:0');
    expect(eventDedupKey(undefined, { jobId: '1' }, 0)).toBe('j:1:0');
    expect(eventDedupKey('', { messageId: 'm7' }, 2)).toBe('m:m7:2');
  });

  it('classifies statement errors as permanent and transient ones as retriable', async () => {
    const syntax = await client.query({ query: 'SELEC 1' }).catch((e: unknown) => e);
    const unknownTable = await client.query({ query: 'SELECT * FROM no_such_table' }).catch((e: unknown) => e);
    expect(classifyClickhouseError(syntax)).toBe('permanent');
    expect(classifyClickhouseError(unknownTable)).toBe('permanent');
    expect(classifyClickhouseError(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8123'), { code: 'ECONNREFUSED' }))).toBe('retriable');
    expect(classifyClickhouseError(new ClickHouseError({ message: 'Too many parts (300)', code: '252', type: 'TOO_MANY_PARTS' }))).toBe('retriable');
    expect(classifyClickhouseError(new ClickHouseError({ message: 'Memory limit exceeded', code: '241', type: 'MEMORY_LIMIT_EXCEEDED' }))).toBe('retriable');
    expect(classifyClickhouseError(new Error('outer', { cause: new ClickHouseError({ message: 'x', code: '53', type: 'TYPE_MISMATCH' }) }))).toBe('permanent');
    expect(classifyClickhouseError(new Error('Timeout error.'))).toBe('retriable');
  });
});
