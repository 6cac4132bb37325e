import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedis, type Redis } from '../../shared/platform/redis/redis.js';
import { LARGE_SCRIPT_CALL_ARGS, RedisScript } from '../../shared/platform/redis/redis-script.js';
import { uniquePrefix } from '../helpers/context.js';
import { deletePrefix } from '../helpers/redis-cleanup.js';
import { startRedisCluster, type TestRedisCluster } from '../helpers/redis-cluster.js';

/**
 * A script call of more than LARGE_SCRIPT_CALL_ARGS arguments is built without ioredis's
 * flattening (the recompute's writes); it must reach Redis exactly as a small one does: every key
 * and argument in order, numbers as their decimal strings, routed by its keys on a Cluster, and
 * sent again as EVAL when Redis has lost the script.
 */
const SUMMARY = new RedisScript(
  'large-call-summary',
  `local s = 0
  for i = 1, #ARGV do s = s + tonumber(ARGV[i]) end
  redis.call('SET', KEYS[1], s)
  return {#KEYS, #ARGV, s, KEYS[#KEYS], ARGV[#ARGV]}`,
);

function call(keyCount: number, argCount: number, tag: string): { keys: string[]; args: (string | number)[]; sum: number } {
  const keys = Array.from({ length: keyCount }, (_, i) => `${tag}:k${i}`);
  // numbers and strings mixed, as callers pass them
  const args = Array.from({ length: argCount }, (_, i) => (i % 2 === 0 ? i : String(i)));
  return { keys, args, sum: (argCount * (argCount - 1)) / 2 };
}

async function expectSummaries(redis: Redis, tag: string): Promise<void> {
  for (const [keyCount, argCount] of [
    [1, 10],
    [2, LARGE_SCRIPT_CALL_ARGS + 1],
    [3_000, 20_000],
  ]) {
    const c = call(keyCount, argCount, tag);
    expect(keyCount + argCount + 2 >= LARGE_SCRIPT_CALL_ARGS).toBe(keyCount > 1);
    expect(await SUMMARY.run(redis, c.keys, c.args)).toEqual([keyCount, argCount, c.sum, c.keys.at(-1), String(argCount - 1)]);
    expect(await redis.get(c.keys[0])).toBe(String(c.sum));
  }
}

describe('large script calls', () => {
  const prefix = uniquePrefix('largecall');
  let cluster: TestRedisCluster;
  const clients: Redis[] = [];
  beforeAll(async () => {
    cluster = await startRedisCluster();
  }, 60_000);
  afterAll(async () => {
    for (const c of clients) c.disconnect();
    await cluster?.stop();
    const r = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', 'worker');
    await deletePrefix(r, prefix);
    r.disconnect();
  });

  it.each(['store', 'worker', 'producer'] as const)('reach one Redis whole, with the %s profile, and again as EVAL after SCRIPT FLUSH', async (profile) => {
    const redis = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', profile);
    clients.push(redis);
    // the producer profile has no offline queue: its commands need the connection up
    if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve));
    await expectSummaries(redis, `${prefix}:${profile}:{u}`);
    await redis.script('FLUSH');
    await expectSummaries(redis, `${prefix}:${profile}:{v}`);
  });

  it('reach the node of their keys on a Redis Cluster, and again as EVAL after SCRIPT FLUSH on every node', async () => {
    const nodes = cluster.ports.map((port) => ({ host: '127.0.0.1', port }));
    const redis = createRedis({ redisUrl: 'redis://unused', redisClusterNodes: nodes }, 'store');
    clients.push(redis);
    // tags in different slots, so the calls go to different primaries
    for (const tag of ['{a}', '{b}', '{c}', '{d}']) await expectSummaries(redis, `${prefix}:${tag}`);
    for (const n of (redis as unknown as import('ioredis').Cluster).nodes('master')) await n.script('FLUSH');
    await expectSummaries(redis, `${prefix}:{e}`);
  }, 60_000);
});
