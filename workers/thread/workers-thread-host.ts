import { Worker } from 'node:worker_threads';
import type { ClickHouseClient } from '@clickhouse/client';
import type { Logger } from 'pino';
import type { Config } from '../../shared/config.js';
import type { OpsContribution } from '../../shared/platform/ops-server.js';
import { remoteClickhouse } from './remote-clickhouse.js';
import type { OpsRequest, ThreadMessage } from './workers-thread.js';

type OpsReply = Extract<ThreadMessage, { type: 'ops-reply' }>;

/** Request/reply over the thread's port; a thread that has exited answers with an error at once. */
function opsClient(worker: Worker, exited: () => boolean): (type: OpsRequest['type']) => Promise<OpsReply> {
  let next = 0;
  const pending = new Map<number, (reply: OpsReply) => void>();
  worker.on('message', (msg: ThreadMessage) => {
    if (msg.type !== 'ops-reply') return;
    pending.get(msg.id)?.(msg);
    pending.delete(msg.id);
  });
  return (type) => {
    if (exited()) return Promise.reject(new Error('the workers thread has exited'));
    const id = ++next;
    return new Promise<OpsReply>((resolve, reject) => {
      // a thread that never answers must not leave entries behind (the ops listener has its own timeout)
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error('the workers thread did not answer within 5 s'));
      }, 5000);
      timer.unref();
      pending.set(id, (reply) => {
        clearTimeout(timer);
        resolve(reply);
      });
      worker.postMessage({ type, id } satisfies OpsRequest);
    });
  };
}

export interface WorkersThread {
  /** The thread's ClickHouse, for the API thread's few reads (dead letters, RunAggregations). */
  clickhouse: ClickHouseClient;
  /** The thread's readiness (its Redis, ClickHouse, queue consumers) and its metrics, for the host's ops listener. */
  ops: OpsContribution;
  /** Ordered, idempotent: the workers finish their jobs, then the thread exits. */
  close(): Promise<void>;
}

/**
 * Starts the workers and scheduler roles of an all-in-one process in a worker thread. A thread
 * that dies is fatal: `onFatal` is told (the process exits rather than run without ingestion).
 */
export async function startWorkersThread(config: Readonly<Config>, log: Logger, onFatal: (err: Error) => void): Promise<WorkersThread> {
  const worker = new Worker(new URL('./workers-thread-bootstrap.mjs', import.meta.url), { workerData: { config } });
  let closing: Promise<void> | undefined;
  let exited = false;
  const exit = new Promise<void>((resolve) => worker.once('exit', () => ((exited = true), resolve())));
  const ask = opsClient(worker, () => exited);
  await new Promise<void>((resolve, reject) => {
    const onMessage = (msg: ThreadMessage) => {
      if (msg.type === 'ready') done(resolve);
      else if (msg.type === 'failed') done(() => reject(new Error(`workers thread: ${msg.message}`)));
    };
    const onError = (err: unknown) => done(() => reject(err));
    const onExit = (code: number) => done(() => reject(new Error(`workers thread exited (${code}) before it was ready`)));
    const done = (f: () => void) => {
      worker.off('message', onMessage);
      worker.off('error', onError);
      worker.off('exit', onExit);
      f();
    };
    worker.on('message', onMessage);
    worker.once('error', onError);
    worker.once('exit', onExit);
  });
  worker.on('error', (err: unknown) => {
    if (!closing) onFatal(err instanceof Error ? err : new Error(String(err)));
  });
  worker.once('exit', (code) => {
    if (!closing) onFatal(new Error(`workers thread exited unexpectedly (${code})`));
  });
  log.info('workers and scheduler roles run in their own thread');
  const clickhouse = remoteClickhouse(worker);
  return {
    clickhouse,
    ops: {
      checks: [
        {
          name: 'workers-thread',
          check: async () => {
            const { failures = [] } = await ask('ops-ready');
            if (failures.length > 0) throw new Error(failures.map((f) => `${f.name}: ${f.reason}`).join('; '));
          },
        },
      ],
      metrics: async () => (await ask('ops-metrics')).metrics ?? [],
    },
    close: () => {
      closing ??= (async () => {
        if (exited) return;
        const stopped = new Promise<void>((resolve) => worker.on('message', (m: { type: string }) => m.type === 'stopped' && resolve()));
        worker.postMessage({ type: 'stop' });
        await Promise.race([stopped, exit]);
        await clickhouse.close();
        // Not terminate(): tearing down a thread that holds the chDB engine crashes the process.
        // The thread has closed everything; unref'd, it ends with the process.
        worker.unref();
      })();
      return closing;
    },
  };
}
