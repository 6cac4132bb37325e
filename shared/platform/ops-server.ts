import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Warehouse } from './warehouse/warehouse.js';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { ApiError, errorBody } from './errors.js';
import { mergeSnapshots, openQueueHandles, type Metrics, type MetricsSnapshot } from './metrics.js';

/**
 * One dependency `/readyz` asks about. `check` resolves when the dependency answers and throws
 * (or rejects) with the reason when it does not; it is given `OpsServerDeps.checkTimeoutMs`.
 */
export interface ReadinessCheck {
  name: string;
  check(): Promise<void> | void;
}

/** What a role adds to its process's ops listener: its readiness checks, figures of another registry. */
export interface OpsContribution {
  checks?: ReadinessCheck[];
  /** A registry outside this thread (the workers thread's), merged into every scrape. */
  metrics?: () => Promise<MetricsSnapshot>;
}

export interface OpsServerDeps {
  /** `OPS_HOST`, `OPS_PORT` (0: a free port) and the Redis prefix of the queues to report. */
  config: { opsHost: string; opsPort: number; redisPrefix: string };
  log: Logger;
  /** Fail-fast connection: pinged by `/readyz`, and reads the queue gauges. */
  redis: Redis;
  /** This thread's registry. */
  metrics: Metrics;
  /** false while starting and once shutdown began: `/readyz` answers 503. */
  lifecycle: { ready: boolean };
  /** The roles of this process; their `ops` contributions are read on every request. */
  roles: readonly { name: string; ops?: OpsContribution }[];
  /** @defaultValue 2000 */
  checkTimeoutMs?: number;
}

export interface OpsServer {
  port: number;
  /** Idempotent. */
  close(): Promise<void>;
}

export interface CheckFailure {
  name: string;
  reason: string;
}

async function withTimeout(p: Promise<void> | void, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** Runs every check at once; the failures, each with its reason (empty: ready). */
export async function runChecks(checks: readonly ReadinessCheck[], timeoutMs: number): Promise<CheckFailure[]> {
  const results = await Promise.all(
    checks.map(async (c): Promise<CheckFailure | undefined> => {
      try {
        await withTimeout(
          Promise.resolve().then(() => c.check()),
          timeoutMs,
        );
        return undefined;
      } catch (err) {
        return { name: c.name, reason: err instanceof Error ? err.message : String(err) };
      }
    }),
  );
  return results.filter((r): r is CheckFailure => r !== undefined);
}

/** Redis answers a PING (the fail-fast connection: an outage is an error at once, never a wait). */
export function redisCheck(redis: Redis): ReadinessCheck {
  return {
    name: 'redis',
    check: async () => {
      await redis.ping();
    },
  };
}

/** ClickHouse answers: the server, or the embedded engine of this process. */
export function clickhouseCheck(warehouse: Pick<Warehouse, 'ping'>): ReadinessCheck {
  return { name: 'clickhouse', check: () => warehouse.ping() };
}

/** The readiness of this process from its lifecycle and the given checks. */
export function lifecycleCheck(lifecycle: { ready: boolean }): ReadinessCheck {
  return {
    name: 'lifecycle',
    check: () => {
      if (!lifecycle.ready) throw new Error('starting or shutting down');
    },
  };
}

function send(res: ServerResponse, status: number, contentType: string, body: string): void {
  res.writeHead(status, { 'content-type': contentType, 'cache-control': 'no-store' });
  res.end(body);
}

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * The operations listener every process serves on `OPS_PORT`, apart from the public listeners:
 * `GET /healthz` (the process is alive), `GET /readyz` (200 only when this process's own
 * dependencies answer: Redis, ClickHouse and the queue consumers for the workers role, and the
 * lifecycle is ready; else 503 with one detail per failing check) and `GET /metrics` (Prometheus
 * text: this thread's registry, any other thread's merged in, the queue gauges).
 */
export async function startOpsServer(deps: OpsServerDeps): Promise<OpsServer> {
  const timeoutMs = deps.checkTimeoutMs ?? 2000;
  deps.metrics.collectDefaults('main');
  const queues = openQueueHandles(deps.redis, deps.config.redisPrefix);
  const unwatch = deps.metrics.watchQueues(queues);

  const readiness = async () => {
    const checks = [lifecycleCheck(deps.lifecycle), redisCheck(deps.redis), ...deps.roles.flatMap((r) => r.ops?.checks ?? [])];
    const failures = await runChecks(checks, timeoutMs);
    deps.metrics.setReadiness(
      checks.map((c) => c.name),
      new Set(failures.map((f) => f.name)),
    );
    return { checks, failures };
  };

  const readyz = async (res: ServerResponse) => {
    const { checks, failures } = await readiness();
    if (failures.length === 0) return send(res, 200, JSON_TYPE, JSON.stringify({ status: 'ready', checks: checks.map((c) => c.name) }));
    const err = new ApiError(
      503,
      'UNAVAILABLE',
      `not ready: ${failures.map((f) => f.name).join(', ')}`,
      failures.map((f) => ({ field: f.name, description: f.reason })),
    );
    send(res, 503, JSON_TYPE, JSON.stringify(errorBody(err)));
  };

  const metrics = async (res: ServerResponse) => {
    // the readiness gauges make "not ready" alertable from the scrape alone
    await readiness();
    const others = deps.roles.flatMap((r) => (r.ops?.metrics ? [r.ops.metrics] : []));
    if (others.length === 0) return send(res, 200, deps.metrics.contentType, await deps.metrics.render());
    // A thread that does not answer in time is left out of this scrape rather than failing it.
    const snapshots = await Promise.all([
      deps.metrics.snapshot(),
      ...others.map((get) =>
        Promise.race([get(), new Promise<MetricsSnapshot>((resolve) => setTimeout(() => resolve([]), timeoutMs).unref())]).catch((err: unknown) => {
          deps.log.warn({ err }, "ops: a thread's metrics could not be read");
          return [];
        }),
      ),
    ]);
    send(res, 200, deps.metrics.contentType, await mergeSnapshots(snapshots).metrics());
  };

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const path = (req.url ?? '/').split('?')[0];
    const route = req.method === 'GET' || req.method === 'HEAD' ? path : '';
    let work: Promise<void> | void;
    if (route === '/healthz') work = send(res, 200, JSON_TYPE, '{"status":"ok"}');
    else if (route === '/readyz') work = readyz(res);
    else if (route === '/metrics') work = metrics(res);
    else
      work = send(res, 404, JSON_TYPE, JSON.stringify(errorBody(new ApiError(404, 'NOT_FOUND', 'the ops listener serves GET /healthz, /readyz and /metrics'))));
    Promise.resolve(work).catch((err: unknown) => {
      deps.log.error({ err, path }, 'ops: request failed');
      if (!res.headersSent) send(res, 500, JSON_TYPE, JSON.stringify(errorBody(new ApiError(500, 'INTERNAL', 'internal error'))));
      else res.destroy();
    });
  };

  const server: Server = createServer(handle);
  // Scrapers and probes use short-lived connections; a kept-alive one must not hold up close().
  server.keepAliveTimeout = 5000;
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(deps.config.opsPort, deps.config.opsHost, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (err) {
    unwatch();
    await Promise.all(queues.map((q) => q.close().catch(() => undefined)));
    throw err;
  }
  const port = (server.address() as AddressInfo).port;
  deps.log.info({ opsHost: deps.config.opsHost, opsPort: port }, 'ops listener: /healthz, /readyz, /metrics');

  let closing: Promise<void> | undefined;
  return {
    port,
    close: () => {
      closing ??= (async () => {
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        });
        unwatch();
        await Promise.all(queues.map((q) => q.close().catch(() => undefined)));
      })();
      return closing;
    },
  };
}
