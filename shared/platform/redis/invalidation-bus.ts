import { Redis } from 'ioredis';
import type { RedisTarget } from './redis.js';
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
  /**
   * Set on delivery only: the change was made by this process, which must see it before its next
   * answer (read your own writes), where other processes may take up to a second.
   */
  local?: boolean;
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
  if (buses) for (const bus of buses) bus.receive(raw, true);
}

export interface InvalidationBusOptions {
  /** How often the subscriber connection is PINGed (allowed in subscribe mode). @defaultValue 500 */
  heartbeatMs?: number;
  /**
   * A connection silent this long (no PONG, or a handshake or SUBSCRIBE that never answers) is
   * taken for dead: `isListening` goes false and the connection is recycled. A half-open TCP
   * connection never closes on its own, so without this a process would trust its caches
   * forever while every invalidation is lost. Detection takes at most this plus a quarter of
   * `heartbeatMs`. @defaultValue 1500
   */
  silenceMs?: number;
}

export class InvalidationBus {
  private readonly sub: Redis;
  private readonly listeners = new Set<InvalidationListener>();
  private readonly heartbeatMs: number;
  private readonly silenceMs: number;
  private readonly timer: NodeJS.Timeout;
  private connected = false;
  private closed = false;
  /** Last sign of life of the current connection (a PONG, the subscription, or the start of a handshake). */
  private aliveAt = performance.now();
  private pingSentAt = -Infinity;
  private lastTickAt = performance.now();
  /** A late tick (the process was busy) may find a PONG still unread in the socket: judge at the next one. */
  private lateTickForgiven = false;
  private pingOutstanding = false;
  /** Bumped whenever the connection is replaced: a late PONG of an old one proves nothing. */
  private epoch = 0;

  /**
   * On a Redis Cluster (`target.redisClusterNodes`) the subscriber is a plain connection to one
   * node: PUBLISH is broadcast to every node of a cluster, so one node hears every message, and the
   * heartbeat below (PING on the subscribed connection) keeps its meaning. Each reconnection
   * attempt moves on to the next seed node, so a node that is gone is left behind.
   */
  constructor(
    target: string | RedisTarget,
    private readonly channel: string,
    private readonly log: Logger,
    opts: InvalidationBusOptions = {},
  ) {
    this.heartbeatMs = opts.heartbeatMs ?? 500;
    this.silenceMs = opts.silenceMs ?? 1500;
    const base = { maxRetriesPerRequest: null, retryStrategy: (t: number) => Math.min(t * 200, 2000), connectionName: 'invalidation' };
    const nodes = typeof target === 'string' ? undefined : target.redisClusterNodes;
    if (nodes && nodes.length > 0) {
      let next = 0;
      const sub: Redis = new Redis({
        ...base,
        host: nodes[0].host,
        port: nodes[0].port,
        retryStrategy: (t: number) => {
          next = (next + 1) % nodes.length;
          // ioredis reads host and port from its options at each connection attempt
          sub.options.host = nodes[next].host;
          sub.options.port = nodes[next].port;
          return base.retryStrategy(t);
        },
      });
      this.sub = sub;
    } else {
      this.sub = new Redis(typeof target === 'string' ? target : target.redisUrl, base);
    }
    this.sub.on('error', (err) => this.log.debug({ err }, 'invalidation subscriber error'));
    this.sub.on('ready', () => {
      const epoch = this.epoch;
      this.sub.subscribe(this.channel).then(
        () => {
          if (epoch !== this.epoch || this.closed) return;
          this.aliveAt = performance.now();
          this.connected = true;
          this.emit({ kind: 'all' });
        },
        // A close() while the subscription is in flight fails it; that is no fault worth a warning.
        (err) => {
          if (!this.closed) this.log.warn({ err }, 'invalidation subscribe failed');
        },
      );
    });
    this.sub.on('close', () => this.lost());
    this.sub.on('message', (_ch: string, raw: string) => this.receive(raw));
    this.timer = setInterval(() => this.heartbeat(), Math.max(10, Math.floor(this.heartbeatMs / 4)));
    this.timer.unref();
    let buses = localBuses.get(channel);
    if (!buses) localBuses.set(channel, (buses = new Set()));
    buses.add(this);
  }

  /** The connection is gone or untrustworthy: caches stop trusting themselves until it is back. */
  private lost(): void {
    this.epoch++;
    this.pingOutstanding = false;
    if (this.connected) {
      this.connected = false;
      this.emit({ kind: 'all' });
    }
  }

  private heartbeat(): void {
    if (this.closed) return;
    const now = performance.now();
    const late = now - this.lastTickAt > this.heartbeatMs;
    this.lastTickAt = now;
    const status = this.sub.status;
    // While ioredis is (re)connecting, its own retry strategy and connect timeout are in charge.
    if (status !== 'connect' && status !== 'ready') {
      this.aliveAt = now;
      return;
    }
    if (now - this.aliveAt > this.silenceMs) {
      if (late && !this.lateTickForgiven) {
        this.lateTickForgiven = true;
        return;
      }
      this.lateTickForgiven = false;
      this.log.warn({ silentMs: Math.round(now - this.aliveAt), status }, 'invalidation subscriber silent; reconnecting (caches check versions meanwhile)');
      this.lost();
      this.aliveAt = now;
      // destroy, not end(): a half-open peer would never complete a graceful close
      this.sub.stream?.destroy();
      return;
    }
    this.lateTickForgiven = false;
    if (status !== 'ready' || this.pingOutstanding || now - this.pingSentAt < this.heartbeatMs) return;
    const epoch = this.epoch;
    this.pingOutstanding = true;
    this.pingSentAt = now;
    this.sub.ping().then(
      () => {
        if (epoch !== this.epoch) return;
        this.pingOutstanding = false;
        // a connection that answers but is not subscribed (SUBSCRIBE failed) is no better than a silent one
        if (this.connected) this.aliveAt = performance.now();
      },
      () => {
        if (epoch === this.epoch) this.pingOutstanding = false;
      },
    );
  }

  /** One message as published on the channel (`local`: by this process); an unreadable one drops everything. */
  receive(raw: string, local = false): void {
    let msg: Invalidation;
    try {
      msg = JSON.parse(raw) as Invalidation;
    } catch {
      msg = { kind: 'all' };
    }
    this.emit(local ? { ...msg, local: true } : msg);
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
    clearInterval(this.timer);
    const buses = localBuses.get(this.channel);
    buses?.delete(this);
    if (buses?.size === 0) localBuses.delete(this.channel);
    this.sub.disconnect();
  }
}
