import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Queue } from 'bullmq';
import { createClickhouse } from '../../shared/platform/warehouse/clickhouse.js';
import { createTestApp, uniquePrefix, waitUntil, type TestApp } from './context.js';
import { spawnService, type ChildService } from './child-service.js';
import { startRedisCluster, type TestRedisCluster } from './redis-cluster.js';

/** How many jobs a queue still has to run. */
export type Pending = () => Promise<number>;

export function pendingJobs(queue: Queue): Pending {
  return async () => {
    const c = await queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
    return Object.values(c).reduce((a, b) => a + b, 0);
  };
}

/**
 * Crash tests: the API runs in this process (its own Redis prefix, or a three-primary Redis
 * Cluster of its own), the workers, which own the embedded ClickHouse, in a child process that
 * is SIGKILLed mid-way and restarted. A short job lock lets the restarted workers take over the
 * killed ones' jobs quickly.
 */
export interface CrashHarness {
  readonly t: TestApp;
  readonly prefix: string;
  readonly cluster?: TestRedisCluster;
  /** Twice: starts the workers, waits until they have run 1/`parts` of what is pending, SIGKILLs them. */
  killTwiceMidway(pending: Pending, parts: number, timeoutMs: number): Promise<void>;
  /** Starts the workers and waits until nothing is pending; they keep running until `stopWorkers`. */
  restartAndDrain(pending: Pending, timeoutMs: number): Promise<void>;
  /** SIGTERMs the workers; their exit code. */
  stopWorkers(): Promise<number | null>;
  /** Rows from the workers' ClickHouse (opened once the workers have stopped: one engine per path). */
  warehouseRows<T>(query: string, params: Record<string, unknown>): Promise<T[]>;
  close(): Promise<void>;
}

/**
 * `workerConcurrency`: the workers' WORKER_CONCURRENCY (16). Jobs that share an insert complete
 * together, so a kill "mid-way" needs more jobs than run at once: a scenario of few jobs sets less.
 */
export async function startCrashHarness(
  label: string,
  opts: { cluster?: boolean; apiEnv?: Record<string, string>; workerConcurrency?: number } = {},
): Promise<CrashHarness> {
  const prefix = uniquePrefix(label);
  const dataDir = mkdtempSync(join(tmpdir(), `tds-${label}-`));
  const cluster = opts.cluster ? await startRedisCluster() : undefined;
  const redis: Record<string, string> = cluster ? { REDIS_CLUSTER_NODES: cluster.nodes } : {};
  const childEnv = {
    ...redis,
    REDIS_PREFIX: prefix,
    DATA_DIR: dataDir,
    ROLE: 'workers',
    WORKER_LOCK_MS: '2000',
    WORKER_CONCURRENCY: String(opts.workerConcurrency ?? 16),
    AUTO_START_REDIS: 'false',
  };
  const t = await createTestApp({ ...redis, REDIS_PREFIX: prefix, ...opts.apiEnv });
  let child: ChildService | undefined;

  return {
    t,
    prefix,
    cluster,
    async killTwiceMidway(pending, parts, timeoutMs) {
      const step = Math.max(1, Math.floor((await pending()) / parts));
      for (let round = 0; round < 2; round++) {
        child = spawnService(childEnv);
        const before = await pending();
        await waitUntil(async () => (await pending()) < before - step, timeoutMs, 10);
        child.proc.kill('SIGKILL');
        await child.exited;
        child = undefined;
      }
    },
    async restartAndDrain(pending, timeoutMs) {
      child = spawnService(childEnv);
      await waitUntil(async () => (await pending()) === 0, timeoutMs, 100);
    },
    async stopWorkers() {
      if (child === undefined) return null;
      child.proc.kill('SIGTERM');
      const code = await child.exited;
      child = undefined;
      return code;
    },
    async warehouseRows<T>(query: string, params: Record<string, unknown>) {
      const ch = createClickhouse({ dataDir });
      try {
        return await (await ch.query({ query, query_params: params, format: 'JSONEachRow' })).json<T>();
      } finally {
        await ch.close();
      }
    },
    async close() {
      child?.proc.kill('SIGKILL');
      await child?.exited;
      try {
        await t.close();
      } finally {
        await cluster?.stop();
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
  };
}
