import { LRUCache } from 'lru-cache';

/**
 * An LRU cache of at most `maxEntries` entries whose memory grows with use. lru-cache's `max`
 * preallocates its arrays for `max` entries up front (about 2.8 MB per 100,000, in every
 * process and thread that builds the cache); counting entries with `maxSize` bounds it the same
 * way without that.
 */
export function boundedLru<K extends NonNullable<unknown>, V extends NonNullable<unknown>>(maxEntries: number): LRUCache<K, V> {
  return new LRUCache<K, V>({ maxSize: maxEntries, sizeCalculation: () => 1 });
}
