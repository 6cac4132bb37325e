import { Duration, type Message, type PubSub, type Subscription } from '@google-cloud/pubsub';
import type { Logger } from 'pino';
import { Type, type Static } from 'typebox';
import { Compile } from 'typebox/compile';
import { detailsText, validationDetails, type SchemaError } from '../../shared/platform/http/validation-errors.js';
import { createPubSub, ensureSubscription } from '../../shared/platform/pubsub/pubsub.js';
import type { Invalidation } from '../../shared/platform/redis/invalidation-bus.js';
import { acceptedTimes, acceptedTimestamp, normalizeEvents, normalizePropertyMap } from '../../shared/ingestion/index.js';
import { InvalidArgumentError, type ErrorDetail } from '../../shared/platform/errors.js';
import { createProtoCodec, ProtoDecodeError, type ProtoCodec } from '../../shared/ingestion/index.js';
import type { SingleEventsJob } from '../../shared/ingestion/index.js';
import { LogEventsRequest, MAX_EVENTS_PER_REQUEST, PropertyMap } from '../../shared/ingestion/index.js';
import { ProjectId, Strict, TimestampIn } from '../../shared/platform/http/common.schemas.js';
import type { Platform } from '../../shared/platform/platform.js';
import type { Ingestion } from '../../shared/ingestion/index.js';
import type { DeadLetterSink } from './dead-letter-sink.js';
import { PubSubSourceStore, type PubSubSource } from '../../shared/ingestion/index.js';

/*
 * Pub/Sub intake (spec "Publish/subscribe ingestion", D33). Each message becomes either a job on
 * the events queue (the same queue and workers as LogEvents) or a dead letter, and is acked only
 * after that is durable. Anything else (Redis or ClickHouse down, a bug) nacks it, so it comes back.
 */

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

export type ParseResult = { ok: true; job: SingleEventsJob } | { ok: false; reason: string };

export type MessageOutcome = { kind: 'queue'; jobId: string; job: SingleEventsJob } | { kind: 'dead_letter'; reason: string };

/** One entry per `data_type`: decodes and validates the payload into the job it becomes. */
export interface DataTypeHandler {
  dataType: string;
  parse(message: IncomingMessage, ctx: ParseContext): ParseResult;
}

/** Dead-letter reasons are for operators; a payload full of errors must not make a huge row. */
const MAX_REASON_CHARS = 2000;

/**
 * A message's payload, at most: the HTTP body limit (Pub/Sub itself allows 10 MB). A larger one
 * is acked and dead-lettered unread, with only its first MAX_MESSAGE_BYTES kept.
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
    if (payload.projectId !== '' && payload.projectId !== ctx.sourceProjectId) return { ok: false, reason: otherProject(payload.projectId, ctx) };
    // Before the schema walk: like LogEvents, 1 to 1,000 events (a 1 MiB message can hold far more).
    const count = Array.isArray(payload.events) ? payload.events.length : 0;
    if (count > MAX_EVENTS_PER_REQUEST) return { ok: false, reason: `invalid EventData: events: ${count} events, at most ${MAX_EVENTS_PER_REQUEST} per message` };
    const problems = schemaProblems(checkLogEvents, payload);
    if (problems) return { ok: false, reason: `invalid EventData: ${problems}` };
    const body = payload as Static<typeof LogEventsRequest>;
    let events;
    try {
      events = normalizeEvents(body.events, acceptedTimes(ctx.nowMs, ctx.retentionDays));
    } catch (err) {
      if (err instanceof InvalidArgumentError) return { ok: false, reason: `invalid EventData: ${err.message}` };
      throw err;
    }
    return { ok: true, job: { kind: 'events', projectId: ctx.sourceProjectId, userId: body.userId, events, origin: { source: 'pubsub', messageId: message.messageId }, receivedAt: ctx.nowMs } };
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
    // Unset project: the topic's (see events.proto).
    if (payload.projectId !== undefined && payload.projectId !== ctx.sourceProjectId) return { ok: false, reason: otherProject(payload.projectId, ctx) };
    const problems = schemaProblems(checkUserAttribute, payload);
    if (problems) return { ok: false, reason: `invalid UserAttribute: ${problems}` };
    const body = payload as Static<typeof UserAttributePayload>;
    const details: ErrorDetail[] = [];
    const userProperties = normalizePropertyMap(body.userProperties, 'userProperties', details) ?? {};
    // As for LogEvents (D31, D45): a far-future time would win every later update
    // (last-write-wins), and the time is the row's partition key.
    const updateTs = acceptedTimestamp(body.updateTimestamp, 'updateTimestamp', acceptedTimes(ctx.nowMs, ctx.retentionDays), details) ?? 0;
    if (details.length > 0) return { ok: false, reason: `invalid UserAttribute: ${details.map((d) => `${d.field}: ${d.description}`).join('; ')}` };
    return { ok: true, job: { kind: 'userAttributes', projectId: ctx.sourceProjectId, userId: body.userId, userProperties, updateTs, messageId: message.messageId, receivedAt: ctx.nowMs } };
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
  if (message.data.byteLength > MAX_MESSAGE_BYTES) return { kind: 'dead_letter', reason: `message of ${message.data.byteLength} bytes exceeds the limit of ${MAX_MESSAGE_BYTES} bytes (1 MiB); not read, first ${MAX_MESSAGE_BYTES} bytes kept` };
  const known = handlers.map((h) => h.dataType).join(' or ');
  if (message.dataType === undefined || message.dataType === '') return { kind: 'dead_letter', reason: `missing data_type attribute; expected ${known}` };
  const handler = handlers.find((h) => h.dataType === message.dataType);
  if (!handler) return { kind: 'dead_letter', reason: `unknown data_type "${message.dataType.slice(0, 100)}"; expected ${known}` };
  const r = handler.parse(message, ctx);
  if (!r.ok) return { kind: 'dead_letter', reason: r.reason.slice(0, MAX_REASON_CHARS) };
  return { kind: 'queue', jobId: pubsubJobId(ctx.sourceProjectId, message.messageId), job: r.job };
}

// ---------------------------------------------------------------------------------------------
// The subscriptions.

export interface PubSubIntakeMetrics {
  pubsubReceived(project: string): void;
  pubsubAcked(project: string, outcome: 'queued' | 'dead_letter'): void;
}

export interface PubSubIntakeDeps {
  /** Closed by `close()`: the intake owns it. */
  pubsub: PubSub;
  sources: { list(): Promise<PubSubSource[]> };
  /** Resolves once the job is durably in Redis (EnqueueBatcher). */
  events: { enqueue(data: SingleEventsJob, opts: { jobId: string; weight?: number }): Promise<void> };
  /** D45 backpressure: while it says so, messages are nacked (after `backlogNackDelayMs`) instead of queued. */
  backlog?: { overLimit(): boolean };
  /** Where messages that can never be queued go (acked once stored there). */
  deadLetters: Pick<DeadLetterSink, 'store'>;
  /** Change notifications (`pubsubSource`, `all`) from the invalidation bus. */
  bus: { on(listener: (msg: Invalidation) => void): () => void };
  codec: ProtoCodec;
  log: Logger;
  now: () => number;
  metrics?: PubSubIntakeMetrics;
}

export interface PubSubIntakeOptions {
  /** Safety net for a missed change notification. @defaultValue 30000 */
  reconcileEveryMs?: number;
  /** After a subscription's stream failed, the next attempt. @defaultValue 5000 */
  retryAfterErrorMs?: number;
  /** Messages held at once per subscription (memory bound). @defaultValue 1000 */
  maxMessages?: number;
  /** Bytes of messages held at once per subscription (memory bound: Pub/Sub messages may be 10 MB each). @defaultValue 64 MiB */
  maxBytes?: number;
  /** close() waits this long for messages in hand, then nacks the rest. @defaultValue 10000 */
  closeTimeoutMs?: number;
  /** Deadline of the create-or-reuse calls. @defaultValue 10000 */
  pubsubTimeoutMs?: number;
  /**
   * While the ingestion backlog is full, a message is held this long before it is nacked: an
   * immediate nack would be redelivered at once, a busy loop; held messages also count against
   * `maxMessages`, which slows the pull. @defaultValue 1000
   */
  backlogNackDelayMs?: number;
  /** RETENTION_DAYS: older event and update times are dead letters. @defaultValue 400 */
  retentionDays?: number;
}

interface Active {
  source: PubSubSource;
  subscription: Subscription;
}

function sameSource(a: PubSubSource, b: PubSubSource | undefined): boolean {
  return b !== undefined && a.topic === b.topic && a.subscription === b.subscription;
}

/**
 * Keeps one streaming pull per registered source, in every workers process. The set of
 * subscriptions follows the sources in Redis: on every `pubsubSource` change, on `all` (the bus
 * reconnected) and every `reconcileEveryMs`.
 */
export class PubSubIntake {
  private readonly active = new Map<string, Active>();
  private readonly opts: Required<PubSubIntakeOptions>;
  private reconciling: Promise<void> | undefined;
  private again = false;
  private closed = false;
  private closing: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;
  /** Messages held before their nack while the backlog is full. */
  private readonly deferred = new Map<NodeJS.Timeout, Message>();

  constructor(
    private readonly deps: PubSubIntakeDeps,
    opts: PubSubIntakeOptions = {},
  ) {
    this.opts = { reconcileEveryMs: 30_000, retryAfterErrorMs: 5_000, maxMessages: 1000, maxBytes: 64 * 1024 * 1024, closeTimeoutMs: 10_000, pubsubTimeoutMs: 10_000, backlogNackDelayMs: 1000, retentionDays: 400, ...opts };
  }

  /** Resolves after the first reconcile; a source that cannot be subscribed yet is retried later. */
  async start(): Promise<void> {
    this.unsubscribe = this.deps.bus.on((msg) => {
      if (msg.kind === 'pubsubSource' || msg.kind === 'all') void this.reconcile();
    });
    this.timer = setInterval(() => void this.reconcile(), this.opts.reconcileEveryMs);
    this.timer.unref();
    await this.reconcile();
  }

  /** Project ids pulled from right now. */
  get activeProjects(): string[] {
    return [...this.active.keys()].sort();
  }

  /** Concurrent calls coalesce: one more pass runs after the current one. */
  reconcile(): Promise<void> {
    if (this.closed) return Promise.resolve();
    if (this.reconciling) {
      this.again = true;
      return this.reconciling;
    }
    this.reconciling = (async () => {
      do {
        this.again = false;
        await this.reconcileOnce();
      } while (this.again && !this.closed);
    })().finally(() => {
      this.reconciling = undefined;
    });
    return this.reconciling;
  }

  private async reconcileOnce(): Promise<void> {
    let wanted: PubSubSource[];
    try {
      wanted = await this.deps.sources.list();
    } catch (err) {
      this.deps.log.warn({ err }, 'cannot read the Pub/Sub sources; keeping the current subscriptions');
      return;
    }
    const byProject = new Map(wanted.map((s) => [s.projectId, s]));
    const stale = [...this.active.values()].filter((a) => !sameSource(a.source, byProject.get(a.source.projectId)));
    await Promise.all(stale.map((a) => this.stop(a)));
    await Promise.all(wanted.filter((s) => !this.active.has(s.projectId)).map((s) => this.subscribe(s)));
  }

  private async subscribe(source: PubSubSource): Promise<void> {
    const log = this.deps.log.child({ projectId: source.projectId, subscription: source.subscription });
    try {
      await ensureSubscription(this.deps.pubsub, source, { replace: false, timeoutMs: this.opts.pubsubTimeoutMs });
    } catch (err) {
      log.warn({ err }, 'cannot subscribe to the Pub/Sub source yet; retrying at the next reconcile');
      return;
    }
    // close() may have begun while the subscription was being checked.
    if (this.closed || this.active.has(source.projectId)) return;
    const subscription = this.deps.pubsub.subscription(source.subscription, {
      flowControl: { maxMessages: this.opts.maxMessages, maxBytes: this.opts.maxBytes, allowExcessMessages: false },
      // Messages in hand get time to reach the queue and be acked; whatever is left is nacked.
      closeOptions: { behavior: 'WAIT', timeout: Duration.from({ milliseconds: this.opts.closeTimeoutMs }) },
    });
    const active: Active = { source, subscription };
    subscription.on('error', (err) => this.onStreamError(active, err));
    subscription.on('message', (m: Message) => void this.onMessage(source, m));
    this.active.set(source.projectId, active);
    log.info({ topic: source.topic }, 'pulling from the Pub/Sub source');
  }

  private async stop(active: Active): Promise<void> {
    if (this.active.get(active.source.projectId) === active) this.active.delete(active.source.projectId);
    try {
      await active.subscription.close();
    } catch (err) {
      this.deps.log.warn({ err, projectId: active.source.projectId }, 'closing a Pub/Sub subscription failed');
    }
    this.deps.log.info({ projectId: active.source.projectId, subscription: active.source.subscription }, 'stopped pulling from the Pub/Sub source');
  }

  /** The stream gave up (subscription deleted, permission revoked, ...): drop it and subscribe again soon. */
  private onStreamError(active: Active, err: Error): void {
    if (this.closed || this.active.get(active.source.projectId) !== active) return;
    this.deps.log.warn({ err, projectId: active.source.projectId }, 'Pub/Sub stream failed; subscribing again');
    void this.stop(active);
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => void this.reconcile(), this.opts.retryAfterErrorMs);
    this.retryTimer.unref();
  }

  private async onMessage(source: PubSubSource, message: Message): Promise<void> {
    if (this.closed) return settle(message, 'nack');
    const { projectId } = source;
    this.deps.metrics?.pubsubReceived(projectId);
    if (this.deps.backlog?.overLimit()) return this.deferNack(message);
    const log = this.deps.log.child({ projectId, messageId: message.id });
    let outcome: MessageOutcome;
    try {
      const nowMs = this.deps.now();
      outcome = messageOutcome({ messageId: message.id, dataType: message.attributes?.data_type, data: message.data }, { sourceProjectId: projectId, codec: this.deps.codec, nowMs, retentionDays: this.opts.retentionDays });
      if (outcome.kind === 'queue') await this.deps.events.enqueue(outcome.job, { jobId: outcome.jobId, weight: outcome.job.kind === 'events' ? outcome.job.events.length : 1 });
      else await this.deps.deadLetters.store({ projectId, messageId: message.id, source: 'pubsub', reason: outcome.reason, receiveMs: nowMs, dataType: message.attributes?.data_type, payload: message.data.subarray(0, MAX_MESSAGE_BYTES) });
    } catch (err) {
      // Not durable yet (Redis or ClickHouse down): it must come back, never be acked.
      log.warn({ err }, 'Pub/Sub message not stored; nacked for redelivery');
      return settle(message, 'nack');
    }
    if (outcome.kind === 'dead_letter') log.warn({ reason: outcome.reason }, 'Pub/Sub message stored as a dead letter');
    settle(message, 'ack');
    this.deps.metrics?.pubsubAcked(projectId, outcome.kind === 'queue' ? 'queued' : 'dead_letter');
  }

  /** Backlog full: not queued, nacked after a pause (at once when the intake closes); redelivered later. */
  private deferNack(message: Message): void {
    const timer = setTimeout(() => {
      this.deferred.delete(timer);
      settle(message, 'nack');
    }, this.opts.backlogNackDelayMs);
    this.deferred.set(timer, message);
  }

  /** Idempotent. Closes every subscription (messages in hand get `closeTimeoutMs` to finish, the rest are nacked), then the client. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.closed = true;
      clearInterval(this.timer);
      clearTimeout(this.retryTimer);
      this.unsubscribe?.();
      for (const [timer, message] of this.deferred) {
        clearTimeout(timer);
        settle(message, 'nack');
      }
      this.deferred.clear();
      await Promise.all([...this.active.values()].map((a) => this.stop(a)));
      await this.deps.pubsub.close();
    })();
    return this.closing;
  }
}

/** After the subscription closed, the client may refuse acks; the message is then redelivered, which is safe. */
function settle(message: Message, how: 'ack' | 'nack'): void {
  try {
    if (how === 'ack') message.ack();
    else message.nack();
  } catch {
    // Redelivery is de-duplicated by the job id and the message id.
  }
}

/** What the workers role hands the intake: the process's platform and its ingestion producers. */
export type PubSubIntakeWiring = Pick<Platform, 'config' | 'redis' | 'keys' | 'now' | 'bus' | 'log' | 'metrics'> & Ingestion;

/** Wiring for the workers role: the process's stores, queue producer and ClickHouse client. */
export async function startPubSubIntake(ctx: PubSubIntakeWiring, deadLetters: PubSubIntakeDeps['deadLetters'], opts: PubSubIntakeOptions = {}): Promise<PubSubIntake> {
  const intake = new PubSubIntake(
    {
      pubsub: createPubSub(ctx.config),
      sources: new PubSubSourceStore(ctx.redis, ctx.keys, ctx.now),
      events: ctx.ingest.events,
      backlog: ctx.ingestBacklog,
      deadLetters,
      bus: ctx.bus,
      codec: createProtoCodec(),
      log: ctx.log.child({ role: 'pubsub-intake' }),
      now: ctx.now,
      metrics: ctx.metrics,
    },
    { retentionDays: ctx.config.retentionDays, ...opts },
  );
  await intake.start();
  return intake;
}

