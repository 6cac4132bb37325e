import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import { bullPrefix } from '../../shared/platform/queues.js';
import { createRedis, queueConnection, waitForRedis, type Redis } from '../../shared/platform/redis/redis.js';
import { enqueueUserDeletion, USER_DELETION_QUEUE, userDeletionJobId } from '../../shared/profiles/user-deletion.queue.js';
import { remoteRpc } from '../../shared/platform/warehouse/warehouse-rpc.js';
import { createLogger } from '../../shared/platform/logger.js';
import { uniquePrefix } from '../helpers/context.js';
import { deletePrefix } from '../helpers/redis-cleanup.js';

/**
 * BullMQ's queues made on first use (a deletion's producer, the warehouse calls' queue) share an
 * autopipelining client of the service. ioredis copies a client's defined commands onto each
 * pipeline it builds, so BullMQ's scripts defined on that client while a pipeline of the turn
 * was pending were missing from it: the first DeleteUserData under traffic failed its enqueue and
 * the pipeline's callback threw "results[i] is not iterable", an uncaught exception. The queues
 * now use the client's queue connection, and the client itself refuses defined commands.
 */
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const prefix = uniquePrefix('bullconn');
let redis: Redis;
const uncaught: Error[] = [];
const onUncaught = (err: Error) => uncaught.push(err);

beforeAll(async () => {
  process.on('uncaughtException', onUncaught);
  redis = createRedis(REDIS_URL, 'producer', 'bullmq-connections');
  await waitForRedis(redis, 5000);
});

afterAll(async () => {
  process.off('uncaughtException', onUncaught);
  await deletePrefix(redis, prefix);
  redis.disconnect();
});

describe('BullMQ on the service clients', () => {
  it('the first deletion enqueued in a turn with a pending pipeline is added, and nothing throws', async () => {
    const job = { kind: 'deleteUser' as const, projectId: 'p', userId: 'u-1', deletedAtMs: Date.now() };
    // a command of the same turn: its pipeline is pending (sent at the next setImmediate)
    const pending = redis.get(`${prefix}:other`);
    const added = enqueueUserDeletion(redis, prefix, job);
    await expect(added).resolves.toBeUndefined();
    expect(await pending).toBeNull();
    await new Promise((r) => setTimeout(r, 50));
    expect(uncaught).toEqual([]);
    const observer = new Queue(USER_DELETION_QUEUE, { connection: queueConnection(redis), prefix: bullPrefix(prefix, redis), skipVersionCheck: true });
    expect((await observer.getJob(userDeletionJobId(job)))?.data).toEqual(job);
    await observer.close();
  });

  it("the warehouse calls' queue, opened on the first call in a busy turn, leaves the client without BullMQ's scripts", async () => {
    const rpc = remoteRpc(redis, prefix, createLogger('silent', 'test'));
    const pending = redis.get(`${prefix}:other`);
    // nobody answers: the call times out, but it was enqueued without an error of the connection
    const call = rpc.call({ name: 'nobody', answerTimeoutMs: 300 }).catch((err: Error) => err);
    expect(await pending).toBeNull();
    const err = await call;
    expect((err as Error).message).toMatch(/no workers process answered nobody/);
    await rpc.close();
    expect(Object.keys((redis as unknown as { scriptsSet: object }).scriptsSet)).toEqual([]);
    expect(uncaught).toEqual([]);
  });

  it('an autopipelining client refuses a defined command; a queue connection takes them', async () => {
    expect(() => redis.defineCommand('probe', { numberOfKeys: 0, lua: 'return 1' })).toThrow(/autopipelining/);
    const worker = createRedis(REDIS_URL, 'worker', 'bullmq-connections-worker');
    worker.defineCommand('probe', { numberOfKeys: 0, lua: 'return 1' });
    expect(await (worker as unknown as { probe(): Promise<number> }).probe()).toBe(1);
    worker.disconnect();
    const q = queueConnection(redis);
    q.defineCommand('probe', { numberOfKeys: 0, lua: 'return 2' });
    expect(await (q as unknown as { probe(): Promise<number> }).probe()).toBe(2);
  });
});
