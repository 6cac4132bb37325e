import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { createRedis, waitForRedis, type Redis } from '../../shared/platform/redis/redis.js';
import type { InvalidationBus, InvalidationListener } from '../../shared/platform/redis/invalidation-bus.js';
import { redisKeys } from '../../shared/platform/redis/redis-keys.js';
import { startAggregationWorker, type AggregationWorker } from '../../workers/aggregation/scheduler.js';
import { uniquePrefix, waitUntil } from '../helpers/context.js';
import { deletePrefix } from '../helpers/redis-cleanup.js';

// Without the periodic poll (no scheduler here), a catalogue change on the bus alone makes the
// aggregation worker enqueue the backfill of a field announced on the data-field-created stream.
describe('backfill nudge', () => {
  const prefix = uniquePrefix('nudge');
  const keys = redisKeys(prefix);
  let redis: Redis;
  let agg: AggregationWorker;
  const listeners = new Set<InvalidationListener>();
  const bus = { on: (l: InvalidationListener) => (listeners.add(l), () => listeners.delete(l)) } as unknown as InvalidationBus;

  beforeAll(async () => {
    redis = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', 'worker', 'nudge-test');
    await waitForRedis(redis, 5000);
    agg = startAggregationWorker({
      connection: redis,
      redisPrefix: prefix,
      keys,
      deletions: { pending: async () => new Map(), deletedSince: async () => new Map() },
      // the backfill itself is not run here: it fails at once and is only looked up
      warehouse: {} as never,
      dataFields: { list: async () => [] },
      projects: { list: async () => [] },
      log: pino({ level: 'silent' }),
      now: Date.now,
      bus,
    });
  });
  afterAll(async () => {
    await agg.close();
    await deletePrefix(redis, prefix);
    redis.disconnect();
  });

  it('enqueues the backfill of a new field as soon as its catalogue change is published', async () => {
    await redis.xadd(keys.dataFieldCreated(), '*', 'projectId', 'p1', 'dataFieldId', 'f1');
    const job = () => agg.queue.getJob('backfill-p1-f1');
    expect(await job()).toBeUndefined();
    for (const l of listeners) l({ kind: 'catalog', projectId: 'p1' });
    await waitUntil(async () => (await job()) !== undefined, 5000);
    expect((await job())?.data).toMatchObject({ kind: 'recompute', projectId: 'p1', dataFieldIds: ['f1'], reason: 'backfill' });
  });

  it('other invalidations do not poll', async () => {
    await redis.xadd(keys.dataFieldCreated(), '*', 'projectId', 'p1', 'dataFieldId', 'f2');
    for (const l of listeners) l({ kind: 'apiKey', id: 'k' });
    await new Promise((r) => setTimeout(r, 300));
    expect(await agg.queue.getJob('backfill-p1-f2')).toBeUndefined();
  });
});
