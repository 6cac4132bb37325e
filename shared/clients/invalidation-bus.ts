import { Redis } from 'ioredis';
import type { Logger } from 'pino';

/**
 * Cross-process cache invalidation over Redis pub/sub. Every process that caches management state
 * (API keys, projects, the compiled treatment catalogue) listens here. Pub/sub is fire-and-forget,
 * so whenever the subscription (re)connects, listeners get `{kind: 'all'}` and drop everything:
 * a message missed while disconnected can never leave a revoked key usable.
 */
export interface Invalidation {
  kind: 'apiKey' | 'project' | 'catalog' | 'pubsubSource' | 'all';
  projectId?: string;
  id?: string;
}

export type InvalidationListener = (msg: Invalidation) => void;

/** The buses of this process, by channel: a writer delivers its own invalidation to them at once. */
const localBuses = new Map<string, Set<InvalidationBus>>();

/**
 * Delivers a message just published on `channel` to this process's buses without waiting for
 * Redis to echo it back, so the call after a management change, on the process that made it,
 * already sees the change (the echo arrives later and invalidates once more, harmlessly).
 */
export function deliverLocally(channel: string, raw: string): void {
  const buses = localBuses.get(channel);
  if (buses) for (const bus of buses) bus.receive(raw);
}

export class InvalidationBus {
  private readonly sub: Redis;
  private readonly listeners = new Set<InvalidationListener>();
  private connected = false;
  private closed = false;

  constructor(url: string, private readonly channel: string, private readonly log: Logger) {
    this.sub = new Redis(url, { maxRetriesPerRequest: null, retryStrategy: (t) => Math.min(t * 200, 2000), connectionName: 'invalidation' });
    this.sub.on('error', (err) => this.log.debug({ err }, 'invalidation subscriber error'));
    this.sub.on('ready', () => {
      this.sub.subscribe(this.channel).then(
        () => {
          this.connected = true;
          this.emit({ kind: 'all' });
        },
        // A close() while the subscription is in flight fails it; that is no fault worth a warning.
        (err) => {
          if (!this.closed) this.log.warn({ err }, 'invalidation subscribe failed');
        },
      );
    });
    this.sub.on('close', () => {
      if (this.connected) this.emit({ kind: 'all' });
      this.connected = false;
    });
    this.sub.on('message', (_ch: string, raw: string) => this.receive(raw));
    let buses = localBuses.get(channel);
    if (!buses) localBuses.set(channel, (buses = new Set()));
    buses.add(this);
  }

  /** One message as published on the channel; an unreadable one drops everything. */
  receive(raw: string): void {
    let msg: Invalidation;
    try {
      msg = JSON.parse(raw) as Invalidation;
    } catch {
      msg = { kind: 'all' };
    }
    this.emit(msg);
  }

  /** Caches must not serve entries while this is false: messages could be missed. */
  get isListening(): boolean {
    return this.connected;
  }

  on(listener: InvalidationListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private emit(msg: Invalidation): void {
    for (const l of this.listeners) {
      try {
        l(msg);
      } catch (err) {
        // One cache's fault must neither starve the others nor fail the write that published.
        this.log.error({ err, kind: msg.kind }, 'invalidation listener failed');
      }
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const buses = localBuses.get(this.channel);
    buses?.delete(this);
    if (buses?.size === 0) localBuses.delete(this.channel);
    this.sub.disconnect();
  }
}
