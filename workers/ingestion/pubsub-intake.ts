import { Duration, type Message, type PubSub, type Subscription } from '@google-cloud/pubsub';
import type { Logger } from 'pino';
import { createPubSub, ensureSubscription } from '../../shared/platform/pubsub/pubsub.js';
import type { Invalidation } from '../../shared/platform/redis/invalidation-bus.js';
import type { ProtoCodec } from '../../shared/ingestion/index.js';
import type { SingleEventsJob } from '../../shared/ingestion/index.js';
import type { Platform } from '../../shared/platform/platform.js';
import type { Ingestion } from '../../shared/ingestion/index.js';
import type { DeadLetterSink } from './dead-letter-sink.js';
import type { PubSubSource } from '../../shared/ingestion/index.js';
import { messageOutcome, type MessageOutcome } from './pubsub-messages.js';
import { isRedisUnavailable } from '../../shared/platform/redis/redis-health.js';
import { createProtoCodec } from '../../shared/ingestion/proto.codec.js';

/*
 * Pub/Sub intake (spec "Publish/subscribe ingestion"). Each message becomes either a job on
 * the events queue (the same queue and workers as LogEvents) or a dead letter, and is acked only
 * after that is durable. Anything else (Redis or ClickHouse down, a bug) nacks it, so it comes back.
 */

export * from './pubsub-messages.js';

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
  /** Ingestion backpressure: while it says so, messages are nacked (after `backlogNackDelayMs`) instead of queued. */
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
    this.opts = {
      reconcileEveryMs: 30_000,
      retryAfterErrorMs: 5_000,
      maxMessages: 1000,
      maxBytes: 64 * 1024 * 1024,
      closeTimeoutMs: 10_000,
      pubsubTimeoutMs: 10_000,
      backlogNackDelayMs: 1000,
      retentionDays: 400,
      ...opts,
    };
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
      // A Redis outage is logged once by the process (RedisHealth); anything else here is worth a warning.
      this.deps.log[isRedisUnavailable(err) ? 'debug' : 'warn']({ err }, 'cannot read the Pub/Sub sources; keeping the current subscriptions');
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
      outcome = messageOutcome(
        { messageId: message.id, dataType: message.attributes?.data_type, data: message.data },
        { sourceProjectId: projectId, codec: this.deps.codec, nowMs, retentionDays: this.opts.retentionDays },
      );
      if (outcome.kind === 'queue')
        await this.deps.events.enqueue(outcome.job, { jobId: outcome.jobId, weight: outcome.job.kind === 'events' ? outcome.job.events.length : 1 });
      // the sink keeps the payload's beginning, its size and hash
      else
        await this.deps.deadLetters.store({
          projectId,
          messageId: message.id,
          source: 'pubsub',
          reason: outcome.reason,
          receiveMs: nowMs,
          dataType: message.attributes?.data_type,
          payload: message.data,
          userIds: outcome.userIds ?? [],
        });
    } catch (err) {
      // Not durable yet (Redis or ClickHouse down): it must come back, never be acked.
      log[isRedisUnavailable(err) ? 'debug' : 'warn']({ err }, 'Pub/Sub message not stored; nacked for redelivery');
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
export async function startPubSubIntake(
  ctx: PubSubIntakeWiring,
  deadLetters: PubSubIntakeDeps['deadLetters'],
  opts: PubSubIntakeOptions = {},
): Promise<PubSubIntake> {
  const intake = new PubSubIntake(
    {
      pubsub: await createPubSub(ctx.config),
      sources: ctx.pubsubSources,
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
