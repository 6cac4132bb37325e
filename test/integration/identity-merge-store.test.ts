import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { createRedis, waitForRedis } from '../../shared/platform/redis/redis.js';
import { redisKeys } from '../../shared/platform/redis/redis-keys.js';
import { ProfileStore } from '../../shared/profiles/profile.store.js';
import type { ProfileEvent } from '../../shared/profiles/profile-ops.js';
import { uniquePrefix } from '../helpers/context.js';
import { deletePrefix } from '../helpers/redis-cleanup.js';

/**
 * The identity merge's Redis steps against the real Redis, field kind by field kind: claim (first wins), the
 * marker-guarded merge of a pre-login profile into the user's, the clear down to the alias, and
 * jobs of the pre-login id applied to the user afterwards.
 */
describe('ProfileStore identity merge steps', () => {
  const prefix = uniquePrefix('merge');
  const keys = redisKeys(prefix);
  let redis: Redis;
  let store: ProfileStore;
  let job = 0;
  const apply = (userId: string, events: ProfileEvent[]) => store.applyEventsTo('p', userId, `j${++job}`, events);
  const raw = (userId: string) => redis.hgetall(keys.profile('p', userId));

  beforeAll(async () => {
    redis = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', 'worker', 'merge-store-test');
    await waitForRedis(redis, 5000);
    store = new ProfileStore(redis, keys);
  });
  afterAll(async () => {
    await deletePrefix(redis, prefix);
    redis.disconnect();
  });

  it('merges each kind of field by its rule, once, and redirects the pre-login id afterwards', async () => {
    // T: newer `tier`, older `name`, counts, extremes, a distinct marker, a cap counter, an insertId
    await apply('T', [
      {
        dedupId: 'i:x1',
        ts: 200,
        userProperties: { tier: { stringValue: 'silver' }, name: { stringValue: 'anon' } },
        ops: [
          ['inc', 'dc:f:20260101', 1],
          ['min', 'ft:f', 200],
          ['max', 'lt:f', 200],
          ['incnew', 'dm:g:trk1', 'dc:g:20260101', 1],
          ['inc', 'cap:v:7:20000', 1],
        ],
      },
    ]);
    await redis.hset(keys.profile('p', 'T'), 'ut:name', '50');
    await apply('U', [
      {
        dedupId: 'i:y1',
        ts: 100,
        userProperties: { tier: { stringValue: 'gold' }, name: { stringValue: 'Alice' } },
        ops: [
          ['inc', 'dc:f:20260101', 2],
          ['min', 'ft:f', 100],
          ['max', 'lt:f', 100],
          ['incnew', 'dm:g:trk1', 'dc:g:20260101', 1],
          ['inc', 'cap:v:7:20000', 3],
        ],
      },
    ]);
    expect(await store.claimAlias('p', 'T', 'U')).toEqual({ owner: 'U', pending: true });
    expect(await store.claimAlias('p', 'T', 'V')).toEqual({ owner: 'U', pending: true }); // first claim wins
    expect(await store.mergeProfile('p', 'T', 'U')).toBe(true);
    expect(await store.mergeProfile('p', 'T', 'U')).toBe(false); // a retry applies nothing
    const u = await raw('U');
    expect(u).toMatchObject({
      'up:tier': JSON.stringify({ stringValue: 'silver' }), // T's is newer
      'up:name': JSON.stringify({ stringValue: 'Alice' }), // U's is newer
      'dc:f:20260101': '3',
      'ft:f': '100',
      'lt:f': '200',
      'cap:v:7:20000': '4',
      'dm:g:trk1': '1',
    });
    expect(u['merged:T']).toBeDefined();
    await store.clearMerged('p', 'T');
    expect(await raw('T')).toEqual({ '@alias': 'U', '@done': '1' });
    expect(await store.claimAlias('p', 'T', 'U')).toEqual({ owner: 'U', pending: false });
    expect(await redis.ttl(keys.profile('p', 'T'))).toBeGreaterThan(0);

    // reads of either id give the user's profile
    const viaT = await store.get('p', 'T');
    expect(viaT.mergedInto).toBe('U');
    const viaU = await store.get('p', 'U');
    expect(viaU.mergedFrom).toEqual(['T']);
    expect(viaT.fields).toEqual(viaU.fields);
    expect(viaU.fields['@alias']).toBeUndefined();

    // a job of T now goes to U; T's insertId markers came along, so a re-sent event is a duplicate
    const redirected: string[] = [];
    expect(
      await store.applyEventsTo('p', 'T', 'late', [{ dedupId: 'i:x2', ts: 300, ops: [['inc', 'dc:f:20260101', 1]] }], async (to) => void redirected.push(to)),
    ).toEqual({ applied: 1, userId: 'U' });
    expect(redirected).toEqual(['U']);
    expect(await apply('U', [{ dedupId: 'i:x1', ts: 400, ops: [['inc', 'dc:f:20260101', 1]] }])).toEqual({ applied: 0, userId: 'U' });
    expect((await raw('U'))['dc:f:20260101']).toBe('4');
    expect(await raw('T')).toEqual({ '@alias': 'U', '@done': '1' });
    // the job's marker is the user's, and the pre-check follows the alias to it
    expect(
      await store.resolveUnits([
        { projectId: 'p', userId: 'T', id: 'late' },
        { projectId: 'p', userId: 'T', id: 'never' },
      ]),
    ).toEqual([
      { unit: { projectId: 'p', userId: 'U', id: 'late' }, applied: true },
      { unit: { projectId: 'p', userId: 'U', id: 'never' }, applied: false },
    ]);
    expect(await store.canonicalUser('p', 'T')).toBe('U');
    expect(await store.canonicalUser('p', 'U')).toBe('U');
  });

  it('never claims a user of its own: one marked as a signed-in side, or one with merged ids (profiles from before the mark)', async () => {
    // the mark is durable in the profile, with the profile's TTL, and is no field of the profile's data
    expect(await store.markSignedIn('p', 'S')).toBeUndefined();
    expect(await store.markSignedIn('p', 'S')).toBeUndefined();
    expect(Object.keys(await raw('S'))).toEqual(['@signedIn']);
    expect(await redis.ttl(keys.profile('p', 'S'))).toBeGreaterThan(0);
    expect((await store.get('p', 'S')).fields).toEqual({});
    expect(await store.claimAlias('p', 'S', 'V')).toEqual({ refused: 'signed-in' });
    expect(await raw('S')).not.toHaveProperty('@alias');
    // merged ids without the mark: refused as well
    await apply('M', [{ ts: 1, ops: [['inc', 'dc:f:20260101', 1]] }]);
    await redis.hset(keys.profile('p', 'M'), 'merged:old-anon', '1');
    expect(await store.claimAlias('p', 'M', 'V')).toEqual({ refused: 'has-merged-ids' });
    expect(await raw('M')).not.toHaveProperty('@alias');
    // an id already claimed reports its owner, whatever asks (a retry of the merge stays exactly-once)
    expect(await store.claimAlias('p', 'A', 'S')).toEqual({ owner: 'S', pending: true });
    expect(await store.claimAlias('p', 'A', 'V')).toEqual({ owner: 'S', pending: true });
    // an alias is not marked: the caller is told whom it stands for
    expect(await store.markSignedIn('p', 'A')).toBe('S');
    expect(await raw('A')).not.toHaveProperty('@signedIn');
  });
});
