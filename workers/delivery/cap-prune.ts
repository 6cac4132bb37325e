import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { capCounterDay, capCounterPattern } from '../../shared/profiles/index.js';

const DAY_MS = 86_400_000;

/** How long a cap counter's day is kept: the longest window a cap may name (LAST_365D). */
export const CAP_COUNTER_KEEP_DAYS = 365;

/**
 * Drops the frequency-cap counters that no window can read any more (days before the last 365),
 * so profiles do not grow for ever with one field per capped treatment and day. Walks the
 * profiles matching `profilePattern` (SCAN, then HSCAN of the cap counter fields of each): bounded
 * memory, no long-running command. Run once a day by the scheduler.
 */
export async function pruneCapCounters(redis: Redis, profilePattern: string, nowMs: number, log?: Logger): Promise<number> {
  const cutoff = Math.floor(nowMs / DAY_MS) - CAP_COUNTER_KEEP_DAYS + 1;
  let cursor = '0';
  let removed = 0;
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', profilePattern, 'COUNT', 1000);
    cursor = next;
    for (const key of keys) removed += await pruneProfile(redis, key, cutoff);
  } while (cursor !== '0');
  if (removed > 0) log?.info({ removed }, 'stale frequency-cap counters removed from profiles');
  return removed;
}

async function pruneProfile(redis: Redis, key: string, cutoff: number): Promise<number> {
  const stale: string[] = [];
  let cursor = '0';
  do {
    const [next, flat] = await redis.hscan(key, cursor, 'MATCH', capCounterPattern(), 'COUNT', 500);
    cursor = next;
    for (let i = 0; i < flat.length; i += 2) {
      const day = capCounterDay(flat[i]);
      if (day !== undefined && day < cutoff) stale.push(flat[i]);
    }
  } while (cursor !== '0');
  return stale.length === 0 ? 0 : redis.hdel(key, ...stale);
}
