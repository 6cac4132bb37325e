import type { LRUCache } from 'lru-cache';
import { boundedLru } from './bounded-lru.js';

interface Bucket {
  tokens: number;
  /** When `tokens` was last brought up to date (ms, monotonic). */
  at: number;
  /** This bucket's sustained rate (tokens per second), its refill per ms and its capacity. */
  rate: number;
  perMs: number;
  capacity: number;
}

export interface TokenBucketsOptions {
  /** Tokens added per second: the sustained rate of a bucket taken without a rate of its own. */
  ratePerSecond: number;
  /** Tokens a full bucket of that rate holds: the burst. A bucket of another rate holds as many seconds of it. */
  capacity: number;
  /** Buckets kept at most (least recently used go first; a dropped bucket was idle, so full). */
  maxBuckets: number;
  /** Monotonic clock in ms. @defaultValue performance.now */
  now?: () => number;
}

/**
 * Token buckets by id, in this process. `take` is synchronous and allocates nothing for a known
 * id, so the request path can call it from a callback hook without a promise.
 * Memory is bounded by `maxBuckets` whatever ids are presented.
 */
export class TokenBuckets {
  private readonly buckets: LRUCache<string, Bucket>;
  private readonly rate: number;
  /** Seconds of its rate a full bucket holds. */
  private readonly burstSeconds: number;
  private readonly now: () => number;

  constructor(opts: TokenBucketsOptions) {
    this.buckets = boundedLru(opts.maxBuckets);
    this.rate = opts.ratePerSecond;
    this.burstSeconds = opts.capacity / opts.ratePerSecond;
    this.now = opts.now ?? (() => performance.now());
  }

  private refilled(id: string, rate: number): Bucket {
    const now = this.now();
    const b = this.buckets.get(id);
    if (b === undefined) {
      const capacity = rate * this.burstSeconds;
      const fresh = { tokens: capacity, at: now, rate, perMs: rate / 1000, capacity };
      this.buckets.set(id, fresh);
      return fresh;
    }
    if (b.rate !== rate) {
      // the id's rate changed (rare): the same fill, at the new rate
      b.rate = rate;
      b.perMs = rate / 1000;
      b.capacity = rate * this.burstSeconds;
      b.tokens = Math.min(b.tokens, b.capacity);
    }
    if (now > b.at) {
      b.tokens = Math.min(b.capacity, b.tokens + (now - b.at) * b.perMs);
      b.at = now;
    }
    return b;
  }

  /**
   * Takes one token: 0 when there was one, else the ms until there will be (nothing taken).
   * `ratePerSecond`: the id's own rate, when it has one.
   */
  take(id: string, ratePerSecond = this.rate): number {
    const b = this.refilled(id, ratePerSecond);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return (1 - b.tokens) / b.perMs;
  }

  /** Gives back a token taken for something that turned out not to count. */
  refund(id: string): void {
    const b = this.buckets.get(id);
    if (b !== undefined) b.tokens = Math.min(b.capacity, b.tokens + 1);
  }

  /** Buckets held (for tests and metrics). */
  get size(): number {
    return this.buckets.size;
  }
}
