import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { drainStream, type ClickHouseClient } from '@clickhouse/client';
import type { EventAttributes, PropertyValue } from '../domain/types.js';

/**
 * Rows of the ClickHouse tables of infra/clickhouse/migrations, as written with JSONEachRow
 * (column names, DateTime64 values as 'YYYY-MM-DD hh:mm:ss.fff' UTC strings), and the mapping
 * from the ingestion payloads to them.
 */

export type EventSource = 'api' | 'pubsub';
export type DeadLetterSource = 'pubsub' | 'log_events' | 'log_treatment_interaction';

export interface EventRow {
  project_id: string;
  user_id: string;
  event_name: string;
  /** `i:<insertId>` when given, else `j:<jobId>:<index>` / `m:<messageId>:<index>` (see eventDedupKey). */
  dedup_key: string;
  insert_id: string;
  client_event_ts: string;
  server_received_ts: string | null;
  ingest_ts: string;
  /** JSON of the PropertyValue map. */
  event_properties: string;
  /** JSON of the PropertyValue map. */
  user_properties: string;
  session_id: string;
  pre_login_temp_user_id: string;
  country: string;
  region: string;
  city: string;
  ip_address: string;
  device_id: string;
  app_version_id: string;
  source: EventSource;
}

export interface InteractionRow {
  project_id: string;
  user_id: string;
  treatment_id: string;
  treatment_tracking_id: string;
  surface: string;
  interaction_type: string;
  /** DateTime64(6): microseconds kept. */
  interaction_time: string;
  action_name: string;
  /** `j:<jobId>` for an API call. */
  dedup_key: string;
  ingest_ts: string;
}

export interface DeadLetterRow {
  project_id: string;
  message_id: string;
  source: DeadLetterSource;
  reason: string;
  receive_time: string;
  data_type: string;
  payload_base64: string;
}

export interface UserAttributeUpdateRow {
  project_id: string;
  user_id: string;
  /** `m:<messageId>` or `j:<jobId>`. */
  dedup_key: string;
  update_ts: string;
  user_properties: string;
  source: EventSource;
  ingest_ts: string;
}

export interface TableRows {
  events: EventRow;
  interactions: InteractionRow;
  dead_letters: DeadLetterRow;
  user_attribute_updates: UserAttributeUpdateRow;
}
export type ClickhouseTable = keyof TableRows;

// DateTime64's range; outside it ClickHouse would clamp or wrap silently.
const MIN_MS = Date.UTC(1900, 0, 1);
const MAX_MS = Date.UTC(2300, 0, 1) - 1;
const HAS_OFFSET = /(?:Z|[+-]\d{2}:?\d{2})$/i;

function toEpochMs(value: number | string): number {
  if (typeof value === 'string' && !HAS_OFFSET.test(value.trim())) {
    // Without an offset Date.parse would use the process's local time zone.
    throw new RangeError(`timestamp "${value}" has no UTC offset`);
  }
  const ms = typeof value === 'number' ? value : Date.parse(value);
  if (!Number.isFinite(ms) || ms < MIN_MS || ms > MAX_MS) {
    throw new RangeError(`timestamp ${JSON.stringify(value)} is not a date between 1900 and 2299`);
  }
  return Math.floor(ms);
}

/** Epoch ms or an RFC 3339 string → 'YYYY-MM-DD hh:mm:ss.sss' (UTC). @throws RangeError */
export function toClickhouseDateTime64(value: number | string): string {
  return new Date(toEpochMs(value)).toISOString().slice(0, 23).replace('T', ' ');
}

/** Microseconds since the epoch (int64 as number, string or bigint) → 'YYYY-MM-DD hh:mm:ss.ffffff'. */
export function microsToClickhouseDateTime64(micros: number | string | bigint): string {
  let us: bigint;
  try {
    us = BigInt(micros);
  } catch {
    throw new RangeError(`"${String(micros)}" is not an integer number of microseconds`);
  }
  const fraction = ((us % 1_000_000n) + 1_000_000n) % 1_000_000n;
  const seconds = (us - fraction) / 1_000_000n;
  const base = toClickhouseDateTime64(Number(seconds) * 1000).slice(0, 19);
  return `${base}.${fraction.toString().padStart(6, '0')}`;
}

/** Where an event without insertId came from; its position in that carrier makes it unique. */
export type EventCarrier = { jobId: string } | { messageId: string };

/**
 * D31/D33: the client's insertId when present; otherwise the carrier and the event's position.
 * The prefixes keep an insertId from ever equalling a derived key (the format the ingestion
 * workers write).
 */
export function eventDedupKey(insertId: string | undefined, carrier: EventCarrier, index: number): string {
  if (insertId !== undefined && insertId !== '') return `i:${insertId}`;
  return 'jobId' in carrier ? `j:${carrier.jobId}:${index}` : `m:${carrier.messageId}:${index}`;
}

/** An ExternalEvent as validated by the API or decoded from Pub/Sub (LogEventJson fits). */
export interface EventInput extends EventAttributes {
  eventName: string;
  /** RFC 3339 or epoch milliseconds */
  clientEventTimestamp: string | number;
  serverReceivedTimestamp?: string | number;
}

export interface EventBatchInput {
  projectId: string;
  userId: string;
  events: readonly EventInput[];
}

export interface RowContext {
  source: EventSource;
  /** Injected clock: the time the worker stores the rows. */
  ingestMs: number;
}

/** Maps one LogEvents request (or EventData message) to its rows; index = position in the request. */
export function toEventRows(batch: EventBatchInput, carrier: EventCarrier, ctx: RowContext): EventRow[] {
  const ingest = toClickhouseDateTime64(ctx.ingestMs);
  return batch.events.map((e, index) => toEventRow(batch, e, e.clientEventTimestamp, e.serverReceivedTimestamp, eventDedupKey(e.insertId, carrier, index), ingest, ctx.source));
}

/**
 * One row; the timestamps are passed apart so that every event form (wire strings, queued epoch
 * milliseconds) maps without first being copied into another shape (the ingest hot path).
 */
export function toEventRow(
  owner: { projectId: string; userId: string },
  e: EventAttributes & { eventName: string },
  clientTs: string | number,
  serverTs: string | number | undefined,
  dedupKey: string,
  ingest: string,
  source: EventSource,
): EventRow {
  return {
    project_id: owner.projectId,
    user_id: owner.userId,
    event_name: e.eventName,
    dedup_key: dedupKey,
    insert_id: e.insertId ?? '',
    client_event_ts: toClickhouseDateTime64(clientTs),
    server_received_ts: serverTs === undefined ? null : toClickhouseDateTime64(serverTs),
    ingest_ts: ingest,
    event_properties: JSON.stringify(e.eventProperties ?? {}),
    user_properties: JSON.stringify(e.userProperties ?? {}),
    session_id: e.sessionId ?? '',
    pre_login_temp_user_id: e.preLoginTempUserId ?? '',
    country: e.country ?? '',
    region: e.region ?? '',
    city: e.city ?? '',
    ip_address: e.ipAddress ?? '',
    device_id: e.deviceId ?? '',
    app_version_id: e.appVersionId ?? '',
    source,
  };
}

export interface InteractionInput {
  projectId: string;
  userId: string;
  treatmentId: string;
  treatmentTrackingId: string;
  surface: string;
  interactionType: string;
  interactionTimeMicros: number | string | bigint;
  actionName?: string;
}

export function toInteractionRow(input: InteractionInput, dedupKey: string, ingestMs: number): InteractionRow {
  return {
    project_id: input.projectId,
    user_id: input.userId,
    treatment_id: input.treatmentId,
    treatment_tracking_id: input.treatmentTrackingId,
    surface: input.surface,
    interaction_type: input.interactionType,
    interaction_time: microsToClickhouseDateTime64(input.interactionTimeMicros),
    action_name: input.actionName ?? '',
    dedup_key: dedupKey,
    ingest_ts: toClickhouseDateTime64(ingestMs),
  };
}

export interface DeadLetterInput {
  projectId: string;
  messageId: string;
  source: DeadLetterSource;
  reason: string;
  receiveMs: number;
  dataType?: string;
  payload: Uint8Array;
}

export function toDeadLetterRow(input: DeadLetterInput): DeadLetterRow {
  return {
    project_id: input.projectId,
    message_id: input.messageId,
    source: input.source,
    reason: input.reason,
    receive_time: toClickhouseDateTime64(input.receiveMs),
    data_type: input.dataType ?? '',
    payload_base64: Buffer.from(input.payload).toString('base64'),
  };
}

export interface UserAttributeInput {
  projectId: string;
  userId: string;
  userProperties: Record<string, PropertyValue>;
  updateTimestamp: string;
}

export function toUserAttributeUpdateRow(input: UserAttributeInput, dedupKey: string, ctx: RowContext): UserAttributeUpdateRow {
  return {
    project_id: input.projectId,
    user_id: input.userId,
    dedup_key: dedupKey,
    update_ts: toClickhouseDateTime64(input.updateTimestamp),
    user_properties: JSON.stringify(input.userProperties),
    source: ctx.source,
    ingest_ts: toClickhouseDateTime64(ctx.ingestMs),
  };
}

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
 * throw_on_max_partitions_per_insert_block = 0: one request may hold events of many months.
 */
export async function insertRows<T extends ClickhouseTable>(
  client: ClickHouseClient,
  table: T,
  rows: readonly TableRows[T][],
  opts: { dedupToken?: boolean } = {},
): Promise<void> {
  if (rows.length === 0) return;
  // JSONCompactEachRow (one array per row, columns named once) is cheaper to build and to parse
  // than JSONEachRow: about a quarter less insert time in chDB. Every row of a table comes from
  // one mapper, so the first row's keys name the columns of all.
  const columns = Object.keys(rows[0]) as (keyof TableRows[T])[];
  let body = '';
  for (const r of rows) body += JSON.stringify(columns.map((c) => r[c])) + '\n';
  const settings = ['throw_on_max_partitions_per_insert_block = 0'];
  if (opts.dedupToken !== false) {
    settings.unshift(`insert_deduplication_token = '${createHash('sha256').update(table).update('\n').update(body).digest('hex')}'`);
  }
  const result = await client.exec({
    query: `INSERT INTO ${table} (${columns.join(', ')}) SETTINGS ${settings.join(', ')} FORMAT JSONCompactEachRow`,
    values: Readable.from([body]),
  });
  await drainStream(result.stream);
}
