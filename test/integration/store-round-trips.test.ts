import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { createRedis, sendsCommandsTogether, waitForRedis } from '../../shared/platform/redis/redis.js';
import { redisKeys } from '../../shared/platform/redis/redis-keys.js';
import { ProfileStore } from '../../shared/profiles/profile.store.js';
import { UserDeletionStore } from '../../shared/profiles/user-deletion.store.js';
import { uniquePrefix } from '../helpers/context.js';
import { deletePrefix } from '../helpers/redis-cleanup.js';

/**
 * The workers' stores read job markers, aliases and deletions, and shorten markers, as a
 * `pipeline()` on a plain connection and one command at a time where commands go out together
 * anyway (the workers' store connection and the API's, corked for each turn): all must answer the same.
 */
describe.each(['worker', 'store', 'producer'] as const)('job markers, aliases and deletions on a %s connection', (profile) => {
  const prefix = uniquePrefix(`rt-${profile}`);
  const keys = redisKeys(prefix);
  let redis: Redis;
  let profiles: ProfileStore;
  let deletions: UserDeletionStore;

  beforeAll(async () => {
    redis = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', profile, `round-trips-${profile}`);
    await waitForRedis(redis, 5000);
    profiles = new ProfileStore(redis, keys);
    deletions = new UserDeletionStore(redis, keys);
  });
  afterAll(async () => {
    await deletePrefix(redis, prefix);
    redis.disconnect();
  });

  it('is the connection kind the test means', () => {
    expect(sendsCommandsTogether(redis)).toBe(profile !== 'worker');
  });

  it('tells applied units, follows aliases, and shortens the markers of completed jobs', async () => {
    expect(await profiles.applyEvents('p', 'alice', 'j1', [{ dedupId: 'i:1', ts: 1 }])).toBe(1);
    await redis.hset(keys.profile('p', 'temp'), '@alias', 'alice');
    const units = [
      { projectId: 'p', userId: 'alice', id: 'j1' },
      { projectId: 'p', userId: 'alice', id: 'j2' },
      { projectId: 'p', userId: 'temp', id: 'j1' },
      { projectId: 'p', userId: 'bob', id: 'j1' },
    ];
    expect(await profiles.applied(units)).toEqual([true, false, false, false]);
    const resolved = await profiles.resolveUnits(units);
    expect(resolved.map((r) => [r.unit.userId, r.applied])).toEqual([
      ['alice', true],
      ['alice', false],
      ['alice', true],
      ['bob', false],
    ]);
    const marker = keys.jobMarker('p', 'alice', 'j1');
    expect(await redis.ttl(marker)).toBeGreaterThan(120);
    await profiles.expireJobMarkers([{ projectId: 'p', userId: 'alice', id: 'j1' }], [], 60);
    const ttl = await redis.ttl(marker);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(60);
  });

  it('answers each user’s deletion time, across projects with and without deletions', async () => {
    await deletions.tombstone('p', ['gone'], 5_000);
    expect(
      await deletions.deletedAt([
        { projectId: 'p', userId: 'gone' },
        { projectId: 'p', userId: 'here' },
        { projectId: 'q', userId: 'gone' },
      ]),
    ).toEqual([5_000, undefined, undefined]);
    expect(await deletions.deletedAt([{ projectId: 'q', userId: 'x' }])).toEqual([undefined]);
  });
});
