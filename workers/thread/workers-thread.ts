import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import type { Config } from '../../shared/config.js';
import { createLogger } from '../../shared/logger.js';
import { createClickhouse } from '../../shared/clients/clickhouse.js';
import { waitForRedis } from '../../shared/clients/redis.js';
import { runMigrations } from '../../shared/stores/clickhouse-migrations.js';
import { applyRetentionTtl } from '../warehouse/user-data.js';
import { closeContext, createServiceContext } from '../../shared/create-context.js';
import { startScheduler, startWorkers, type RoleHandle } from '../main.js';
import { serveClickhouse, type ClickhouseRequest } from './remote-clickhouse.js';
import type { MetricsSnapshot } from '../../shared/metrics.js';
import type { ServiceContext } from '../../shared/service-context.js';
import { lifecycleCheck, redisCheck, runChecks, type CheckFailure } from '../../shared/platform/ops-server.js';

/**
 * Entry of the workers thread of the all-in-one service: the workers and scheduler roles and the
 * embedded ClickHouse, on the second core, so ingestion work never starves the API thread.
 * Metrics are counted in this thread's own registry; the host asks for a snapshot per scrape
 * (`ops-metrics`) and for this thread's readiness per probe (`ops-ready`).
 */
export type ThreadMessage =
  | { type: 'ready' }
  | { type: 'stopped' }
  | { type: 'failed'; message: string }
  | { type: 'ops-reply'; id: number; metrics?: MetricsSnapshot; failures?: CheckFailure[] };

/** Host → thread: one scrape or one readiness probe. */
export interface OpsRequest {
  type: 'ops-metrics' | 'ops-ready';
  id: number;
}

/** How long one of this thread's readiness checks may take. */
const CHECK_TIMEOUT_MS = 2000;

const port = parentPort!;
const config = workerData.config as Config;
const log = createLogger(config.logLevel).child({ thread: 'workers' });

/**
 * Lowers the CPU priority of this thread only (Linux: a thread id is a valid setpriority target),
 * before the embedded ClickHouse starts its own threads, which inherit it. The API thread keeps
 * the default priority, so a saturated machine serves requests first and ingests with the rest.
 */
function lowerThreadPriority(nice: number): void {
  if (nice === 0) return;
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    setPriority(tid, nice);
    log.info({ nice, tid }, 'workers thread runs at a lower CPU priority than the API thread');
  } catch (err) {
    log.warn({ err }, 'could not lower the CPU priority of the workers thread; it runs at the priority of the API');
  }
}

async function main(): Promise<void> {
  lowerThreadPriority(config.workersNice);
  const ctx = createServiceContext(config, log);
  await waitForRedis(ctx.redis, 10_000);
  const clickhouse = createClickhouse({ url: config.clickhouseUrl, username: config.clickhouseUser, password: config.clickhousePassword, database: config.clickhouseDatabase, dataDir: config.dataDir, logger: log });
  await runMigrations(clickhouse, log);
  await applyRetentionTtl(clickhouse, config.retentionDays, log);
  ctx.clickhouse = clickhouse;
  ctx.metrics.collectDefaults('workers');
  const roles: RoleHandle[] = [];
  port.on('message', (msg: ClickhouseRequest | OpsRequest | { type: 'stop' }) => {
    if (msg.type === 'ch') void serveClickhouse(clickhouse, msg).then((reply) => port.postMessage(reply));
    else if (msg.type === 'ops-metrics' || msg.type === 'ops-ready') void answerOps(msg, ctx, roles).then((reply) => port.postMessage(reply));
  });
  if (config.roles.has('workers')) roles.push(await startWorkers(ctx, clickhouse));
  if (config.roles.has('scheduler')) roles.push(await startScheduler(ctx));
  ctx.lifecycle.ready = true;
  let stopping = false;
  port.on('message', (msg: { type: string }) => {
    if (msg.type !== 'stop' || stopping) return;
    stopping = true;
    ctx.lifecycle.ready = false;
    void (async () => {
      for (const r of roles.reverse()) await r.close();
      await closeContext(ctx);
      await clickhouse.close();
      port.postMessage({ type: 'stopped' } satisfies ThreadMessage);
    })();
  });
  port.postMessage({ type: 'ready' } satisfies ThreadMessage);
}

/** Process-wide figures (RSS, CPU) are left to the host, which reports them once. */
async function answerOps(msg: OpsRequest, ctx: ServiceContext, roles: readonly RoleHandle[]): Promise<ThreadMessage> {
  if (msg.type === 'ops-metrics') return { type: 'ops-reply', id: msg.id, metrics: await ctx.metrics.snapshot({ threadOnly: true }) };
  const checks = [lifecycleCheck(ctx.lifecycle), redisCheck(ctx.redis), ...roles.flatMap((r) => r.ops?.checks ?? [])];
  return { type: 'ops-reply', id: msg.id, failures: await runChecks(checks, CHECK_TIMEOUT_MS) };
}

main().catch((err: unknown) => {
  log.fatal({ err }, 'workers thread failed to start');
  port.postMessage({ type: 'failed', message: err instanceof Error ? err.message : String(err) } satisfies ThreadMessage);
});
