import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createClient, type ClickHouseClient, type ClickHouseClientConfigOptions } from '@clickhouse/client';
import { createRequire } from 'node:module';
import type { ChdbConnection } from 'chdb/connection';
import type { Logger } from 'pino';

export type { ClickHouseClient };

export interface ClickhouseOptions {
  /** ClickHouse server (http/https). Unset: the embedded engine (chDB) under `dataDir`. */
  url?: string;
  username?: string;
  password?: string;
  /**
   * Server: the database every request uses (provisioned by the operator, see
   * infra/clickhouse/cluster.md). chDB: created if missing and selected for the session.
   * @defaultValue the server's default database / chDB's `default`
   */
  database?: string;
  /** chDB keeps its files in `${dataDir}/clickhouse`. */
  dataDir: string;
  logger?: Logger;
}

/**
 * One factory for both back ends, so every store and worker is written once against
 * `@clickhouse/client`. chDB binds ONE data directory per process: a second client on another
 * path in the same process throws, a second one on the same path shares the engine.
 */
export function createClickhouse(opts: ClickhouseOptions): ClickHouseClient {
  if (opts.url !== undefined) {
    opts.logger?.info({ url: redactUrl(opts.url), database: opts.database ?? 'default' }, 'clickhouse: server');
    return createClient({
      url: opts.url,
      username: opts.username,
      password: opts.password,
      database: opts.database,
      application: 'tds',
    });
  }
  const path = resolve(join(opts.dataDir, 'clickhouse'));
  mkdirSync(path, { recursive: true });
  opts.logger?.info({ path, database: opts.database ?? 'default' }, 'clickhouse: embedded chDB');
  // Loaded on first use only: chDB binds one engine per process, so a thread that never opens it
  // (the API thread of the all-in-one service) must not load it either.
  const { createChdbConnection } = createRequire(import.meta.url)('chdb/connection') as typeof import('chdb/connection');
  const chdb = createChdbConnection({ path });
  const { connection, ready } = opts.database === undefined ? { connection: chdb, ready: Promise.resolve() } : withDatabase(chdb, opts.database);
  // chdb implements the whole Connection of @clickhouse/client-common 1.23.0; @clickhouse/client
  // 1.23.1 bundles its own copy of those types, which differs only in the settings' typings.
  const client = createClient({ connection: connection as unknown as ClientConnection });
  const raw = chdb.chdb;
  RAW_INSERTS.set(client, async (table, columns, settings, body) => {
    await ready;
    await raw.rawInsert({ table, columns, settings, values: body, format: 'JSONCompactEachRow' });
  });
  return client;
}

/** Inserts a JSONCompactEachRow body given as bytes (the embedded engine's own insert). */
export type RawInsert = (table: string, columns: readonly string[], settings: Record<string, string | number>, body: Buffer) => Promise<void>;

const RAW_INSERTS = new WeakMap<ClickHouseClient, RawInsert>();

/**
 * The embedded engine's insert of a client made by createClickhouse over chDB, undefined for a
 * server. `@clickhouse/client`'s exec hands chDB the rows as one string, which chDB's connection
 * copies three times on the main thread (to a string, trimmed, then into the statement, which the
 * engine copies again as UTF-8): about 20 ms for 10,000 event rows. Its raw insert takes the
 * bytes as they are and builds the statement on the engine's thread.
 */
export function rawInsertOf(client: ClickHouseClient): RawInsert | undefined {
  return RAW_INSERTS.get(client);
}

type ClientConnection = NonNullable<ClickHouseClientConfigOptions['connection']>;

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/**
 * chDB ignores the client's `database` option (it is an HTTP parameter), and `USE` is state of
 * the chDB session, so the session is switched once before any other call goes through. The
 * proxy keeps createClickhouse synchronous: every call first awaits that one switch.
 */
function withDatabase(conn: ChdbConnection, database: string): { connection: ChdbConnection; ready: Promise<unknown> } {
  if (!IDENTIFIER.test(database)) throw new Error(`invalid ClickHouse database name "${database}"`);
  const ready = conn.command({ query: `CREATE DATABASE IF NOT EXISTS ${database}` }).then(() => conn.command({ query: `USE ${database}` }));
  ready.catch(() => undefined); // reported by the first call that awaits it
  const connection = new Proxy(conn, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== 'function') return value;
      if (prop === 'close' || prop === 'mapError') return value.bind(target);
      return async (...args: unknown[]) => {
        await ready;
        return value.apply(target, args);
      };
    },
  });
  return { connection, ready };
}

function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    return u.toString();
  } catch {
    return '[unparsable url]';
  }
}

export type ClickhouseErrorClass = 'retriable' | 'permanent';

/**
 * ClickHouse errors that no retry of the same statement with the same data can fix: the statement
 * or the rows are wrong. Everything else is retriable, on purpose: a job whose rows cannot be
 * stored yet must be retried (nothing that returned 200 may be lost), and a wrongly
 * "retriable" error only costs bounded retries while a wrongly "permanent" one loses data.
 */
const PERMANENT_ERRORS: Readonly<Record<string, number>> = {
  SYNTAX_ERROR: 62,
  UNKNOWN_TABLE: 60,
  UNKNOWN_DATABASE: 81,
  UNKNOWN_IDENTIFIER: 47,
  UNKNOWN_FUNCTION: 46,
  UNKNOWN_SETTING: 115,
  UNKNOWN_TYPE: 50,
  UNKNOWN_FORMAT: 73,
  NO_SUCH_COLUMN_IN_TABLE: 16,
  THERE_IS_NO_COLUMN: 8,
  TYPE_MISMATCH: 53,
  ILLEGAL_TYPE_OF_ARGUMENT: 43,
  ILLEGAL_COLUMN: 44,
  NUMBER_OF_ARGUMENTS_DOESNT_MATCH: 42,
  INCORRECT_DATA: 117,
  INCORRECT_QUERY: 80,
  INCORRECT_NUMBER_OF_COLUMNS: 7,
  CANNOT_PARSE_TEXT: 6,
  CANNOT_PARSE_ESCAPE_SEQUENCE: 25,
  CANNOT_PARSE_QUOTED_STRING: 26,
  CANNOT_PARSE_INPUT_ASSERTION_FAILED: 27,
  CANNOT_PARSE_DATE: 38,
  CANNOT_PARSE_DATETIME: 41,
  CANNOT_PARSE_NUMBER: 72,
  CANNOT_PARSE_BOOL: 467,
  CANNOT_INSERT_NULL_IN_ORDINARY_COLUMN: 349,
  VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE: 321,
  DECIMAL_OVERFLOW: 407,
  ARGUMENT_OUT_OF_BOUND: 69,
  BAD_ARGUMENTS: 36,
  TOO_LARGE_STRING_SIZE: 131,
  ILLEGAL_AGGREGATION: 184,
};
const PERMANENT_TYPES = new Set(Object.keys(PERMANENT_ERRORS));
/** For errors whose `type` was not parsed out of the message. */
const PERMANENT_CODES = new Set(Object.values(PERMANENT_ERRORS).map(String));

/**
 * max_partitions_per_insert_block: the same rows would be refused on every retry. It shares the
 * code TOO_MANY_PARTS (252) with the insert throttle (too many parts awaiting merges), which is
 * transient, so it is told apart by its message.
 */
const TOO_MANY_PARTITIONS = /Too many partitions for single INSERT block/i;

/**
 * Decides whether a failed ClickHouse call may be retried. Duck-typed on purpose: chDB's errors
 * are `ClickHouseError`s of `@clickhouse/client-common`, a different class from the one
 * `@clickhouse/client` exports, so `instanceof` would miss them. Network errors (connection
 * refused/reset, timeouts), TOO_MANY_PARTS (but for too many partitions in one insert), MEMORY_LIMIT_EXCEEDED, Keeper and replica errors all
 * fall to 'retriable'. A RangeError is ours: a value that cannot be converted for a column.
 */
export function classifyClickhouseError(err: unknown): ClickhouseErrorClass {
  for (let e: unknown = err, depth = 0; e !== undefined && e !== null && depth < 5; depth++) {
    if (e instanceof RangeError) return 'permanent';
    if (e instanceof Error && TOO_MANY_PARTITIONS.test(e.message)) return 'permanent';
    const { type, code, clickhouseCode } = e as { type?: unknown; code?: unknown; clickhouseCode?: unknown };
    if (typeof type === 'string' && PERMANENT_TYPES.has(type)) return 'permanent';
    if (typeof code === 'string' && PERMANENT_CODES.has(code) && typeof type !== 'string') return 'permanent';
    // chdb's own errors (raw `.chdb` calls) carry the numeric ClickHouse code here.
    if (typeof clickhouseCode === 'number' && PERMANENT_CODES.has(String(clickhouseCode))) return 'permanent';
    e = (e as { cause?: unknown }).cause;
  }
  return 'retriable';
}
