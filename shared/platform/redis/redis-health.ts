import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { scrubString } from '../logger.js';
import { UnavailableError } from '../errors.js';

/** Messages of errors that mean the connection to Redis failed (not a reply error of a command). */
const CONNECTION_ERROR =
  /Connection is closed|enableOfflineQueue|Command timed out|ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|Stream isn't writeable|max retries per request|Reached the max retries/i;

/** True for an error of the connection to Redis (refused, reset, closed, timed out), false for a reply error or anything else. */
export function isRedisConnectionError(err: unknown): boolean {
  return err instanceof Error && CONNECTION_ERROR.test(err.message);
}

/** A connection error, or the 503 of an operation that could not reach Redis (an enqueue that failed or timed out). */
export function isRedisUnavailable(err: unknown): boolean {
  return isRedisConnectionError(err) || (err instanceof UnavailableError && err.dependency === 'redis');
}

/**
 * An `error` listener for a BullMQ worker or queue: a connection error is logged at debug (the
 * process logs the outage itself once, see `RedisHealth`), anything else at warn.
 */
export function queueErrorLogger(log: Logger, msg: string): (err: Error) => void {
  return (err) => {
    if (isRedisUnavailable(err)) log.debug({ err }, msg);
    else log.warn({ err }, msg);
  };
}

export interface RedisHealthOptions {
  /** While Redis is down, how often a PING checks whether it is back. @defaultValue 250 */
  probeMs?: number;
  /** Redis is back once a PING answered and nothing failed for this long. @defaultValue 1000 */
  settleMs?: number;
  /** Told about every change: `false` when an outage begins, `true` when it ends. */
  onChange?: (up: boolean) => void;
  /** How long Redis has to answer a PING after a timeout before the outage is declared. @defaultValue 2000 */
  confirmMs?: number;
}

/** Failures that may be this process's own lateness rather than Redis's: a command's timer fired first. */
const TIMEOUT = /Command timed out|ETIMEDOUT/i;
/** A timeout that Redis's PING contradicts is logged at most this often. */
const SLOW_PROCESS_LOG_MS = 60_000;

/**
 * Whether this process reaches Redis, as its request-path connection sees it, so an outage is
 * logged once when it begins and once when it ends however many requests and jobs fail meanwhile
 * (a 3-second outage at 13,000 events/s used to log 12,000 errors with their stacks). It goes down
 * at the first connection failure: the connection's own error events (a refused reconnect) or a
 * request that failed for a connection reason (`failed`); it is back once a PING answers and
 * nothing failed for `settleMs`, so a Redis that keeps timing out stays one outage instead of
 * flapping.
 *
 * A timeout alone does not begin an outage: a process starved of CPU (the background process in
 * the idle class on a saturated machine) wakes with its commands' timers due before it reads the
 * replies waiting on its socket, and every command in flight "times out" against a Redis that
 * answered at once, and its connection attempt times out against a Redis that accepted it. A
 * timeout is therefore confirmed: a PING answered within `confirmMs` means Redis is up and this
 * process was late (a warning, at most once a minute); none answered begins the outage.
 */
export class RedisHealth {
  private outage: { since: number; reason: string; unavailable: number } | undefined;
  private lastFailureAt = 0;
  private probe: NodeJS.Timeout | undefined;
  private probing = false;
  private confirming = false;
  private slowLoggedAt = -Infinity;
  private closed = false;
  private readonly probeMs: number;
  private readonly settleMs: number;
  private readonly confirmMs: number;
  private readonly onError = (err: Error) => {
    if (isRedisConnectionError(err)) this.failed(err.message);
  };

  constructor(
    private readonly redis: Redis,
    private readonly log: Logger,
    private readonly opts: RedisHealthOptions = {},
  ) {
    this.probeMs = opts.probeMs ?? 250;
    this.settleMs = opts.settleMs ?? 1000;
    this.confirmMs = opts.confirmMs ?? 2000;
    redis.on('error', this.onError);
  }

  /** True during an outage this process has seen (and logged), and while a timeout is being confirmed. */
  get isDown(): boolean {
    return this.outage !== undefined || this.confirming;
  }

  /** A command or request failed for a connection reason: the first such failure begins an outage (logged once). */
  failed(reason: string): void {
    if (this.closed) return;
    this.lastFailureAt = performance.now();
    if (this.outage) return;
    if (!TIMEOUT.test(reason)) this.begin(reason);
    else if (!this.confirming) void this.confirm(reason);
  }

  /**
   * A timeout: an outage only if Redis answers no PING within `confirmMs`. PINGs are tried every
   * 100 ms: a starved process's connection may itself have timed out and be reconnecting, and its
   * first PING then fails at once.
   */
  private async confirm(reason: string): Promise<void> {
    this.confirming = true;
    const started = performance.now();
    const until = started + this.confirmMs;
    let answered = false;
    try {
      for (let left = this.confirmMs; left > 0 && !this.closed; left = until - performance.now()) {
        if (await this.pingWithin(left)) {
          answered = true;
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, Math.min(100, Math.max(0, until - performance.now()))));
      }
    } finally {
      this.confirming = false;
    }
    if (this.closed || this.outage) return;
    if (!answered) return this.begin(reason);
    if (started - this.slowLoggedAt < SLOW_PROCESS_LOG_MS) return;
    this.slowLoggedAt = started;
    this.log.warn(
      { dependency: 'redis', reason: scrubString(reason), confirmMs: Math.round(performance.now() - started) },
      'a Redis command or connection timed out but Redis answers: this process was slow (starved of CPU?), not an outage (logged at most once a minute)',
    );
  }

  /** Whether a PING is answered within `ms`. */
  private async pingWithin(ms: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    try {
      const ping = this.redis.ping();
      ping.catch(() => undefined); // its own failure after `ms` is no news
      const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('PING timed out')), ms)));
      await Promise.race([ping, late]);
      return true;
    } catch {
      return false;
    } finally {
      clearTimeout(timer);
    }
  }

  private begin(reason: string): void {
    this.outage = { since: Date.now(), reason, unavailable: 0 };
    this.log.error(
      { dependency: 'redis', reason: scrubString(reason) },
      'Redis unreachable: requests answer 503 with Retry-After and workers wait until it is back (logged once per outage; the 503s are counted in /metrics)',
    );
    this.opts.onChange?.(false);
    this.probe = setInterval(() => void this.check(), this.probeMs);
    this.probe.unref();
  }

  /** A request answered 503 during the outage (for the summary logged when it ends). */
  countUnavailable(): void {
    if (this.outage) this.outage.unavailable++;
  }

  private async check(): Promise<void> {
    if (this.probing || !this.outage || performance.now() - this.lastFailureAt < this.settleMs) return;
    this.probing = true;
    try {
      await this.redis.ping();
    } catch {
      return;
    } finally {
      this.probing = false;
    }
    const outage = this.outage;
    if (this.closed || !outage || performance.now() - this.lastFailureAt < this.settleMs) return;
    this.outage = undefined;
    clearInterval(this.probe);
    this.log.info({ dependency: 'redis', downMs: Date.now() - outage.since, unavailableResponses: outage.unavailable }, 'Redis reachable again');
    this.opts.onChange?.(true);
  }

  /** Stops watching (before the connection is closed on purpose, which is no outage). */
  close(): void {
    this.closed = true;
    clearInterval(this.probe);
    this.redis.off('error', this.onError);
  }
}
