import type { ChildProcess } from 'node:child_process';
import type { FastifyInstance } from 'fastify';
import { loadConfigOrExit, type Config } from '../shared/platform/config.js';
import { createLogger, type Logger } from '../shared/platform/logger.js';
import { installCrashHandlers } from '../shared/platform/crash-handlers.js';
import { ensureLocalRedis } from '../shared/platform/redis/local-redis.js';
import { waitForRedis } from '../shared/platform/redis/redis.js';
import { closePlatform, createPlatform, type Platform } from '../shared/platform/platform.js';
import { composeApi, type ApiServices } from './compose-api.js';
import type { RoleHandle } from '../workers/main.js';
import { buildApp } from './app.js';
import { metricsPlugin, requestMetricsPlugin } from './http/metrics.plugin.js';
import { queueDashboardPlugin } from './http/queue-dashboard.plugin.js';
import type { Warehouse } from '../shared/platform/warehouse/warehouse.js';
import { readdirSync } from 'node:fs';
import { setPriority } from 'node:os';
import { startIdleScheduling } from '../shared/platform/idle-scheduling.js';
import { createRedis } from '../shared/platform/redis/redis.js';
import { remoteRpc, startRpcWorker, type RpcChannel, type RpcHandlers } from '../shared/platform/warehouse/warehouse-rpc.js';
import { startOpsServer, type OpsServer } from '../shared/platform/ops-server.js';
import { settlesWithin, StopBudget } from '../shared/platform/stop.js';
import { closeIngestion, createIngestion } from '../shared/ingestion/create-ingestion.js';
import { createAggregation, type AggregationFeature } from '../shared/aggregation/create-aggregation.js';
import { createProfiles } from '../shared/profiles/create-profiles.js';

/** Pending connections the kernel keeps for the API listeners (node's default is 511). */
const LISTEN_BACKLOG = 4096;
/** Last resort: a process whose ordered stop has not ended by then exits 1. */
const SHUTDOWN_DEADLINE_MS = 25_000;
/**
 * The ordered stop of a process, from its signal to its exit, whatever Redis does. Under the
 * supervisor (28 s) the API processes stop first, then the background process.
 */
export function stopBudgetMs(roles: ReadonlySet<string>): number {
  return roles.has('workers') || roles.has('scheduler') ? 20_000 : 6_000;
}
/** Kept for the steps after the roles: ops listener, producers, connections, ClickHouse. */
const AFTER_ROLES_MS = 2500;
/** A role's share at most (the workers role takes what is left). */
const ROLE_GRACE_MS: Record<string, number> = { rpc: 4000, scheduler: 2000 };

export interface RunningService {
  platform: Platform;
  /** The API role's services, in a process that has the role. */
  api: ApiServices | undefined;
  /** This process's ClickHouse, in a process with the workers or scheduler role. */
  clickhouse: Warehouse | undefined;
  apps: FastifyInstance[];
  /** This process's ops listener (`OPS_PORT`): /healthz, /readyz, /metrics. */
  ops: OpsServer;
  /**
   * Ordered, idempotent shutdown: readiness goes 503 first. Every step is bounded, so it ends
   * within `budget` (default `stopBudgetMs`) whatever Redis does: work left unfinished stays queued.
   */
  stop(budget?: StopBudget): Promise<void>;
}

/**
 * Lowers the CPU priority of this whole process (and of the threads the embedded ClickHouse starts
 * afterwards, which inherit it) to `nice` (`WORKERS_NICE`): a background process (workers,
 * scheduler, no api role) then takes what CPU the API processes leave, so requests are answered
 * first when CPU is short and ingestion catches up when load drops. Linux semantics; elsewhere a
 * failure is logged and the process keeps its priority.
 */
export function lowerProcessPriority(nice: number, log: Logger): void {
  if (nice === 0) return;
  try {
    // Linux applies setpriority(PRIO_PROCESS) to one thread: every thread started so far (V8's
    // and libuv's) is lowered one by one; those started later inherit the value.
    let tids: number[] = [process.pid];
    try {
      tids = readdirSync('/proc/self/task').map(Number);
    } catch {
      // no /proc: the main thread only
    }
    for (const tid of tids) setPriority(tid, nice);
    log.info({ nice, threads: tids.length }, 'background process runs at a lower CPU priority than the API processes');
  } catch (err) {
    log.warn({ err }, 'could not lower the CPU priority of the background process');
  }
}

/** Starts the roles of `config` in this process. Used by `npm start` and by tests that need a real listener. */
export async function startService(config: Readonly<Config>, log: Logger): Promise<RunningService> {
  // first, so every thread started from here on (the engine's included) inherits the priority
  if (!config.roles.has('api') && (config.roles.has('workers') || config.roles.has('scheduler'))) {
    lowerProcessPriority(config.workersNice, log);
    if (config.workersSchedIdle && config.workersNice > 0) startIdleScheduling(log);
  }
  const redisChild = config.autoStartRedis && !config.redisClusterNodes ? await ensureLocalRedis(config.redisUrl, config.dataDir, log) : undefined;
  try {
    return await startRoles(config, log, redisChild);
  } catch (err) {
    // Nothing else would ever stop a redis-server we started for a start-up that then failed.
    redisChild?.kill('SIGTERM');
    throw err;
  }
}

async function startRoles(config: Readonly<Config>, log: Logger, redisChild: ChildProcess | undefined): Promise<RunningService> {
  const platform = createPlatform(config, log);
  await waitForRedis(platform.redis, 10_000);

  // One ClickHouse client per process (chDB: one engine per process), opened before any role
  // needs it and shared by them. An all-roles process runs the workers and the scheduler on its
  // main thread; under the supervisor (api/supervisor.ts) they have a process of their own,
  // niced below the API.
  const background = config.roles.has('workers') || config.roles.has('scheduler');
  const clickhouse = background ? await openClickhouse(config, log) : undefined;
  // API-only processes never open ClickHouse: their warehouse reads go to the workers role over
  // the rpc queue. A process with ClickHouse answers them itself, and with the workers role it
  // also answers the other processes' calls.
  // The data fields of the request-path connection: the API's, and the warehouse reads' that recompute them.
  const aggregation = createAggregation({ ...platform, redisPrefix: platform.config.redisPrefix });
  const { warehouse, handlers, closeWarehouse } = await openWarehouse(platform, aggregation, clickhouse);
  // One set of ingestion producers per process: the API and the Pub/Sub intake enqueue through it.
  const ingestion = createIngestion(platform);

  const roles: RoleHandle[] = [];
  // The background roles' modules (workers, scheduler, the Pub/Sub client, the ClickHouse client)
  // are loaded only by a process that runs them: an API process never holds them in memory.
  const { startScheduler, startWorkers } = background ? await import('../workers/main.js') : {};
  if (clickhouse && startWorkers && config.roles.has('workers')) roles.push(await startWorkers({ ...platform, ...ingestion }, clickhouse));
  if (startScheduler && config.roles.has('scheduler')) roles.push(await startScheduler(platform));
  if (handlers && config.roles.has('workers')) roles.push(startRpcRole(config, handlers, log));
  const api = config.roles.has('api') ? composeApi(platform, { warehouse, ingestion, aggregation }) : undefined;
  const apps: FastifyInstance[] = [];
  if (api) {
    const base = await buildApp(api.services, { listener: 'base', extraPlugins: [metricsPlugin(api.services), queueDashboardPlugin(api.services)] });
    const alt = await buildApp(api.services, { listener: 'alt', extraPlugins: [requestMetricsPlugin(api.services)] });
    // A burst of new connections waits in the kernel's accept queue while the event loop is busy;
    // beyond node's default of 511 the kernel drops them and each client retries its SYN after
    // 1, 3, 7 s. The kernel caps this at net.core.somaxconn (4096 on current kernels).
    await base.listen({ port: config.port, host: config.host, backlog: LISTEN_BACKLOG });
    await alt.listen({ port: config.altPort, host: config.host, backlog: LISTEN_BACKLOG });
    apps.push(base, alt);
  }
  // Observability: every process kind serves /healthz, /readyz, /metrics on OPS_PORT; the roles add their checks.
  const ops = await startOpsServer({ config, log, redis: platform.redis, metrics: platform.metrics, lifecycle: platform.lifecycle, roles });
  platform.lifecycle.ready = true;
  log.info({ roles: [...config.roles], port: config.port, altPort: config.altPort }, 'service ready');

  let stopping: Promise<void> | undefined;
  const stop = (budget = new StopBudget(stopBudgetMs(config.roles))) => {
    stopping ??= (async () => {
      platform.lifecycle.ready = false;
      for (const app of apps) await budget.step(log, 'http listener', () => closeListener(app, budget.allow(4000, AFTER_ROLES_MS)));
      for (const r of roles.reverse()) {
        const grace = budget.allow(ROLE_GRACE_MS[r.name] ?? Infinity, AFTER_ROLES_MS + 1000);
        await budget.step(log, `${r.name} role`, () => r.close(grace), grace + 1000, AFTER_ROLES_MS);
      }
      await budget.step(log, 'ops listener', () => ops.close(), 1000);
      await budget.step(log, 'api role', async () => api?.close());
      await budget.step(log, 'ingestion producers', () => closeIngestion(ingestion), 1000);
      await budget.step(log, 'warehouse calls', () => closeWarehouse(), 2000);
      await budget.step(log, 'redis connections', () => closePlatform(platform), 1000);
      await budget.step(log, 'clickhouse', async () => clickhouse?.close());
      if (redisChild) {
        redisChild.kill('SIGTERM');
        log.info('stopped the local redis-server');
      }
    })();
    return stopping;
  };
  return { platform, api: api?.services, clickhouse, apps, ops, stop };
}

/** In-flight requests get `ms` to finish (a Redis outage answers them within a second); connections still open then are cut. */
async function closeListener(app: FastifyInstance, ms: number): Promise<void> {
  const closed = app.close();
  if (await settlesWithin(closed, ms)) return closed;
  app.server.closeAllConnections();
  await closed;
}

/** The engine (embedded or remote), its schema migrated and the retention applied. */
async function openClickhouse(config: Readonly<Config>, log: Logger): Promise<Warehouse> {
  const { createWarehouse } = await import('../shared/platform/warehouse/clickhouse-warehouse.js');
  const warehouse = createWarehouse({
    url: config.clickhouseUrl,
    username: config.clickhouseUser,
    password: config.clickhousePassword,
    database: config.clickhouseDatabase,
    dataDir: config.dataDir,
    logger: log,
  });
  await warehouse.migrate(log);
  await warehouse.applyRetentionTtl(config.retentionDays, log);
  return warehouse;
}

/** Warehouse reads on this process's own ClickHouse when it has one, else over the rpc queue to the workers role. */
async function openWarehouse(
  platform: Platform,
  aggregation: AggregationFeature,
  clickhouse: Warehouse | undefined,
): Promise<{ warehouse: RpcChannel; handlers?: RpcHandlers; closeWarehouse(): Promise<void> }> {
  const { redis, keys, log, now, config } = platform;
  if (clickhouse) {
    const { warehouseCalls } = await import('../workers/warehouse/warehouse-ops.js');
    const { userDeletions: deletions } = createProfiles({ redis, keys, retentionDays: config.retentionDays, redisPrefix: config.redisPrefix });
    const handlers = warehouseCalls({ warehouse: clickhouse, redis, keys, dataFields: aggregation.dataFields, deletions, log, now });
    return { warehouse: handlers, handlers, closeWarehouse: async () => undefined };
  }
  const remote = remoteRpc(redis, config.redisPrefix, log);
  return { warehouse: remote, closeWarehouse: () => remote.close() };
}

/** Answers the other processes' warehouse calls, on a waiting connection of its own. */
function startRpcRole(config: Readonly<Config>, handlers: RpcHandlers, log: Logger): RoleHandle {
  const connection = createRedis(config, 'worker', 'tds-rpc');
  connection.on('error', (err) => log.debug({ err }, 'redis (rpc) error'));
  const rpc = startRpcWorker(connection, config.redisPrefix, handlers, log.child({ role: 'rpc' }));
  return {
    name: 'rpc',
    close: async (graceMs) => {
      await rpc.close(graceMs);
      connection.disconnect();
    },
  };
}

async function main(): Promise<void> {
  const config = loadConfigOrExit();
  const log = createLogger(config.logLevel);
  // Handlers go in before start-up: a stop asked for while the process is still starting (a
  // supervisor stopping everything at once) waits for the start to finish, then stops in order,
  // instead of the default action killing the process half-started. `on`, not `once`: a process
  // group's signal and the supervisor's may both arrive, and a second one must not kill the
  // process in the middle of its ordered stop.
  let started: Promise<RunningService> | undefined;
  let stopping = false;
  // 0 after a signal; 1 once anything failed (a crash, a failed stop), even after the stop began.
  let exitCode = 0;
  const shutdown = (reason: string, code: number) => {
    exitCode = Math.max(exitCode, code);
    if (stopping) return;
    stopping = true;
    log.info({ signal: reason }, 'shutting down');
    const timer = setTimeout(() => {
      log.error('shutdown deadline passed; exiting');
      process.exit(1);
    }, SHUTDOWN_DEADLINE_MS);
    timer.unref();
    const budget = new StopBudget(stopBudgetMs(config.roles));
    void (async () => {
      // A start that failed or has not finished within half the budget (Redis down at start-up)
      // has nothing of its own in flight: whatever it took from the queues is retried.
      let service: RunningService | undefined;
      const start = (started ?? Promise.reject(new Error('not started'))).then((s) => (service = s));
      await settlesWithin(start, budget.allow(Infinity, budget.remainingMs() / 2));
      if (!service) log.warn('stopping before start-up finished');
      else await service.stop(budget);
      log.info({ exitCode }, 'stopped');
      // A supervisor then knows the stop completed, whatever happens in the libraries' teardown at exit.
      await settlesWithin(new Promise<void>((resolve) => (process.send ? process.send({ type: 'tds-stopped' }, () => resolve()) : resolve())), 500);
      process.exit(exitCode);
    })().catch((err: unknown) => {
      log.error({ err }, 'shutdown failed');
      process.exit(1);
    });
  };
  process.on('SIGTERM', () => shutdown('SIGTERM', 0));
  process.on('SIGINT', () => shutdown('SIGINT', 0));
  // An uncaught exception or unhandled rejection: logged, the same ordered stop, exit 1.
  installCrashHandlers(log, (reason) => shutdown(reason, 1));
  started = startService(config, log);
  try {
    await started;
    // A supervisor (api/supervisor.ts) holds its stop signal until its children said this.
    process.send?.({ type: 'tds-ready' });
  } catch (err) {
    log.fatal({ err }, 'start-up failed');
    // a stop asked for meanwhile decides the exit
    if (!stopping) process.exit(1);
  }
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  void main();
}
