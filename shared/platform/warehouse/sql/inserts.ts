import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { drainStream, type ClickHouseClient } from '@clickhouse/client';
import { rowLine, TABLE_COLUMNS, type ClickhouseTable } from '../tables.js';
import { rawInsertOf } from '../clickhouse.js';
import type { InsertOptions } from '../warehouse.js';

/**
 * Inserts rows. Exactly-once storage rests on the tables: copies of one key
 * collapse to the one with the highest version (ReplacingMergeTree, read with FINAL). The
 * insert_deduplication_token, a hash of the exact rows, only avoids writing a duplicate part when
 * a retry re-sends a byte-identical insert that had in fact succeeded (single node:
 * non_replicated_deduplication_window; cluster: Keeper). A token of the content, not of the job:
 * a caller-chosen token reused for other rows would silently drop them, and a token of the keys
 * alone would keep an older version of a row instead of the newer one. A batch shared by many
 * jobs is never re-sent identically, so the batch writer skips the token (`dedupToken: false`).
 * The settings go in the statement's SETTINGS clause, never in `clickhouse_settings`: chDB turns
 * those into session-wide `SET`s that leak into every later query of the process.
 * The partitions-per-insert guard stays on, explicitly (a server profile may differ): every table
 * is partitioned by month of a client-given time, and the API bounds those times (RETENTION_DAYS
 * back, 24 h ahead: about 15 months), so a batch of any number of jobs spans few partitions. A
 * batch over the limit is refused whole, and the batch writer then retries it caller by caller
 * (classifyClickhouseError: permanent), so one bad job cannot hold back the others. A JSON object
 * given for a String column is read as its text (`input_format_json_read_objects_as_strings`, on by
 * default since ClickHouse 23 and set here for older servers): eventRowsChunk relies on it.
 * `optimize_on_insert` is off: an insert does not collapse the copies inside its own block (the
 * Replacing merge over the sorted block copies every column once more, about a quarter of an
 * insert's CPU in the engine). Nothing depends on it: copies from different inserts exist anyway
 * until a merge, so every read that needs each row once uses FINAL, and the others (the reports)
 * cannot be changed by exact copies.
 * `input_format_parallel_parsing` is off: the parallel parser cuts a body into segments of at least
 * `min_chunk_bytes_for_parallel_parsing` (10 MiB) and parses them on threads of its own, and an
 * insert here is a few MB (the batch writer's 100 ms of events at 90,000 a second is about 2.5 MB),
 * so it only handed the whole body to another thread and back (with the batch writer holding its
 * chunks as bytes, three alternating pairs of `npm run bench -- ingest`: 0.5-1.3 % more events a
 * second in each, the CPU per event within the runs' spread; docs/benchmarks.md, stop 48).
 */
export async function insertRows(client: ClickHouseClient, table: ClickhouseTable, rows: readonly object[], opts: InsertOptions = {}): Promise<void> {
  if (rows.length === 0) return;
  await insertLines(
    client,
    table,
    rows.map((r) => rowLine(table, r)),
    opts,
  );
}

const NEWLINE = Buffer.from('\n');

/** The token of an insert's exact content (the same for its bytes and its text). */
const dedupToken = (table: ClickhouseTable, body: string | Buffer): string => createHash('sha256').update(table).update('\n').update(body).digest('hex');

/** Monthly partitions one insert may touch (ClickHouse's default): an insert over it is refused. */
export const MAX_PARTITIONS_PER_INSERT = 100;

/** Every insert's settings (see insertRows), the same for the embedded engine and a server. */
export const INSERT_SETTINGS: Readonly<Record<string, number>> = {
  max_partitions_per_insert_block: MAX_PARTITIONS_PER_INSERT,
  throw_on_max_partitions_per_insert_block: 1,
  input_format_json_read_objects_as_strings: 1,
  optimize_on_insert: 0,
  input_format_parallel_parsing: 0,
};

/**
 * Inserts JSONCompactEachRow lines in TABLE_COLUMNS order (see insertRows for the settings); an
 * element given as bytes (the batch writer's chunks) is copied as it is.
 */
export async function insertLines(
  client: ClickHouseClient,
  table: ClickhouseTable,
  lines: readonly (string | Buffer)[],
  opts: InsertOptions = {},
): Promise<void> {
  if (lines.length === 0) return;
  // the lines as bytes, each encoded on its own and copied once into the body
  const parts: Buffer[] = [];
  for (const line of lines) parts.push(typeof line === 'string' ? Buffer.from(line, 'utf8') : line, NEWLINE);
  const bytes = Buffer.concat(parts);
  const raw = rawInsertOf(client);
  if (raw) {
    // the embedded engine
    const settings: Record<string, string | number> = { ...INSERT_SETTINGS };
    if (opts.dedupToken !== false) settings.insert_deduplication_token = dedupToken(table, bytes);
    await raw(table, TABLE_COLUMNS[table], settings, bytes);
    return;
  }
  const settings = Object.entries(INSERT_SETTINGS).map(([name, value]) => `${name} = ${value}`);
  if (opts.dedupToken !== false) settings.unshift(`insert_deduplication_token = '${dedupToken(table, bytes)}'`);
  const result = await client.exec({
    query: `INSERT INTO ${table} (${TABLE_COLUMNS[table].join(', ')}) SETTINGS ${settings.join(', ')} FORMAT JSONCompactEachRow`,
    values: Readable.from([bytes]),
  });
  await drainStream(result.stream);
}
