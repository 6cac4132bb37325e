import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Cluster } from 'ioredis';
import { Queue } from 'bullmq';
import { call, createProjectWithKeys, createTestApp, type TestApp } from '../helpers/context.js';
import { startRedisCluster, type TestRedisCluster } from '../helpers/redis-cluster.js';
import { bullPrefix, QUEUE } from '../../shared/platform/queues.js';
import { UserDeletionStore } from '../../shared/profiles/user-deletion.store.js';
import { queueConnection } from '../../shared/platform/redis/redis.js';

/**
 * DeleteUserData on a real three-primary Redis Cluster: the user's keys (one slot, on
 * whichever node holds it) are all gone, the tombstone is in the project's slot, and the
 * ClickHouse deletion is queued (no workers here: it waits in the queue, which is the point of a
 * durable job).
 */
let cluster: TestRedisCluster;
let t: TestApp;

beforeAll(async () => {
  cluster = await startRedisCluster();
  t = await createTestApp({ REDIS_CLUSTER_NODES: cluster.nodes });
}, 120_000);

afterAll(async () => {
  try {
    await t?.close();
  } finally {
    await cluster?.stop();
  }
}, 60_000);

/** Every key of the user on every primary. */
async function userKeys(projectId: string, userId: string): Promise<string[]> {
  const prefix = t.ctx.keys.userKeyPrefix(projectId, userId);
  const out: string[] = [];
  for (const node of (t.ctx.redis as unknown as Cluster).nodes('master')) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', `${t.ctx.config.redisPrefix}:u:*`, 'COUNT', 1000);
      cursor = next;
      out.push(...keys.filter((k) => k.startsWith(prefix)));
    } while (cursor !== '0');
  }
  return out;
}

describe('DeleteUserData on a Redis Cluster', () => {
  it('erases every key of the user, keeps the others, and queues the ClickHouse deletion', async () => {
    const p = await createProjectWithKeys(t);
    const users = Array.from({ length: 12 }, (_, i) => `user-${i}*{x}`);
    const { profiles } = t.ctx.profiles;
    for (const u of users)
      await profiles.applyEvents(p.projectId, u, `job-${u}`, [
        { dedupId: 'i:a', ts: Date.now(), userProperties: { tier: { stringValue: 'gold' } }, ops: [['inc', 'n', 1]] },
      ]);
    for (const u of users) expect((await userKeys(p.projectId, u)).length).toBe(4); // profile, job marker, insertId markers, in-flight hash

    const victims = users.slice(0, 6);
    for (const u of victims) expect(await call(t, 'DeleteUserData', p.management, { projectId: p.projectId, userId: u })).toEqual({ status: 200, body: {} });
    for (const u of victims) expect(await userKeys(p.projectId, u)).toEqual([]);
    for (const u of users.slice(6)) expect((await t.ctx.profiles.profiles.get(p.projectId, u)).fields.n).toBe('1');

    const store = new UserDeletionStore(t.ctx.redis, t.ctx.keys);
    const at = await store.deletedAt(users.map((userId) => ({ projectId: p.projectId, userId })));
    expect(at.slice(0, 6).every((ms) => typeof ms === 'number')).toBe(true);
    expect(at.slice(6).every((ms) => ms === undefined)).toBe(true);
    expect((await store.pending(p.projectId)).size).toBe(6);

    const queue = new Queue(QUEUE.userDeletions, { connection: queueConnection(t.ctx.redis), prefix: bullPrefix(t.ctx.config.redisPrefix, t.ctx.redis) });
    try {
      expect(await queue.getWaitingCount()).toBe(6);
    } finally {
      await queue.close();
    }
  }, 60_000);

  it('erases the pre-login ids merged into the user too, each in its own slot', async () => {
    const p = await createProjectWithKeys(t);
    const [user, temp] = ['signed-in{a}', 'pre-login{b}'];
    const { keys } = t.ctx;
    const { profiles } = t.ctx.profiles;
    for (const u of [user, temp]) await profiles.applyEvents(p.projectId, u, `job-${u}`, [{ dedupId: `i:${u}`, ts: Date.now(), ops: [['inc', 'n', 1]] }]);
    // the identity merge's Redis steps (its ClickHouse copy needs workers)
    await profiles.claimAlias(p.projectId, temp, user);
    await profiles.mergeProfile(p.projectId, temp, user);
    await profiles.clearMerged(p.projectId, temp);
    expect(await (t.ctx.redis as unknown as Cluster).cluster('KEYSLOT', keys.profile(p.projectId, user))).not.toBe(
      await (t.ctx.redis as unknown as Cluster).cluster('KEYSLOT', keys.profile(p.projectId, temp)),
    );
    expect((await profiles.get(p.projectId, user)).mergedFrom).toEqual([temp]);
    expect(await userKeys(p.projectId, temp)).not.toEqual([]);

    expect(await call(t, 'DeleteUserData', p.management, { projectId: p.projectId, userId: user })).toEqual({ status: 200, body: {} });
    for (const u of [user, temp]) expect(await userKeys(p.projectId, u)).toEqual([]);
    const store = new UserDeletionStore(t.ctx.redis, keys);
    expect([...(await store.pending(p.projectId)).keys()].sort()).toEqual([temp, user].sort());
    const queue = new Queue(QUEUE.userDeletions, { connection: queueConnection(t.ctx.redis), prefix: bullPrefix(t.ctx.config.redisPrefix, t.ctx.redis) });
    try {
      const job = (await queue.getWaiting()).find((j) => j.data.projectId === p.projectId);
      expect(job?.data).toMatchObject({ userId: user, mergedIds: [temp] });
    } finally {
      await queue.close();
    }
  }, 60_000);
});
