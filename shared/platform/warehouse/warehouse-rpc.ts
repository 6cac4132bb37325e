import { Queue, QueueEvents, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { ApiError, UnavailableError, type CanonicalCode } from '../errors.js';
import { bullPrefix, QUEUE } from '../queues.js';
import type { GroupCounts } from '../../impact/index.js';
import { duplicateRedis } from '../redis/redis.js';
import { queueErrorLogger } from '../redis/redis-health.js';
import { closeWorkers, settlesWithin } from '../stop.js';
import type { DeadLetter, DecisionOut, WarehouseReads } from './warehouse.js';

/**
 * The operations that need ClickHouse but are asked for through the API (admin routes, the CLI).
 * API processes never open ClickHouse (with the embedded engine only one process may), so they
 * reach the process that does – the workers role – through a request/reply job on the `rpc`
 * queue: the same code answers on the embedded engine and on a ClickHouse server alike.
 */
export interface WarehouseOps extends WarehouseReads {
  runAggregations(projectId: string): Promise<{ dataFieldsRecomputed: number; usersUpdated: number }>;
}

type Method = keyof WarehouseOps;
interface RpcJob {
  method: Method;
  args: unknown[];
}
/** Errors with an HTTP meaning travel as values, so the caller answers the same status. */
type RpcReply = { ok: true; value: unknown } | { ok: false; status: number; code: string; message: string };

/** A job nobody picked up within this long means no workers process runs: 503 rather than a hang. */
const PICKUP_TIMEOUT_MS = 10_000;
const ANSWER_TIMEOUT_MS: Record<Method, number> = { listDeadLetters: 30_000, listDecisions: 30_000, treatmentReport: 60_000, runAggregations: 15 * 60_000 };

class RemoteError extends ApiError {
  constructor(status: number, code: string, message: string) {
    super(status, code as CanonicalCode, message);
  }
}

export interface RemoteWarehouseOps extends WarehouseOps {
  close(): Promise<void>;
}

/**
 * The caller's side. `connection` serves the queue; the reply listener opens a blocking
 * connection of its own, only on the first call (most API processes never make one).
 */
export function remoteWarehouseOps(connection: Redis, redisPrefix: string, log: Logger): RemoteWarehouseOps {
  const prefix = bullPrefix(redisPrefix, connection);
  let queue: Queue<RpcJob> | undefined;
  let events: QueueEvents | undefined;
  let eventsConnection: Redis | undefined;
  const open = async () => {
    if (!queue) {
      queue = new Queue<RpcJob>(QUEUE.rpc, { connection, prefix, skipVersionCheck: true });
      queue.on('error', (err) => log.debug({ err }, 'rpc queue error'));
      eventsConnection = duplicateRedis(connection, { maxRetriesPerRequest: null, enableOfflineQueue: true, commandTimeout: undefined });
      eventsConnection.on('error', (err) => log.debug({ err }, 'rpc reply connection error'));
      events = new QueueEvents(QUEUE.rpc, { connection: eventsConnection, prefix });
      events.on('error', (err) => log.debug({ err }, 'rpc reply listener error'));
      await events.waitUntilReady();
    }
    return { queue, events: events! };
  };
  const call = async (method: Method, args: unknown[]): Promise<unknown> => {
    let opened;
    try {
      opened = await open();
    } catch {
      throw new UnavailableError('the job queue is unavailable', 'redis');
    }
    const job = await opened.queue.add(method, { method, args }, { removeOnComplete: { age: 300 }, removeOnFail: { age: 300 }, attempts: 1 });
    const finished = job.waitUntilFinished(opened.events, ANSWER_TIMEOUT_MS[method]) as Promise<RpcReply>;
    finished.catch(() => undefined);
    let pickup: NodeJS.Timeout | undefined;
    const notPicked = new Promise<never>((_, reject) => {
      pickup = setTimeout(async () => {
        try {
          if ((await job.getState()) !== 'waiting') return;
          await job.remove();
          reject(new Error('not picked up'));
        } catch {
          // taken meanwhile: it will answer
        }
      }, PICKUP_TIMEOUT_MS);
    });
    notPicked.catch(() => undefined);
    try {
      const reply = await Promise.race([finished, notPicked]);
      if (reply.ok) return reply.value;
      throw new RemoteError(reply.status, reply.code, reply.message);
    } catch (err) {
      if (err instanceof ApiError) throw err;
      throw new UnavailableError(`no workers process answered ${method} (is a process with ROLE=workers running?)`, 'workers');
    } finally {
      clearTimeout(pickup);
    }
  };
  return {
    listDeadLetters: (projectId, limit) => call('listDeadLetters', [projectId, limit]) as Promise<DeadLetter[]>,
    listDecisions: (projectId, userId, limit) => call('listDecisions', [projectId, userId, limit]) as Promise<DecisionOut[]>,
    treatmentReport: (q) => call('treatmentReport', [q]) as Promise<GroupCounts[]>,
    runAggregations: (projectId) => call('runAggregations', [projectId]) as ReturnType<WarehouseOps['runAggregations']>,
    close: async () => {
      // The reply listener's own connection would wait for Redis to say goodbye: bounded.
      if (events) await settlesWithin(events.close(), 1000);
      eventsConnection?.disconnect();
      if (queue) await settlesWithin(queue.close(), 1000);
    },
  };
}

/** The answering side, run by the workers role with its own ClickHouse. */
export function startWarehouseRpcWorker(connection: Redis, redisPrefix: string, impl: WarehouseOps, log: Logger): { close(graceMs?: number): Promise<void> } {
  const worker = new Worker<RpcJob, RpcReply>(
    QUEUE.rpc,
    async (job: Job<RpcJob>) => {
      const { method, args } = job.data;
      if (!Object.hasOwn(ANSWER_TIMEOUT_MS, method)) return { ok: false, status: 400, code: 'INVALID_ARGUMENT', message: 'unknown method' };
      try {
        const value = await (impl[method] as (...a: unknown[]) => Promise<unknown>)(...args);
        return { ok: true, value };
      } catch (err) {
        if (err instanceof ApiError) return { ok: false, status: err.httpStatus, code: err.code, message: err.message };
        log.error({ err, method }, 'rpc call failed');
        throw err;
      }
    },
    { connection, prefix: bullPrefix(redisPrefix, connection), concurrency: 4 },
  );
  worker.on('error', queueErrorLogger(log, 'rpc worker error'));
  // A call under way (an aggregation run may take minutes) gets the grace; the caller's own timeout answers it otherwise.
  return { close: (graceMs = 5000) => closeWorkers([worker], graceMs, log).then(() => undefined) };
}
