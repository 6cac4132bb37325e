import { Queue, QueueEvents, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { ApiError, UnavailableError, type CanonicalCode } from '../errors.js';
import { bullPrefix, QUEUE } from '../queues.js';
import { duplicateRedis, queueConnection } from '../redis/redis.js';
import { queueErrorLogger } from '../redis/redis-health.js';
import type { RpcCall } from '../rpc-call.js';
import { closeWorkers, settlesWithin } from '../stop.js';

/**
 * The operations that need ClickHouse but are asked for through the API (admin routes, the CLI),
 * as a channel of named calls: each feature declares its calls (`RpcCall`: name, answer timeout,
 * argument and result types) and the composition of the workers role registers a function for
 * each (`RpcHandlers`). API processes never open ClickHouse (with the embedded engine only one
 * process may), so they reach the process that does – the workers role – through a request/reply
 * job on the `rpc` queue (`remoteRpc`); a process with its own ClickHouse calls the registered
 * functions directly (`RpcHandlers` is a channel too). The same code answers on the embedded
 * engine and on a ClickHouse server alike.
 */
export interface RpcChannel {
  call<A extends unknown[], R>(call: RpcCall<A, R>, ...args: A): Promise<R>;
}

/** Arguments arrive untyped (from the queue's JSON): the call's declaration is what types them. */
type Handler = (...args: unknown[]) => Promise<unknown>;

/** The functions that answer the calls, by name: registered at composition, nothing after. */
export class RpcHandlers implements RpcChannel {
  private readonly handlers = new Map<string, Handler>();

  register<A extends unknown[], R>(call: RpcCall<A, R>, fn: (...args: A) => Promise<R>): this {
    if (this.handlers.has(call.name)) throw new Error(`rpc call ${call.name} registered twice`);
    this.handlers.set(call.name, (...args) => fn(...(args as A)));
    return this;
  }

  /** The function registered under `name`, for the queue's answering side; undefined for an unknown name. */
  handler(name: string): Handler | undefined {
    return this.handlers.get(name);
  }

  /** In-process: the registered function itself. */
  call<A extends unknown[], R>(call: RpcCall<A, R>, ...args: A): Promise<R> {
    const fn = this.handler(call.name);
    if (!fn) return Promise.reject(new Error(`no rpc handler registered for ${call.name}`));
    return fn(...args) as Promise<R>;
  }
}

interface RpcJob {
  method: string;
  args: unknown[];
}
/** Errors with an HTTP meaning travel as values, so the caller answers the same status. */
type RpcReply = { ok: true; value: unknown } | { ok: false; status: number; code: string; message: string };

/** A job nobody picked up within this long means no workers process runs: 503 rather than a hang. */
const PICKUP_TIMEOUT_MS = 10_000;

class RemoteError extends ApiError {
  constructor(status: number, code: string, message: string) {
    super(status, code as CanonicalCode, message);
  }
}

export interface RemoteRpc extends RpcChannel {
  close(): Promise<void>;
}

/**
 * The caller's side. `connection` serves the queue; the reply listener opens a blocking
 * connection of its own, only on the first call (most API processes never make one).
 */
export function remoteRpc(connection: Redis, redisPrefix: string, log: Logger): RemoteRpc {
  const prefix = bullPrefix(redisPrefix, connection);
  let queue: Queue<RpcJob> | undefined;
  let events: QueueEvents | undefined;
  let eventsConnection: Redis | undefined;
  const open = async () => {
    if (!queue) {
      queue = new Queue<RpcJob>(QUEUE.rpc, { connection: queueConnection(connection), prefix, skipVersionCheck: true });
      queue.on('error', (err) => log.debug({ err }, 'rpc queue error'));
      eventsConnection = duplicateRedis(connection, { maxRetriesPerRequest: null, enableOfflineQueue: true, commandTimeout: undefined });
      eventsConnection.on('error', (err) => log.debug({ err }, 'rpc reply connection error'));
      events = new QueueEvents(QUEUE.rpc, { connection: eventsConnection, prefix });
      events.on('error', (err) => log.debug({ err }, 'rpc reply listener error'));
      await events.waitUntilReady();
    }
    return { queue, events: events! };
  };
  const call = async <A extends unknown[], R>({ name: method, answerTimeoutMs }: RpcCall<A, R>, ...args: A): Promise<R> => {
    let opened;
    try {
      opened = await open();
    } catch {
      throw new UnavailableError('the job queue is unavailable', 'redis');
    }
    const job = await opened.queue.add(method, { method, args }, { removeOnComplete: { age: 300 }, removeOnFail: { age: 300 }, attempts: 1 });
    const finished = job.waitUntilFinished(opened.events, answerTimeoutMs) as Promise<RpcReply>;
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
      if (reply.ok) return reply.value as R;
      throw new RemoteError(reply.status, reply.code, reply.message);
    } catch (err) {
      if (err instanceof ApiError) throw err;
      throw new UnavailableError(`no workers process answered ${method} (is a process with ROLE=workers running?)`, 'workers');
    } finally {
      clearTimeout(pickup);
    }
  };
  return {
    call,
    close: async () => {
      // The reply listener's own connection would wait for Redis to say goodbye: bounded.
      if (events) await settlesWithin(events.close(), 1000);
      eventsConnection?.disconnect();
      if (queue) await settlesWithin(queue.close(), 1000);
    },
  };
}

/** The answering side, run by the workers role with its own ClickHouse. */
export function startRpcWorker(connection: Redis, redisPrefix: string, handlers: RpcHandlers, log: Logger): { close(graceMs?: number): Promise<void> } {
  const worker = new Worker<RpcJob, RpcReply>(
    QUEUE.rpc,
    async (job: Job<RpcJob>) => {
      const { method, args } = job.data;
      const fn = handlers.handler(method);
      if (!fn) return { ok: false, status: 400, code: 'INVALID_ARGUMENT', message: 'unknown method' };
      try {
        const value = await fn(...args);
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
