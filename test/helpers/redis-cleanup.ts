import type { Cluster, Redis } from 'ioredis';
import { isCluster } from '../../shared/platform/redis/redis.js';

/**
 * Deletes every key under `prefix:` (and BullMQ's hash-tagged `{prefix}:` of a cluster) with SCAN
 * (never KEYS, which blocks Redis for every other test). On a Redis Cluster each primary is
 * scanned, and keys are unlinked one by one (they are in many slots).
 */
export async function deletePrefix(redis: Redis, prefix: string): Promise<void> {
  if (isCluster(redis)) {
    for (const node of (redis as unknown as Cluster).nodes('master')) {
      for (const match of [`${prefix}:*`, `{${prefix}}:*`]) {
        const stream = node.scanStream({ match, count: 1000 });
        for await (const batch of stream as AsyncIterable<string[]>) await Promise.all(batch.map((k) => node.unlink(k)));
      }
    }
    return;
  }
  const stream = redis.scanStream({ match: `${prefix}:*`, count: 1000 });
  for await (const batch of stream as AsyncIterable<string[]>) {
    if (batch.length > 0) await redis.unlink(...batch);
  }
}
