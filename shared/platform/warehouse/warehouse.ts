import type { Logger } from 'pino';
import type { DecisionOutcome, GroupCounts } from '../../impact/index.js';
import type { ClickhouseTable, TableRows } from './event-rows.js';
import type { PropertyValue } from '../../ingestion/index.js';

/** A dead letter as ListDeadLetters answers it. */
export interface DeadLetter {
  messageId: string;
  source: string;
  reason: string;
  receiveTime: string;
  dataType: string;
  /** At most 64 KiB of the payload. */
  payloadBase64: string;
  /** The whole payload's size and SHA-256 (hex); 0 and '' for a dead letter stored before they were recorded. */
  payloadBytes: number;
  payloadSha256: string;
  /** Whether payloadBase64 holds only the beginning of the payload. */
  payloadTruncated: boolean;
}

/** One row of the decision log as ListDecisions answers it (rank as an int64 string). */
export interface DecisionOut {
  projectId: string;
  userId: string;
  responseId: string;
  treatmentId: string;
  versionNumber: number;
  surface: string;
  rank: string;
  outcome: DecisionOutcome;
  decideTime: string;
}

/** What GetTreatmentReport asks; times in epoch ms, the period is [startMs, endMs). */
export interface ReportQuery {
  projectId: string;
  treatmentId: string;
  startMs: number;
  endMs: number;
  attributionWindowDays: number;
  /** the target action's event name; conversions are 0 without one */
  conversionEventName?: string;
}

/** Who a decision was made for and on which surfaces a response returned (or withheld) a treatment. */
export interface DecisionFound {
  userId: string;
  /** Surfaces of the treatment in that response, the ones it was RETURNED on first. */
  surfaces: string[];
}

/** The decision of a tracking id (`<treatmentId>_<responseId>`), if the decision log holds it. */
export type DecisionLookup = (projectId: string, responseId: string, treatmentId: string) => Promise<DecisionFound | undefined>;

/** The rows that count for one data field: the same matching rules as the incremental path. */
export type AggregationSource =
  | { table: 'events'; eventName: string; properties: Readonly<Record<string, PropertyValue>> }
  | { table: 'interactions'; interactionTypes: readonly string[]; treatmentId?: string; surface?: string };

/** dc: counts per day; ft / lt: first / latest timestamp (all-time). */
export type AggregationKind = 'dc' | 'ft' | 'lt';

export interface AggregationRead {
  projectId: string;
  source: AggregationSource;
  kind: AggregationKind;
  /** Users whose deletion is pending → its time: their rows ingested up to then are left out. */
  deletedUsers: ReadonlyMap<string, number>;
  /** The first instant day counts read (the window plus grace days). */
  rangeStartMs: number;
}

export interface AggregationPageQuery extends AggregationRead {
  /** Users after this id … */
  after: string;
  /** … up to and including this one. */
  upper: string;
  /** Each tracking id counted once, on its first-seen day (distinct interaction counts). */
  distinct: boolean;
  /** The window's first day (yyyymmdd): day counts before it are not returned. */
  windowStartDay: number;
}

/** One user's state: `ms` (ft / lt), `dayPairs` [day, count, …] (dc), or `marks` [(day, trackingId)] (distinct dc). */
export interface AggregationPageRow {
  user_id: string;
  ms?: string;
  dayPairs?: string[];
  marks?: [number | string, string][];
}

export interface InsertOptions {
  /**
   * Send a deduplication token (a hash of the exact rows), so a byte-identical retry of an insert
   * that had in fact succeeded writes no second part. Off for batches shared by many jobs, which
   * are never re-sent identically. @defaultValue true
   */
  dedupToken?: boolean;
}

/**
 * The reads the API asks for. Answered by the process that holds ClickHouse (the Warehouse
 * itself) or, from an API-only process, over the rpc queue (warehouse-rpc.ts).
 */
export interface WarehouseReads {
  listDeadLetters(projectId: string, limit: number): Promise<DeadLetter[]>;
  /** A user's decisions, newest first. */
  listDecisions(projectId: string, userId: string, limit: number): Promise<DecisionOut[]>;
  /** Per group (TREATED, HOLDOUT, both always present): users, impressions, clicks, conversions. */
  treatmentReport(q: ReportQuery): Promise<GroupCounts[]>;
}

/**
 * The service's analytical store: the tables of infra/clickhouse/migrations. Every statement is
 * written inside this module; callers use rows and the named operations below, never SQL.
 */
export interface Warehouse extends WarehouseReads {
  /** Inserts row objects (see insertLines for the settings). */
  insertRows<T extends ClickhouseTable>(table: T, rows: readonly TableRows[T][], opts?: InsertOptions): Promise<void>;
  /** Inserts JSONCompactEachRow lines in TABLE_COLUMNS order (the ingest hot path builds no row objects). */
  insertLines(table: ClickhouseTable, lines: readonly string[], opts?: InsertOptions): Promise<void>;
  /** Rows of a parameterised SELECT (`{name:Type}` placeholders), for checks and tools. */
  query<Row>(sql: string, params?: Record<string, unknown>): Promise<Row[]>;

  findDecision: DecisionLookup;
  /** Copies a pre-login id's events and interactions under the signed-in user, keys unchanged (a repeat collapses). */
  copyUserRows(projectId: string, fromUserId: string, toUserId: string): Promise<void>;
  /** Deletes the rows of these users ingested up to `deletedAtMs`, waiting for the mutations to finish. */
  deleteUserRows(projectId: string, userIds: readonly string[], deletedAtMs: number): Promise<void>;
  /** Sets RETENTION_DAYS as the per-user tables' TTL where it differs; returns the tables changed. */
  applyRetentionTtl(days: number, log?: Logger): Promise<string[]>;
  /** The days of a table's TTL as its definition states it, or undefined. */
  ttlDays(table: string): Promise<number | undefined>;
  /** The last user ids of up to `pages` pages of `pageUsers` users after `after`; `rest`: more users follow. */
  aggregationPageEnds(read: AggregationRead, after: string, pageUsers: number, pages: number): Promise<{ uppers: string[]; rest: boolean }>;
  /** One data field's state per user of a page of users. */
  aggregationPage(q: AggregationPageQuery): Promise<AggregationPageRow[]>;

  /** Applies the pending migrations (start-up). */
  migrate(log?: Logger): Promise<void>;
  /** Resolves when ClickHouse answers (readiness). */
  ping(): Promise<void>;
  close(): Promise<void>;
}
