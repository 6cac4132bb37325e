import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import { bullPrefix, INGEST_JOB_OPTIONS } from '../../shared/platform/queues.js';
import { createRedis, queueConnection, waitForRedis, type Redis } from '../../shared/platform/redis/redis.js';
import { EnqueueBatcher } from '../../shared/ingestion/enqueue-batcher.queue.js';
import { uniquePrefix } from '../helpers/context.js';
import { deletePrefix } from '../helpers/redis-cleanup.js';

/**
 * The producers' batcher against a real BullMQ queue: a lone job goes by one script call, several
 * by one pipeline, with the same job ids, options and at-most-once adds either way. A pipeline on
 * BullMQ's connection costs about 40 µs to build (ioredis copies its scripts onto each one), so
 * a lone request of a quiet turn is not made to pay it.
 */
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const prefix = uniquePrefix('enqbatch');
let redis: Redis;
let queue: Queue;
let pipelines = 0;

beforeAll(async () => {
  redis = createRedis(REDIS_URL, 'producer', 'enqueue-batcher');
  await waitForRedis(redis, 5000);
  // BullMQ's queue uses this connection as it is (its scripts are defined on it)
  const connection = queueConnection(redis);
  const pipeline = connection.pipeline.bind(connection);
  connection.pipeline = ((...args: Parameters<typeof connection.pipeline>) => {
    pipelines++;
    return pipeline(...args);
  }) as typeof connection.pipeline;
  // as the API's producers make theirs (ingest-producers.queue.ts)
  queue = new Queue('enqueue-batcher-test', { connection, prefix: bullPrefix(prefix, redis), skipVersionCheck: true, skipMetasUpdate: true });
});

afterAll(async () => {
  await queue.close();
  await deletePrefix(redis, prefix);
  redis.disconnect();
});

const turn = () => new Promise((r) => setImmediate(r));

describe('EnqueueBatcher on a BullMQ queue', () => {
  it('adds a lone job without a pipeline, with its id, data and the ingest options; a re-add of its id adds nothing', async () => {
    const batcher = new EnqueueBatcher<{ n: number }>(queue, 'item');
    const before = pipelines;
    await batcher.enqueue({ n: 1 }, { jobId: 'lone-1' });
    expect(pipelines).toBe(before);
    const job = await queue.getJob('lone-1');
    expect(job?.name).toBe('item');
    expect(job?.data).toEqual({ n: 1 });
    expect(job?.opts.attempts).toBe(INGEST_JOB_OPTIONS.attempts);
    expect(job?.opts.backoff).toEqual(INGEST_JOB_OPTIONS.backoff);
    await batcher.enqueue({ n: 2 }, { jobId: 'lone-1' });
    expect((await queue.getJob('lone-1'))?.data).toEqual({ n: 1 });
    expect(batcher.accepted.jobs).toBe(2);
  });

  it('adds the jobs of one turn together, by one pipeline', async () => {
    const batcher = new EnqueueBatcher<{ n: number }>(queue, 'item');
    const before = pipelines;
    await Promise.all([3, 4, 5].map((n) => batcher.enqueue({ n }, { jobId: `turn-${n}` })));
    expect(pipelines).toBe(before + 1);
    for (const n of [3, 4, 5]) expect((await queue.getJob(`turn-${n}`))?.data).toEqual({ n });
  });

  it('merges the items of a linger window into one job, added without a pipeline', async () => {
    const batcher = new EnqueueBatcher<{ n: number }>(queue, 'merged', {
      merge: { build: (items) => ({ items }), maxWeight: 100 },
      lingerMs: 20,
    });
    const counts = await queue.getJobCounts('wait');
    const before = pipelines;
    const first = batcher.enqueue({ n: 1 }, { weight: 30 });
    await turn();
    await Promise.all([first, batcher.enqueue({ n: 2 }, { weight: 30 })]);
    expect(pipelines).toBe(before); // before the counts below, which use one
    expect((await queue.getJobCounts('wait')).wait).toBe(counts.wait + 1);
    const [job] = (await queue.getJobs(['wait'])).filter((j) => j.name === 'merged');
    expect(job.data).toEqual({ items: [{ n: 1 }, { n: 2 }] });
  });

  it('sends a merged batch that reached its least weight at the end of its turn, with the rest of that turn, not after the linger', async () => {
    const batcher = new EnqueueBatcher<{ n: number }>(queue, 'turn-merged', {
      merge: { build: (items) => ({ items }), maxWeight: 100, minWeight: 40 },
      lingerMs: 60_000,
    });
    const counts = await queue.getJobCounts('wait');
    // one turn: 30 waits (under the least weight), 30 more make 60 (to go at the turn's end), 30 more 90, and 30 more
    // 120 (over the most: all four go at once, as 90 | 30); then 20 waits, and 20 more make 40 (the turn's end)
    const sent = [30, 30, 30, 30, 20, 20].map((weight, n) => batcher.enqueue({ n }, { weight }));
    // a linger of a minute: only the turn's end sends the last two before the test times out
    await Promise.all(sent);
    expect((await queue.getJobCounts('wait')).wait).toBe(counts.wait + 3);
    const jobs = (await queue.getJobs(['wait'])).filter((j) => j.name === 'turn-merged');
    expect(jobs.map((j) => (j.data as { items: { n: number }[] }).items.map((i) => i.n)).sort()).toEqual([[0, 1, 2], [3], [4, 5]]);
  });

  it('keeps a merged batch under its least weight for the linger', async () => {
    const batcher = new EnqueueBatcher<{ n: number }>(queue, 'light', {
      merge: { build: (items) => ({ items }), maxWeight: 100, minWeight: 40 },
      lingerMs: 300,
    });
    const at = performance.now();
    await batcher.enqueue({ n: 1 }, { weight: 30 });
    expect(performance.now() - at).toBeGreaterThanOrEqual(290);
  });
});
