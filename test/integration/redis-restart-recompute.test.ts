import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { startTestService, projectWithKeys, type TestService } from '../helpers/service.js';
import { waitUntil } from '../helpers/context.js';
import { startPrivateRedis, type PrivateRedis } from '../helpers/private-redis.js';
import { utcDayOffset } from '../../shared/aggregation/data-field-values.js';
import { bullPrefix, QUEUE } from '../../shared/platform/queues.js';

/**
 * A Redis that restarts may have lost its last second of writes (`appendfsync everysec` and a
 * power cut): profile counts of events already in ClickHouse then read low. The service notices
 * the restart (Redis's `run_id` changed) and recomputes every profile from ClickHouse at once,
 * once per restart. A private redis-server is killed and started again on its own files; the
 * lost writes are played by lowering stored counts before the restart.
 */

const DAY = 86_400_000;
const iso = (ms: number) => new Date(ms).toISOString();

let redis: PrivateRedis;
let s: TestService;
let keys: Awaited<ReturnType<typeof projectWithKeys>>;
let queue: Queue;
let field: string;

async function countOf(userId: string): Promise<unknown> {
  const res = await s.admin('GetUserProfile', { projectId: keys.projectId, userId });
  return res.status === 200 ? res.body.profile.dataFields[field] : undefined;
}

/** The jobs of the aggregations queue a restart enqueued (the fan-out over every project), in any state. */
async function restartJobs(): Promise<string[]> {
  const jobs = await queue.getJobs(['waiting', 'active', 'delayed', 'prioritized', 'completed', 'failed']);
  return jobs.filter((j) => j.name === 'redis-restart').map((j) => String(j.id));
}

beforeAll(async () => {
  redis = await startPrivateRedis();
  s = await startTestService({ REDIS_URL: redis.url });
  keys = await projectWithKeys(s, 'restarts');
  const fields = await s.post(
    '/v1/GetDataFields',
    {
      projectId: keys.projectId,
      dataFieldParams: [{ eventDataFieldParams: { eventSchemaName: 'purchase', dailyCountAggregation: { windowName: 'LAST_7D' } } }],
    },
    { 'x-api-key': keys.management },
  );
  field = fields.body.dataFields[0].dataFieldId;
  const monitor = new Redis(redis.url, { maxRetriesPerRequest: null });
  queue = new Queue(QUEUE.aggregations, { connection: monitor, prefix: bullPrefix(s.ctx.config.redisPrefix) });
  queue.on('error', () => undefined);
}, 120_000);

afterAll(async () => {
  await queue?.close();
  await s?.stop();
  await redis?.stop();
});

describe('Redis restarts', () => {
  it('a restart (new run_id) recomputes the profiles from ClickHouse at once, once; a reconnection alone does not', { timeout: 120_000 }, async () => {
    const now = Date.now();
    const events = [0, 1, 2].map((i) => ({ eventName: 'purchase', clientEventTimestamp: iso(now - (i === 2 ? DAY : 0)), insertId: `p${i}` }));
    expect((await s.post('/v1/LogEvents', { projectId: keys.projectId, userId: 'u1', events }, { 'x-api-key': keys.logEvents })).status).toBe(200);
    await waitUntil(async () => (await countOf('u1')) === '3', 20_000, 100);

    // A reconnection of every connection to the same Redis is no restart.
    const runId = redis.runId();
    const admin = new Redis(redis.url);
    await admin.call('CLIENT', 'KILL', 'TYPE', 'normal');
    admin.disconnect();
    await waitUntil(async () => (await countOf('u1')) === '3', 10_000, 100);

    // The writes of the last second before the crash are lost: the profile's counts read low.
    const profile = s.ctx.keys.profile(keys.projectId, 'u1');
    await s.ctx.redis.hset(profile, `dc:${field}:${utcDayOffset(now, 0)}`, '1', `dc:${field}:${utcDayOffset(now, -1)}`, '0');
    expect(await countOf('u1')).toBe('1');
    expect(await restartJobs()).toEqual([]);

    await redis.kill();
    await redis.start();
    expect(redis.runId()).not.toBe(runId);
    // repaired from ClickHouse without any call, long before the hourly run
    await waitUntil(async () => (await countOf('u1')) === '3', 30_000, 200);
    const jobs = await restartJobs();
    expect(jobs).toEqual([`redis-restart-${redis.runId()}`]);
    // the job completes just after the profile it wrote is read back
    const recomputes = async () =>
      (await queue.getJobs(['completed'])).filter((j) => j.name === 'recompute' && j.data.projectId === keys.projectId && j.data.reason === 'redis_restart');
    await waitUntil(async () => (await recomputes()).length > 0, 10_000, 100);
    expect(await recomputes()).toHaveLength(1);

    // Later checks (another reconnection) see the same run_id: nothing more is enqueued.
    const again = new Redis(redis.url);
    await again.call('CLIENT', 'KILL', 'TYPE', 'normal');
    again.disconnect();
    await new Promise((r) => setTimeout(r, 2000));
    await waitUntil(async () => (await countOf('u1')) === '3', 10_000, 100);
    expect(await restartJobs()).toEqual(jobs);
  });
});
