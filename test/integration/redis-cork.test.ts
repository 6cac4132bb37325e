import { once } from 'node:events';
import type { Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { clusterOptions, createRedis, sendsCommandsTogether, waitForRedis, type Redis } from '../../shared/platform/redis/redis.js';
import { uniquePrefix } from '../helpers/context.js';
import { deletePrefix } from '../helpers/redis-cleanup.js';

/**
 * The API's connection to a single Redis (the 'producer' profile) and the workers' stores' ('store')
 * cork their socket at the first command of an event-loop turn and uncork it at the turn's end: the
 * commands of concurrent requests or jobs leave in one `writev`, as they did auto-pipelined, and
 * each gets its own reply.
 */
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const prefix = uniquePrefix('cork');
const clients: Redis[] = [];

/** Counts the system-call-level writes of a socket: one `_write` per lone chunk, one `_writev` per corked batch. */
function countWrites(socket: Socket): { writes: number; writevs: number; chunks: number } {
  const counts = { writes: 0, writevs: 0, chunks: 0 };
  const s = socket as unknown as {
    _write: (...a: unknown[]) => void;
    _writev: (chunks: unknown[], ...a: unknown[]) => void;
  };
  const write = s._write.bind(socket);
  const writev = s._writev.bind(socket);
  s._write = (...a) => {
    counts.writes++;
    counts.chunks++;
    write(...a);
  };
  s._writev = (chunks, ...a) => {
    counts.writevs++;
    counts.chunks += chunks.length;
    writev(chunks, ...a);
  };
  return counts;
}

async function connect(profile: 'producer' | 'store' | 'worker', name: string): Promise<Redis> {
  const redis = createRedis(REDIS_URL, profile, name);
  clients.push(redis);
  await waitForRedis(redis, 5000);
  return redis;
}

const key = (i: number) => `${prefix}:k${i}`;

beforeAll(async () => {
  const setup = await connect('worker', 'cork-setup');
  for (let i = 0; i < 50; i++) await setup.set(key(i), `v${i}`);
});

afterEach(() => {
  for (const c of clients.splice(1)) c.disconnect();
});

afterAll(async () => {
  await deletePrefix(clients[0]!, prefix);
  for (const c of clients.splice(0)) c.disconnect();
});

describe.each(['producer', 'store'] as const)('the %s connection on a single Redis', (profile) => {
  it('sends the 50 commands of one turn in one writev, and answers each its own reply', async () => {
    const redis = await connect(profile, 'cork-turn');
    const counts = countWrites(redis.stream as Socket);
    const replies = await Promise.all(Array.from({ length: 50 }, (_, i) => redis.get(key(i))));
    expect(replies).toEqual(Array.from({ length: 50 }, (_, i) => `v${i}`));
    expect(counts).toEqual({ writes: 0, writevs: 1, chunks: 50 });
  });

  it('sends each turn apart: commands of the next turn are not held back', async () => {
    const redis = await connect(profile, 'cork-turns');
    const counts = countWrites(redis.stream as Socket);
    const first = [redis.get(key(1)), redis.get(key(2))];
    await new Promise((r) => setImmediate(r));
    expect(counts.writevs).toBe(1);
    const second = [redis.get(key(3)), redis.hgetall(`${prefix}:none`)];
    expect(await Promise.all([...first, ...second])).toEqual(['v1', 'v2', 'v3', {}]);
    expect(counts).toEqual({ writes: 0, writevs: 2, chunks: 4 });
    // a lone command of a turn is one chunk, written as one
    expect(await redis.get(key(4))).toBe('v4');
    expect(counts.writes + counts.writevs).toBe(3);
  });

  it('keeps the order of a pipeline and a transaction sent amid the commands of the turn', async () => {
    const redis = await connect(profile, 'cork-pipeline');
    const counts = countWrites(redis.stream as Socket);
    const before = redis.get(key(5));
    const piped = redis.pipeline().get(key(6)).incr(`${prefix}:n:${profile}`).get(key(7)).exec();
    const multi = redis.multi().incr(`${prefix}:n:${profile}`).get(key(8)).exec();
    const after = redis.get(key(9));
    expect(await before).toBe('v5');
    expect(await piped).toEqual([
      [null, 'v6'],
      [null, 1],
      [null, 'v7'],
    ]);
    expect(await multi).toEqual([
      [null, 2],
      [null, 'v8'],
    ]);
    expect(await after).toBe('v9');
    expect(counts.writes + counts.writevs).toBe(1);
  });

  it('comes back after its socket dies while corked: the unsent command is resent by ioredis on the new socket, and later turns are corked there', async () => {
    const redis = await connect(profile, 'cork-reconnect');
    const old = redis.stream as Socket;
    const lost = redis.get(key(10)).then(
      (v) => ({ ok: v }),
      (err: Error) => ({ err: err.message }),
    );
    expect(old.writableCorked).toBe(1);
    old.destroy();
    const outcome = await lost;
    expect(outcome).toEqual({ ok: 'v10' });
    if (redis.status !== 'ready') await once(redis, 'ready');
    expect(redis.stream).not.toBe(old);
    const counts = countWrites(redis.stream as Socket);
    expect(await Promise.all([redis.get(key(11)), redis.get(key(12))])).toEqual(['v11', 'v12']);
    expect(counts).toEqual({ writes: 0, writevs: 1, chunks: 2 });
  });

  it('counts as sending commands together, and takes no defined command (as on a Cluster, where it auto-pipelines)', async () => {
    const redis = await connect(profile, 'cork-kind');
    expect(redis.options.enableAutoPipelining).toBeFalsy();
    expect(sendsCommandsTogether(redis)).toBe(true);
    expect(() => redis.defineCommand('probe', { numberOfKeys: 0, lua: 'return 1' })).toThrow(/autopipelining/);
    // a Cluster's producer spreads a turn's commands over its nodes, one auto-pipeline per node
    expect(clusterOptions(profile).enableAutoPipelining).toBe(true);
    expect(clusterOptions('worker').enableAutoPipelining).toBe(false);
    // a worker connection is left as it was: one write per command
    const worker = await connect('worker', 'cork-worker');
    expect(sendsCommandsTogether(worker)).toBe(false);
    const counts = countWrites(worker.stream as Socket);
    expect(await Promise.all([worker.get(key(13)), worker.get(key(14))])).toEqual(['v13', 'v14']);
    expect(counts.writes).toBeGreaterThanOrEqual(1);
  });
});
