import type { EventAttributes, PropertyValue } from './types.js';
import type { EventPayload } from './jobs.js';
import { microsToClickhouseDateTime64, toClickhouseDateTime64 } from '../platform/warehouse/clickhouse-datetime.js';
import { rowsChunk, TABLE_COLUMNS } from '../platform/warehouse/tables.js';

/**
 * Ingestion's rows of the ClickHouse tables `events`, `interactions` and `user_attribute_updates`
 * (infra/clickhouse/migrations), as written with JSONEachRow (column names, DateTime64 values as
 * 'YYYY-MM-DD hh:mm:ss.fff' UTC strings), and the mapping from the ingestion payloads to them.
 */

export type EventSource = 'api' | 'pubsub';

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

/** Where an event without insertId came from; its position in that carrier makes it unique. */
export type EventCarrier = { jobId: string } | { messageId: string };

/**
 * De-duplication key: the client's insertId when present; otherwise the carrier and the event's position.
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
  return batch.events.map((e, index) =>
    toEventRow(batch, e, e.clientEventTimestamp, e.serverReceivedTimestamp, eventDedupKey(e.insertId, carrier, index), ingest, ctx.source),
  );
}

/** Column order of the `events` rows (the EventRow fields, as inserted). */
export const EVENT_COLUMNS = TABLE_COLUMNS.events satisfies readonly (keyof EventRow)[];
// Compile-time check: every column the engine writes for these tables is a field of its row type.
TABLE_COLUMNS.interactions satisfies readonly (keyof InteractionRow)[];
TABLE_COLUMNS.user_attribute_updates satisfies readonly (keyof UserAttributeUpdateRow)[];

/**
 * One row's values in EVENT_COLUMNS order; the timestamps are passed apart so that every event
 * form (wire strings, queued epoch milliseconds) maps without first being copied into another
 * shape. The ingest hot path serialises this array as the row (eventRowLine): no row object.
 */
function eventRowValues(
  owner: { projectId: string; userId: string },
  e: EventAttributes & { eventName: string },
  clientTs: string | number,
  serverTs: string | number | undefined,
  dedupKey: string,
  ingest: string,
  source: EventSource,
  properties: (map: Record<string, PropertyValue> | undefined) => unknown = propertiesText,
): unknown[] {
  return [
    owner.projectId,
    owner.userId,
    e.eventName,
    dedupKey,
    e.insertId ?? '',
    toClickhouseDateTime64(clientTs),
    serverTs === undefined ? null : toClickhouseDateTime64(serverTs),
    ingest,
    properties(e.eventProperties),
    properties(e.userProperties),
    e.sessionId ?? '',
    e.preLoginTempUserId ?? '',
    e.country ?? '',
    e.region ?? '',
    e.city ?? '',
    e.ipAddress ?? '',
    e.deviceId ?? '',
    e.appVersionId ?? '',
    source,
  ];
}

/** A property map's column value: the JSON text of the PropertyValue map. */
const propertiesText = (map: Record<string, PropertyValue> | undefined): string => (map ? JSON.stringify(map) : '{}');

/**
 * A property map as a JSON object in the row. ClickHouse reads an object given for a String
 * column as its text (input_format_json_read_objects_as_strings, which every insert sets), which
 * is the text `propertiesText` makes: the map is serialised once, inside its row, instead of
 * once on its own and again, escaped, as a string.
 */
const propertiesObject = (map: Record<string, PropertyValue> | undefined): Record<string, PropertyValue> => map ?? EMPTY_MAP;
const EMPTY_MAP: Record<string, PropertyValue> = Object.freeze({}) as Record<string, PropertyValue>;

/** The JSONCompactEachRow line of one event row (see eventRowValues). */
export function eventRowLine(...args: Parameters<typeof eventRowValues>): string {
  return JSON.stringify(eventRowValues(...args));
}

/**
 * The rows of one request's events, as JSONCompactEachRow rows separated by commas (ClickHouse
 * reads a comma between rows like a newline): one JSON.stringify for all of them, so no string
 * per row, no join, and each property map serialised once (see propertiesObject). The stored
 * rows are those of eventRowLine. `dedupKey(e, i)` keys the i-th event.
 */
export function eventRowsChunk(
  owner: { projectId: string; userId: string },
  events: readonly EventPayload[],
  dedupKey: (e: EventPayload, index: number) => string,
  ingest: string,
  source: EventSource,
): string {
  const rows = new Array<unknown[]>(events.length);
  for (let i = 0; i < events.length; i++) {
    const e = events[i];
    rows[i] = eventRowValues(owner, e, e.clientEventTs, e.serverReceivedTs, dedupKey(e, i), ingest, source, propertiesObject);
  }
  return rowsChunk(rows);
}

export function toEventRow(...args: Parameters<typeof eventRowValues>): EventRow {
  const values = eventRowValues(...args);
  return Object.fromEntries(EVENT_COLUMNS.map((c, i) => [c, values[i]])) as unknown as EventRow;
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
