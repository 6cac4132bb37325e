import { Worker } from 'node:worker_threads';
import type { ClickHouseClient } from '@clickhouse/client';
import type { Logger } from 'pino';
import type { Config } from '../../shared/config.js';
import type { Metrics } from '../../shared/metrics.js';
import { remoteClickhouse } from './remote-clickhouse.js';
import type { ThreadMessage } from './workers-thread.js';

export interface WorkersThread {
  /** The thread's ClickHouse, for the API thread's few reads (dead letters, RunAggregations). */
  clickhouse: ClickHouseClient;
  /** Ordered, idempotent: the workers finish their jobs, then the thread exits. */
  close(): Promise<void>;
}

/**
 * Starts the workers and scheduler roles of an all-in-one process in a worker thread. A thread
 * that dies is fatal: `onFatal` is told (the process exits rather than run without ingestion).
 */
export async function startWorkersThread(config: Readonly<Config>, log: Logger, metrics: Metrics, onFatal: (err: Error) => void): Promise<WorkersThread> {
  const worker = new Worker(new URL('./workers-thread-bootstrap.mjs', import.meta.url), { workerData: { config } });
  let closing: Promise<void> | undefined;
  let exited = false;
  const exit = new Promise<void>((resolve) => worker.once('exit', () => ((exited = true), resolve())));
  worker.on('message', (msg: ThreadMessage | { type: string }) => {
    if (msg.type === 'metric') {
      const m = msg as Extract<ThreadMessage, { type: 'metric' }>;
      (metrics[m.method] as (...a: unknown[]) => void)(...m.args);
    }
  });
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
