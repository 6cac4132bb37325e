/** A Pub/Sub message read into an events job or a dead-letter reason (pure: no I/O). */
import { Type, type Static } from 'typebox';
import { Compile } from 'typebox/compile';
import { detailsText, validationDetails, type SchemaError } from '../../shared/platform/http/validation-errors.js';
import { InvalidArgumentError, type ErrorDetail } from '../../shared/platform/errors.js';
import type { ProtoCodec } from '../../shared/ingestion/index.js';
import type { SingleEventsJob } from '../../shared/ingestion/index.js';
import { LogEventsRequest, MAX_EVENTS_PER_REQUEST, PropertyMap } from '../../shared/ingestion/index.js';
import { ProjectId, Strict, TimestampIn } from '../../shared/platform/http/common.schemas.js';
import { namedUsers } from './dead-letter-sink.js';
import { acceptedTimes, acceptedTimestamp, normalizeEvents, normalizePropertyMap } from '../../shared/ingestion/event-input.codec.js';
import { ProtoDecodeError } from '../../shared/ingestion/proto.codec.js';

// ---------------------------------------------------------------------------------------------
// Pure part: message → outcome.

/** What the intake reads of a pulled message. */
export interface IncomingMessage {
  messageId: string;
  /** The `data_type` attribute, if any. */
  dataType: string | undefined;
  data: Uint8Array;
}

export interface ParseContext {
  /** The project that registered the topic; a payload naming another one is poison. */
  sourceProjectId: string;
  codec: ProtoCodec;
  nowMs: number;
  /** Event and update times older than this many days are dead letters (RETENTION_DAYS). */
  retentionDays: number;
}

/** A refused payload that could be decoded names its users, so DeleteUserData finds its dead letter. */
export type ParseResult = { ok: true; job: SingleEventsJob } | { ok: false; reason: string; userIds?: string[] };

export type MessageOutcome = { kind: 'queue'; jobId: string; job: SingleEventsJob } | { kind: 'dead_letter'; reason: string; userIds?: string[] };

/** One entry per `data_type`: decodes and validates the payload into the job it becomes. */
export interface DataTypeHandler {
  dataType: string;
  parse(message: IncomingMessage, ctx: ParseContext): ParseResult;
}

/** Dead-letter reasons are for operators; a payload full of errors must not make a huge row. */
const MAX_REASON_CHARS = 2000;

/**
 * A message's payload, at most: the HTTP body limit (Pub/Sub itself allows 10 MB). A larger one
 * is acked and dead-lettered unread (the dead letter keeps its beginning, its size and SHA-256).
 */
export const MAX_MESSAGE_BYTES = 1024 * 1024;

const checkLogEvents = Compile(LogEventsRequest);
const UserAttributePayload = Strict({
  projectId: Type.Optional(ProjectId),
  userId: Type.String({ minLength: 1, maxLength: 256 }),
  userProperties: PropertyMap,
  updateTimestamp: TimestampIn,
});
const checkUserAttribute = Compile(UserAttributePayload);

/** One line per field, as the HTTP API's validation errors. */
function schemaProblems(validator: { Errors(value: unknown): Iterable<unknown> }, value: unknown): string | undefined {
  const details = validationDetails([...validator.Errors(value)] as SchemaError[], '(payload)');
  return details.length === 0 ? undefined : detailsText(details);
}

function otherProject(named: string, ctx: ParseContext): string {
  return `the payload names project "${named}", but the topic belongs to project "${ctx.sourceProjectId}"`;
}

function decodeFailure(dataType: string, err: unknown): ParseResult {
  if (err instanceof ProtoDecodeError) return { ok: false, reason: `undecodable ${dataType}: ${err.reason}` };
  throw err;
}

const eventData: DataTypeHandler = {
  dataType: 'EventData',
  parse(message, ctx) {
    let payload;
    try {
      payload = ctx.codec.decodeLogEventsRequest(message.data);
    } catch (err) {
      return decodeFailure('EventData', err);
    }
    // only a refused payload's users are looked up (a valid message costs no walk)
    const refuse = (reason: string): ParseResult => ({ ok: false, reason, userIds: namedUsers(payload) });
    if (payload.projectId !== '' && payload.projectId !== ctx.sourceProjectId) return refuse(otherProject(payload.projectId, ctx));
    // Before the schema walk: like LogEvents, 1 to 1,000 events (a 1 MiB message can hold far more).
    const count = Array.isArray(payload.events) ? payload.events.length : 0;
    if (count > MAX_EVENTS_PER_REQUEST) return refuse(`invalid EventData: events: ${count} events, at most ${MAX_EVENTS_PER_REQUEST} per message`);
    const problems = schemaProblems(checkLogEvents, payload);
    if (problems) return refuse(`invalid EventData: ${problems}`);
    const body = payload as Static<typeof LogEventsRequest>;
    let events;
    try {
      events = normalizeEvents(body.events, acceptedTimes(ctx.nowMs, ctx.retentionDays));
    } catch (err) {
      if (err instanceof InvalidArgumentError) return refuse(`invalid EventData: ${err.message}`);
      throw err;
    }
    return {
      ok: true,
      job: {
        kind: 'events',
        projectId: ctx.sourceProjectId,
        userId: body.userId,
        events,
        origin: { source: 'pubsub', messageId: message.messageId },
        receivedAt: ctx.nowMs,
      },
    };
  },
};

const userAttribute: DataTypeHandler = {
  dataType: 'UserAttribute',
  parse(message, ctx) {
    let payload;
    try {
      payload = ctx.codec.decodeUserAttribute(message.data);
    } catch (err) {
      return decodeFailure('UserAttribute', err);
    }
    // only a refused payload's users are looked up (a valid message costs no walk)
    const refuse = (reason: string): ParseResult => ({ ok: false, reason, userIds: namedUsers(payload) });
    // Unset project: the topic's (see events.proto).
    if (payload.projectId !== undefined && payload.projectId !== ctx.sourceProjectId) return refuse(otherProject(payload.projectId, ctx));
    const problems = schemaProblems(checkUserAttribute, payload);
    if (problems) return refuse(`invalid UserAttribute: ${problems}`);
    const body = payload as Static<typeof UserAttributePayload>;
    const details: ErrorDetail[] = [];
    const userProperties = normalizePropertyMap(body.userProperties, 'userProperties', details) ?? {};
    // As for LogEvents: a far-future time would win every later update
    // (last-write-wins), and the time is the row's partition key.
    const updateTs = acceptedTimestamp(body.updateTimestamp, 'updateTimestamp', acceptedTimes(ctx.nowMs, ctx.retentionDays), details) ?? 0;
    if (details.length > 0) return refuse(`invalid UserAttribute: ${details.map((d) => `${d.field}: ${d.description}`).join('; ')}`);
    return {
      ok: true,
      job: {
        kind: 'userAttributes',
        projectId: ctx.sourceProjectId,
        userId: body.userId,
        userProperties,
        updateTs,
        messageId: message.messageId,
        receivedAt: ctx.nowMs,
      },
    };
  },
};

/** Every data_type the service ingests; a message with any other is a dead letter. */
export const DATA_TYPE_HANDLERS: readonly DataTypeHandler[] = [eventData, userAttribute];

/**
 * One job per message: a redelivery that arrives while the first job still exists is a no-op in
 * BullMQ. Later ones are covered by the per-day event markers (`m:<messageId>:<index>` when an
 * event has no insert_id, for 8 days) and ClickHouse's `m:<messageId>` keys. BullMQ forbids `:` in custom ids; project ids cannot contain one (ProjectId).
 */
export function pubsubJobId(projectId: string, messageId: string): string {
  return `ps-${projectId}-${messageId}`;
}

/** Decides what becomes of a message; throws only on a bug (the message is then nacked). */
export function messageOutcome(message: IncomingMessage, ctx: ParseContext, handlers: readonly DataTypeHandler[] = DATA_TYPE_HANDLERS): MessageOutcome {
  if (message.data.byteLength > MAX_MESSAGE_BYTES)
    return { kind: 'dead_letter', reason: `message of ${message.data.byteLength} bytes exceeds the limit of ${MAX_MESSAGE_BYTES} bytes (1 MiB); not read` };
  const known = handlers.map((h) => h.dataType).join(' or ');
  if (message.dataType === undefined || message.dataType === '') return { kind: 'dead_letter', reason: `missing data_type attribute; expected ${known}` };
  const handler = handlers.find((h) => h.dataType === message.dataType);
  if (!handler) return { kind: 'dead_letter', reason: `unknown data_type "${message.dataType.slice(0, 100)}"; expected ${known}` };
  const r = handler.parse(message, ctx);
  if (!r.ok) return { kind: 'dead_letter', reason: r.reason.slice(0, MAX_REASON_CHARS), ...(r.userIds?.length ? { userIds: r.userIds } : {}) };
  return { kind: 'queue', jobId: pubsubJobId(ctx.sourceProjectId, message.messageId), job: r.job };
}
