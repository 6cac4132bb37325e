import { randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import type { PropertyValue } from '../../shared/ingestion/index.js';
import type { RedisKeys } from '../../shared/platform/redis/redis-keys.js';
import { bullPrefix, QUEUE } from '../../shared/platform/queues.js';
import { parseProfile, userPropertyField, userPropertyTimeField, type StoredProfile } from '../../shared/profiles/index.js';

/** Redis access of the bench process: seeding, draining checks and clean-up, never on a measured path. */

export function benchPrefix(scenario: string): string {
  return `bench-${scenario}-${randomBytes(3).toString('hex')}`;
}

export function connectRedis(url: string): Redis {
  return new Redis(url, { maxRetriesPerRequest: null, connectionName: 'tds-bench' });
}

/** What one seeded profile holds: user properties (last-write-wins at `ts`) and raw aggregation fields. */
export interface SeedProfile {
  userProperties: Record<string, PropertyValue>;
  /** e.g. `dailyCountKey(dataFieldId, day)` → count (shared/profiles/profile-layout.ts) */
  fields?: Record<string, string>;
}

/**
 * The hash the ingestion workers write (shared/profiles/profile-layout.ts): each user property
 * as JSON with its timestamp in ms, aggregation fields as they are.
 */
export function profileHash(p: SeedProfile, tsMs: number): Record<string, string> {
  const h: Record<string, string> = {};
  for (const [name, v] of Object.entries(p.userProperties)) {
    h[userPropertyField(name)] = JSON.stringify(v);
    h[userPropertyTimeField(name)] = String(tsMs);
  }
  return { ...h, ...p.fields };
}

/** Writes `users` profiles with pipelines of `chunk` HSETs; profile i belongs to `userIdOf(i)`. */
export async function seedProfiles(
  redis: Redis,
  keys: RedisKeys,
  projectId: string,
  users: number,
  userIdOf: (i: number) => string,
  profileOf: (i: number) => SeedProfile,
  progress: (done: number) => void,
  chunk = 2000,
): Promise<void> {
  const ts = Date.now();
  for (let first = 0; first < users; first += chunk) {
    const p = redis.pipeline();
    for (let i = first; i < Math.min(users, first + chunk); i++) p.hset(keys.profile(projectId, userIdOf(i)), profileHash(profileOf(i), ts));
    const res = await p.exec();
    const failed = res?.find(([err]) => err);
    if (failed) throw failed[0];
    progress(Math.min(users, first + chunk));
  }
}

/** Reads profiles in pipelines (verification after a run). */
export async function readProfiles(redis: Redis, keys: RedisKeys, projectId: string, userIds: readonly string[], chunk = 2000): Promise<StoredProfile[]> {
  const out: StoredProfile[] = [];
  for (let first = 0; first < userIds.length; first += chunk) {
    const p = redis.pipeline();
    for (const id of userIds.slice(first, first + chunk)) p.hgetall(keys.profile(projectId, id));
    for (const [err, raw] of (await p.exec()) ?? []) {
      if (err) throw err;
      out.push(parseProfile(raw as Record<string, string>));
    }
  }
  return out;
}

/** Jobs of the service's events queue not finished yet, and jobs that failed. */
export async function eventsQueueState(queue: Queue): Promise<{ pending: number; failed: number }> {
  const c = await queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'waiting-children', 'failed');
  const failed = c.failed ?? 0;
  const pending = Object.entries(c).reduce((n, [k, v]) => (k === 'failed' ? n : n + v), 0);
  return { pending, failed };
}

export function eventsQueue(redis: Redis, prefix: string): Queue {
  return new Queue(QUEUE.events, { connection: redis, prefix: bullPrefix(prefix) });
}

/** Deletes every key under the prefix (the scenario's own prefix only). */
export async function deletePrefix(redis: Redis, prefix: string): Promise<number> {
  let cursor = '0';
  let deleted = 0;
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 5000);
    cursor = next;
    if (batch.length > 0) deleted += await redis.unlink(...batch);
  } while (cursor !== '0');
  return deleted;
}

/** Waits (bounded) until the events queue is empty, saying so every 5 s; returns the jobs left. */
export async function waitForDrain(queue: Queue, maxSec: number, progress: (message: string) => void): Promise<number> {
  const end = performance.now() + maxSec * 1000;
  let reported = performance.now();
  let state = await eventsQueueState(queue);
  while (state.pending > 0 && performance.now() < end) {
    if (performance.now() - reported >= 5000) {
      reported = performance.now();
      progress(`waiting for the events queue to drain: ${state.pending.toLocaleString('en')} jobs pending`);
    }
    await delay(100);
    state = await eventsQueueState(queue);
  }
  return state.pending;
}
