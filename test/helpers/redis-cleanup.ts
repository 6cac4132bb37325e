import type { Redis } from 'ioredis';

/** Deletes every key under `prefix:` with SCAN (never KEYS, which blocks Redis for every other test). */
export async function deletePrefix(redis: Redis, prefix: string): Promise<void> {
  const stream = redis.scanStream({ match: `${prefix}:*`, count: 1000 });
  for await (const batch of stream as AsyncIterable<string[]>) {
    if (batch.length > 0) await redis.unlink(...batch);
  }
}
