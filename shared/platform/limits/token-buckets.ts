import type { LRUCache } from 'lru-cache';
import { boundedLru } from './bounded-lru.js';

interface Bucket {
  tokens: number;
  /** When `tokens` was last brought up to date (ms, monotonic). */
  at: number;
}

export interface TokenBucketsOptions {
  /** Tokens added per second: the sustained rate. */
  ratePerSecond: number;
  /** Tokens a full bucket holds: the burst. */
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
  private readonly perMs: number;
  private readonly capacity: number;
  private readonly now: () => number;

  constructor(opts: TokenBucketsOptions) {
    this.buckets = boundedLru(opts.maxBuckets);
    this.perMs = opts.ratePerSecond / 1000;
    this.capacity = opts.capacity;
    this.now = opts.now ?? (() => performance.now());
  }

  private refilled(id: string): Bucket {
    const now = this.now();
    const b = this.buckets.get(id);
    if (b === undefined) {
      const fresh = { tokens: this.capacity, at: now };
      this.buckets.set(id, fresh);
      return fresh;
    }
    if (now > b.at) {
      b.tokens = Math.min(this.capacity, b.tokens + (now - b.at) * this.perMs);
      b.at = now;
    }
    return b;
  }

  /** Takes one token: 0 when there was one, else the ms until there will be (nothing taken). */
  take(id: string): number {
    const b = this.refilled(id);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return (1 - b.tokens) / this.perMs;
  }

  /** Gives back a token taken for something that turned out not to count. */
  refund(id: string): void {
    const b = this.buckets.get(id);
    if (b !== undefined) b.tokens = Math.min(this.capacity, b.tokens + 1);
  }

  /** Buckets held (for tests and metrics). */
  get size(): number {
    return this.buckets.size;
  }
}
