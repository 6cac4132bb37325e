import { randomUUID } from 'node:crypto';
import { RedisScript } from '../../shared/platform/redis/redis-script.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { createRedis, waitForRedis } from '../../shared/platform/redis/redis.js';
import { redisKeys } from '../../shared/platform/redis/redis-keys.js';
import { ProfileStore } from '../../shared/profiles/profile.store.js';
import { applyArgs, type ProfileEvent, type ProfileOp } from '../../shared/profiles/profile-ops.js';
import { uniquePrefix } from '../helpers/context.js';
import { deletePrefix } from '../helpers/redis-cleanup.js';

// The profile script groups identical ops of a job and applies each group once per new event;
// these tests hold it, against the real Redis, to what applying every event one by one means.
describe('ProfileStore.applyEvents (grouped ops, positional arguments)', () => {
  const prefix = uniquePrefix('profile');
  const keys = redisKeys(prefix);
  let redis: Redis;
  let store: ProfileStore;
  let job = 0;
  const apply = (userId: string, events: ProfileEvent[], jobId = `j${++job}`) => store.applyEvents('p', userId, jobId, events);
  const raw = (userId: string) => redis.hgetall(keys.profile('p', userId));

  beforeAll(async () => {
    redis = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', 'worker', 'profile-store-test');
    await waitForRedis(redis, 5000);
    store = new ProfileStore(redis, keys);
  });
  afterAll(async () => {
    await deletePrefix(redis, prefix);
    redis.disconnect();
  });

  it('counts each new event once: duplicates inside the job and from earlier jobs add nothing', async () => {
    const inc: ProfileOp = ['inc', 'dc:f:20240101', 1];
    expect(
      await apply('u1', [
        { dedupId: 'a', ts: 1, ops: [inc] },
        { dedupId: 'b', ts: 2, ops: [inc] },
        { dedupId: 'a', ts: 3, ops: [inc] },
        { ts: 4, ops: [inc] },
      ]),
    ).toBe(3);
    expect(
      await apply('u1', [
        { dedupId: 'b', ts: 5, ops: [inc] },
        { dedupId: 'c', ts: 6, ops: [inc, ['inc', 'dc:f:20240102', 2]] },
      ]),
    ).toBe(1);
    expect(await raw('u1')).toEqual({ 'dc:f:20240101': '4', 'dc:f:20240102': '2' });
  });

  it('a replayed job changes nothing and reports -1', async () => {
    const events: ProfileEvent[] = [
      { dedupId: 'r1', ts: 1, ops: [['inc', 'n', 1]] },
      { ts: 2, ops: [['inc', 'n', 1]] },
    ];
    expect(await apply('u2', events, 'same')).toBe(2);
    expect(await apply('u2', events, 'same')).toBe(-1);
    expect(await raw('u2')).toEqual({ n: '2' });
  });

  it('keeps minimum and maximum across grouped and separate events, skipping duplicates', async () => {
    expect(
      await apply('u3', [
        {
          dedupId: 'x',
          ts: 1,
          ops: [
            ['min', 'ft', 500],
            ['max', 'lt', 500],
          ],
        },
        {
          ts: 2,
          ops: [
            ['min', 'ft', 300],
            ['max', 'lt', 900],
          ],
        },
        { ts: 3, ops: [['min', 'ft', 300]] },
      ]),
    ).toBe(3);
    expect(
      await apply('u3', [
        {
          dedupId: 'x',
          ts: 4,
          ops: [
            ['min', 'ft', 1],
            ['max', 'lt', 10_000],
          ],
        },
        {
          ts: 5,
          ops: [
            ['min', 'ft', 400],
            ['max', 'lt', 1_763_800_000_123],
          ],
        },
      ]),
    ).toBe(1);
    expect(await raw('u3')).toEqual({ ft: '300', lt: '1763800000123' });
  });

  it('incnew counts a marker once however often it repeats', async () => {
    const ops: ProfileOp[] = [['incnew', 'dm:f:t1', 'dc:f:1', 1]];
    expect(
      await apply('u4', [
        { ts: 1, ops },
        { ts: 2, ops },
        { dedupId: 'd', ts: 3, ops: [['incnew', 'dm:f:t2', 'dc:f:1', 1]] },
      ]),
    ).toBe(3);
    expect(
      await apply('u4', [
        { dedupId: 'd', ts: 4, ops },
        { ts: 5, ops },
      ]),
    ).toBe(1);
    expect(await raw('u4')).toEqual({ 'dm:f:t1': '1', 'dm:f:t2': '1', 'dc:f:1': '2' });
  });

  it('user properties are last-write-wins by event time, later event on a tie, duplicates ignored', async () => {
    expect(
      await apply('u5', [
        { ts: 200, userProperties: { tier: { stringValue: 'gold' }, age: { longValue: '30' } } },
        { ts: 100, userProperties: { tier: { stringValue: 'old' } } },
        { ts: 200, userProperties: { age: { longValue: '31' } } },
      ]),
    ).toBe(3);
    await apply('u5', [{ dedupId: 'late', ts: 300, userProperties: { tier: { stringValue: 'platinum' } } }]);
    await apply('u5', [{ dedupId: 'late', ts: 400, userProperties: { tier: { stringValue: 'duplicate' } } }]);
    const profile = await store.get('p', 'u5');
    expect(profile.userProperties).toEqual({ tier: { stringValue: 'platinum' }, age: { longValue: '31' } });
  });

  it('takes a maximal request: 1,000 events with 50 properties each', async () => {
    const events: ProfileEvent[] = Array.from({ length: 1000 }, (_, i) => ({
      dedupId: `big-${i}`,
      ts: i,
      userProperties: Object.fromEntries(Array.from({ length: 50 }, (_, k) => [`p${k}`, { longValue: String(i) }])),
      ops: [['inc', `dc:f:${i % 7}`, 1]],
    }));
    expect(applyArgs(events, { profileTtl: 1, markersExpireAt: 1 }).args.length).toBeGreaterThan(200_000);
    expect(await apply('u6', events)).toBe(1000);
    const profile = await store.get('p', 'u6');
    expect(profile.userProperties.p49).toEqual({ longValue: '999' });
    expect(
      Object.entries(profile.fields)
        .filter(([k]) => k.startsWith('dc:'))
        .reduce((n, [, v]) => n + Number(v), 0),
    ).toBe(1000);
  });

  it('de-duplicates an insertId for 8 days of arrival whatever timestamp its retries carry, in at most 9 sets a user', async () => {
    const DAY = 86_400_000;
    const at = (ms: number) => new ProfileStore(redis, keys, { wallClock: () => ms });
    const now = Date.now();
    const ev = (ts: number): ProfileEvent[] => [{ dedupId: 'i:same', ts, ops: [['inc', 'n', 1]] }];
    expect(await at(now).applyEvents('p', 'u8', 'a', ev(now - 30 * DAY))).toBe(1);
    expect(await at(now).applyEvents('p', 'u8', 'b', ev(now))).toBe(0);
    expect(await at(now + 8 * DAY).applyEvents('p', 'u8', 'c', ev(now + 8 * DAY))).toBe(0);
    // Past the look-back of 9 arrival days the marker is no longer consulted (and has expired by then).
    expect(await at(now + 10 * DAY).applyEvents('p', 'u8', 'd', ev(now))).toBe(1);
    expect(await raw('u8')).toEqual({ n: '2' });
    const sets = await redis.keys(`${prefix}:u:{p:u8}:ins:*`);
    expect(sets.length).toBe(2);
    for (const k of sets) expect(await redis.object('ENCODING', k)).toBe('intset');
  });

  it('looks a job of more markers than one lookup takes up in slices: only the events in no set and not repeated in the job count', async () => {
    const DAY = 86_400_000;
    const at = (ms: number) => new ProfileStore(redis, keys, { wallClock: () => ms });
    const now = Date.now();
    const ev = (ids: number[]): ProfileEvent[] => ids.map((i) => ({ dedupId: `i:s-${i}`, ts: i, ops: [['inc', 'n', 1]] }));
    const range = (from: number, to: number) => Array.from({ length: to - from }, (_, k) => from + k);
    // yesterday: 0-1199 (past the first slice of 1,000); today, earlier: 2000-2099
    expect(await at(now - DAY).applyEvents('p', 'u9', 'y', ev(range(0, 1200)))).toBe(1200);
    expect(await at(now).applyEvents('p', 'u9', 't', ev(range(2000, 2100)))).toBe(100);
    // 2,600 events: 1,100 seen yesterday, 100 seen today, 1,300 new of which 100 repeat inside the job
    const job = ev([...range(100, 1200), ...range(2000, 2100), ...range(3000, 4200), ...range(3000, 3100), ...range(4200, 4300)]);
    expect(job.length).toBe(2600);
    expect(await at(now).applyEvents('p', 'u9', 'big', job)).toBe(1300);
    expect(await raw('u9')).toEqual({ n: String(1200 + 100 + 1300) });
    // every new marker is kept: the same events again add nothing
    expect(await at(now).applyEvents('p', 'u9', 'again', ev([...range(3000, 4300), 0, 2050]))).toBe(0);
  });

  it('works with a Redis that does not know the script (first use, or after a restart): falls back from EVALSHA to EVAL', async () => {
    // A body no Redis has seen stands for a flushed script cache; SCRIPT FLUSH would empty the
    // cache every other test file shares.
    const fresh = new RedisScript('fresh', `return ARGV[1] .. ' ${randomUUID()}'`);
    expect(await redis.script('EXISTS', fresh.sha)).toEqual([0]);
    expect(String(await fresh.run(redis, [], ['ran']))).toMatch(/^ran /);
    expect(await redis.script('EXISTS', fresh.sha)).toEqual([1]);
  });
});
