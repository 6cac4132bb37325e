import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { createRedis, waitForRedis, type Redis } from '../../shared/platform/redis/redis.js';
import { InvalidationBus, type Invalidation } from '../../shared/platform/redis/invalidation-bus.js';
import { atomicWrite } from '../../shared/platform/redis/atomic-write.js';
import { uniquePrefix, waitUntil } from '../helpers/context.js';
import { deletePrefix } from '../helpers/redis-cleanup.js';

// A management change must be visible to the very next call on the process that made it, however
// late Redis's pub/sub echo reaches that process's subscriber (CI once saw a GetTreatment right
// after UpdateProject answered from the stale project cache).
describe('invalidation bus', () => {
  const prefix = uniquePrefix('bus');
  const channel = `${prefix}:invalidate`;
  const log = pino({ level: 'silent' });
  let redis: Redis;
  const buses: InvalidationBus[] = [];

  beforeAll(async () => {
    redis = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', 'worker', 'bus-test');
    await waitForRedis(redis, 5000);
  });
  afterAll(async () => {
    for (const b of buses) await b.close();
    await deletePrefix(redis, prefix);
    redis.disconnect();
  });

  function bus(url: string): { bus: InvalidationBus; got: Invalidation[] } {
    const b = new InvalidationBus(url, channel, log);
    buses.push(b);
    const got: Invalidation[] = [];
    b.on((m) => got.push(m));
    return { bus: b, got };
  }

  const write = (projectId: string): Promise<boolean> =>
    atomicWrite(redis, {
      checks: [],
      writes: [{ key: `${prefix}:p:${projectId}`, field: 'record', value: '{}' }],
      publish: { channel, message: JSON.stringify({ kind: 'project', projectId }) },
    });

  it("delivers a committed write's message to this process's buses before the write returns, without Redis's echo", async () => {
    // This bus's subscriber can never connect: only the local delivery can reach it.
    const { got } = bus('redis://127.0.0.1:1');
    expect(await write('p1')).toBe(true);
    // marked as this process's own change, which its caches must see before its next answer
    expect(got).toEqual([{ kind: 'project', projectId: 'p1', local: true }]);
  });

  it('still reaches the buses over Redis (other processes), and a failed compare-and-set delivers nothing', async () => {
    const { bus: listening, got } = bus(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
    await waitUntil(() => listening.isListening, 5000);
    got.length = 0;
    expect(await write('p2')).toBe(true);
    // once locally, once more from Redis
    await waitUntil(() => got.length >= 2, 5000);
    expect(got).toEqual([
      { kind: 'project', projectId: 'p2', local: true },
      { kind: 'project', projectId: 'p2' },
    ]);
    got.length = 0;
    const refused = await atomicWrite(redis, {
      checks: [{ key: `${prefix}:p:p2`, field: 'record', expect: null }],
      writes: [],
      publish: { channel, message: JSON.stringify({ kind: 'project', projectId: 'p2' }) },
    });
    expect(refused).toBe(false);
    expect(got).toEqual([]);
  });

  it('a throwing listener neither fails the write nor keeps the message from the other listeners', async () => {
    const { bus: b, got } = bus('redis://127.0.0.1:1');
    b.on(() => {
      throw new Error('boom');
    });
    const after: Invalidation[] = [];
    b.on((m) => after.push(m));
    expect(await write('p3')).toBe(true);
    expect(got).toContainEqual({ kind: 'project', projectId: 'p3', local: true });
    expect(after).toEqual([{ kind: 'project', projectId: 'p3', local: true }]);
  });

  it('a closed bus gets nothing more', async () => {
    const { bus: b, got } = bus('redis://127.0.0.1:1');
    await b.close();
    expect(await write('p4')).toBe(true);
    expect(got).toEqual([]);
  });
});
