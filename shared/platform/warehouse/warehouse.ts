import type { Logger } from 'pino';
import type { ClickhouseTable } from './tables.js';

export interface InsertOptions {
  /**
   * Send a deduplication token (a hash of the exact rows), so a byte-identical retry of an insert
   * that had in fact succeeded writes no second part. Off for batches shared by many jobs, which
   * are never re-sent identically. @defaultValue true
   */
  dedupToken?: boolean;
}

/**
 * The service's analytical store, the engine only: the tables of infra/clickhouse/migrations,
 * rows in and out, statements, the schema and the retention. What a feature writes and reads
 * (its row formats and its SQL) lives with the feature, in `shared/<room>/*.warehouse.ts`,
 * written against this interface.
 */
export interface Warehouse {
  /** Inserts row objects of `table` (see insertLines for the settings). */
  insertRows(table: ClickhouseTable, rows: readonly object[], opts?: InsertOptions): Promise<void>;
  /**
   * Inserts JSONCompactEachRow lines in TABLE_COLUMNS order (the ingest hot path builds no row
   * objects). An element may hold several lines joined by newlines (the batch writer's chunks),
   * as text or as its UTF-8 bytes.
   */
  insertLines(table: ClickhouseTable, lines: readonly (string | Buffer)[], opts?: InsertOptions): Promise<void>;
  /** Rows of a parameterised SELECT (`{name:Type}` placeholders). */
  query<Row>(sql: string, params?: Record<string, unknown>): Promise<Row[]>;
  /** A statement that returns no rows (ALTER, INSERT … SELECT), parameterised as `query`. */
  command(sql: string, params?: Record<string, unknown>): Promise<void>;

  /** Sets RETENTION_DAYS as the per-user tables' TTL where it differs; returns the tables changed. */
  applyRetentionTtl(days: number, log?: Logger): Promise<string[]>;
  /** The days of a table's TTL as its definition states it, or undefined. */
  ttlDays(table: string): Promise<number | undefined>;

  /** Applies the pending migrations (start-up). */
  migrate(log?: Logger): Promise<void>;
  /** Resolves when ClickHouse answers (readiness). */
  ping(): Promise<void>;
  close(): Promise<void>;
}
