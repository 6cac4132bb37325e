import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { createLogger } from '../../shared/platform/logger.js';
import { createClickhouse } from '../../shared/platform/warehouse/clickhouse.js';
import { ClickhouseWarehouse } from '../../shared/platform/warehouse/clickhouse-warehouse.js';
import { waitForRedis } from '../../shared/platform/redis/redis.js';
import { closePlatform, createPlatform } from '../../shared/platform/platform.js';
import { startOpsServer } from '../../shared/platform/ops-server.js';
import { startWorkers } from '../../workers/main.js';
import { freePort, spawnService, type ChildService } from '../helpers/child-service.js';
import { testConfig, uniquePrefix, waitUntil } from '../helpers/context.js';
import { deletePrefix } from '../helpers/redis-cleanup.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { parseExposition, sample, type Sample } from '../helpers/metrics-exposition.js';
import { closeIngestion, createIngestion } from '../../shared/ingestion/create-ingestion.js';

/**
 * Every process kind serves /healthz, /readyz and /metrics on its ops port (OPS_PORT): the API
 * (`ROLE=api`, in this process) and the background process (`ROLE=workers,scheduler`, a child
 * that reaches Redis through a TCP proxy this test can cut). After real traffic, every metric
 * the Grafana dashboard and the alert rules refer to is in a scrape.
 */

const ROOT = new URL('../../', import.meta.url).pathname;

/** The `tds_` names in the dashboard's queries and in the alert rules' expressions. */
function referencedNames(): { dashboard: Set<string>; alerts: Set<string> } {
  const names = (text: string) => new Set([...text.matchAll(/\btds_[a-z0-9_]+/g)].map((m) => m[0]));
  const dash = JSON.parse(readFileSync(join(ROOT, 'infra/observability/grafana-dashboard.json'), 'utf8')) as {
    panels: { targets?: { expr: string }[] }[];
    templating: { list: { definition?: string }[] };
  };
  const exprs = [...dash.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr)), ...dash.templating.list.map((v) => v.definition ?? '')];
  // an `expr:` and its continuation lines (more indented than the key)
  const alertExprs: string[] = [];
  const lines = readFileSync(join(ROOT, 'infra/observability/alerts.yaml'), 'utf8').split('\n');
  for (let i = 0; i < lines.length; i++) {
    const m = /^(\s*)expr:(.*)$/.exec(lines[i]);
    if (!m) continue;
    let expr = m[2];
    while (i + 1 < lines.length && lines[i + 1].search(/\S/) > m[1].length) expr += ` ${lines[++i].trim()}`;
    alertExprs.push(expr);
  }
  return { dashboard: names(exprs.join('\n')), alerts: names(alertExprs.join('\n')) };
}

/** Forwards TCP to the shared Redis; `cut()` refuses and drops every connection, `restore()` forwards again. */
class TcpProxy {
  private server?: Server;
  private readonly sockets = new Set<Socket>();
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  async restore(): Promise<void> {
    const server = createServer((client) => {
      const upstream = connect(this.target.port, this.target.host);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as { port: number }).port;
    this.server = server;
  }

  async cut(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  }
}

async function get(url: string): Promise<{ status: number; text: string }> {
  const res = await fetch(url);
  return { status: res.status, text: await res.text() };
}

const prefix = uniquePrefix('obs');
const redisUrl = new URL(testConfig().redisUrl);
const proxy = new TcpProxy({ host: redisUrl.hostname, port: Number(redisUrl.port || 6379) });
let api: TestService;
let background: ChildService | undefined;
let backgroundOps: string;
let apiOps: string;
let keys: { projectId: string; management: string; delivery: string; logEvents: string };

async function scrape(base: string): Promise<Sample[]> {
  const res = await get(`${base}/metrics`);
  expect(res.status).toBe(200);
  return parseExposition(res.text);
}

async function v1(operation: string, key: string, body: Record<string, unknown>): Promise<any> {
  const r = await api.post(`/v1/${operation}`, { projectId: keys.projectId, ...body }, { 'x-api-key': key });
  if (r.status !== 200) throw new Error(`${operation}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

beforeAll(async () => {
  await proxy.restore();
  const opsPort = await freePort();
  backgroundOps = `http://127.0.0.1:${opsPort}`;
  background = spawnService({
    ROLE: 'workers,scheduler',
    REDIS_URL: `redis://127.0.0.1:${proxy.port}${redisUrl.pathname}`,
    REDIS_PREFIX: prefix,
    DATA_DIR: mkdtempSync(join(tmpdir(), 'tds-obs-')),
    OPS_PORT: String(opsPort),
    AUTO_START_REDIS: 'false',
    WORKER_CONCURRENCY: '16',
  });
  api = await startTestService({ ROLE: 'api', REDIS_PREFIX: prefix });
  apiOps = `http://127.0.0.1:${api.service.ops.port}`;
  await waitUntil(async () => (await get(`${backgroundOps}/readyz`).catch(() => ({ status: 0 }))).status === 200, 120_000, 250).catch((err: unknown) => {
    throw new Error(`the workers process did not get ready: ${String(err)}\n${background?.output()}`);
  });

  const projectId = `obs${Date.now() % 100000}`;
  const p = await api.admin('CreateProject', { projectId });
  if (p.status !== 200) throw new Error(JSON.stringify(p.body));
  const key = async (permissions: string[]) => {
    const r = await api.admin('CreateApiKey', { projectId, permissions });
    if (r.status !== 200) throw new Error(JSON.stringify(r.body));
    return r.body.key as string;
  };
  keys = { projectId, management: await key(['TREATMENT_MANAGEMENT']), delivery: await key(['DELIVERY']), logEvents: await key(['LOG_EVENTS']) };
}, 180_000);

afterAll(async () => {
  if (background) {
    background.proc.kill('SIGTERM');
    await background.exited;
  }
  await proxy.cut();
  await api?.stop();
});

describe('ops listener of every process kind', () => {
  it('the API process: /healthz, /readyz, /metrics on OPS_PORT; /metrics gone from the public listener', async () => {
    expect(await get(`${apiOps}/healthz`)).toEqual({ status: 200, text: '{"status":"ok"}' });
    const ready = await get(`${apiOps}/readyz`);
    expect(ready.status).toBe(200);
    expect(JSON.parse(ready.text)).toEqual({ status: 'ready', checks: ['lifecycle', 'redis'] });
    expect((await get(`${apiOps}/nope`)).status).toBe(404);
    // load balancers keep their probes on the public listener; the figures are no longer there
    expect((await get(`${api.baseUrl}/metrics`)).status).toBe(404);
    expect((await get(`${api.altUrl}/metrics`)).status).toBe(404);
    expect((await get(`${api.baseUrl}/healthz`)).status).toBe(200);
    expect((await get(`${api.baseUrl}/readyz`)).status).toBe(200);
  });

  it('the workers process: ready once Redis, ClickHouse and its queue consumers answer', async () => {
    expect((await get(`${backgroundOps}/healthz`)).status).toBe(200);
    const ready = await get(`${backgroundOps}/readyz`);
    expect(JSON.parse(ready.text)).toEqual({ status: 'ready', checks: ['lifecycle', 'redis', 'clickhouse', 'queue-consumers'] });
  });

  it('after traffic, each kind reports its figures, and every metric of the dashboard and the alerts exists', async () => {
    // events first, so the aggregation field created afterwards has history to backfill
    const now = Date.now();
    const users = ['u1', 'u2', 'u3'];
    for (const userId of users) {
      await v1('LogEvents', keys.logEvents, {
        userId,
        events: [0, 1].map((i) => ({ eventName: 'purchase', clientEventTimestamp: new Date(now - i * 1000).toISOString(), insertId: `${userId}-${i}` })),
      });
    }
    // a duplicate insertId, dropped by the workers
    await v1('LogEvents', keys.logEvents, {
      userId: 'u1',
      events: [{ eventName: 'purchase', clientEventTimestamp: new Date(now).toISOString(), insertId: 'u1-0' }],
    });
    await waitUntil(
      async () => {
        const s = await scrape(backgroundOps);
        return (sample(s, 'tds_ingest_events_written_total') ?? 0) + (sample(s, 'tds_ingest_duplicates_dropped_total') ?? 0) >= 7;
      },
      60_000,
      200,
    );

    await v1('InsertSurface', keys.management, { name: 'home' });
    await v1('InsertSurface', keys.management, { name: 'nothing_here' });
    await v1('InsertTreatmentType', keys.management, {
      treatmentTypeName: 'banner',
      lastModifiedBy: 't',
      surfaces: [{ surfaceName: 'home' }],
      contentFieldTypes: [{ fieldName: 'title', maximumLengthAllowed: 80 }],
    });
    await v1('InsertTreatment', keys.management, {
      name: 'offer',
      description: 'd',
      treatmentTypeName: 'banner',
      lastModifiedBy: 't',
      startTimestamp: '2026-01-01T00:00:00Z',
      shouldPublish: true,
      content: { languageAgnosticContentFields: [{ fieldName: 'title', stringValue: 'Hi' }] },
    });
    const fields = await v1('GetDataFields', keys.management, {
      dataFieldParams: [{ eventDataFieldParams: { eventSchemaName: 'purchase', dailyCountAggregation: { windowName: 'LAST_7D' } } }],
    });
    expect(fields.dataFields).toHaveLength(1);

    const served = await v1('GetTreatments', keys.delivery, { userId: 'u1', surfaces: [{ surface: 'home' }] });
    expect(served.userTreatments).toHaveLength(1);
    for (let i = 0; i < 3; i++) await v1('GetTreatments', keys.delivery, { userId: 'u2', surfaces: [{ surface: 'home' }] });
    const empty = await v1('GetTreatments', keys.delivery, { userId: 'u1', surfaces: [{ surface: 'nothing_here' }] });
    expect(empty.userTreatments).toBeUndefined();
    const t = served.userTreatments[0];
    await v1('LogTreatmentInteraction', keys.delivery, {
      userId: 'u1',
      treatmentId: t.treatmentId,
      treatmentTrackingId: t.treatmentTrackingId,
      surface: 'home',
      interactionType: 'VIEWED',
      interactionTimeMicros: String(now * 1000),
    });
    expect((await api.post('/v1/GetTreatments', { projectId: keys.projectId, userId: 'u1', surfaces: [] }, { 'x-api-key': 'tds_wrong' })).status).toBe(401);

    // the backfill of the new field ran over the three users' events, the interaction is stored
    // (InsertSurface's provisioned fields are backfilled too, over no user: wait for the users, not
    // for the first backfill to report it is done)
    await waitUntil(
      async () => {
        const s = await scrape(backgroundOps);
        return (
          (sample(s, 'tds_aggregation_users_recomputed_total', { reason: 'backfill' }) ?? 0) >= users.length &&
          sample(s, 'tds_aggregation_runs_active', { reason: 'backfill' }) === 0 &&
          sample(s, 'tds_aggregation_progress_ratio', { reason: 'backfill' }) === 1 &&
          (sample(s, 'tds_clickhouse_insert_rows_total', { table: 'interactions' }) ?? 0) >= 1
        );
      },
      60_000,
      200,
    );

    const a = await scrape(apiOps);
    const w = await scrape(backgroundOps);

    // API: requests, delivery outcomes, cache hit ratios, process figures, readiness
    expect(sample(a, 'tds_http_requests_total', { operation: '/v1/GetTreatments', status: '200' })).toBe(5);
    expect(sample(a, 'tds_http_requests_total', { operation: '/v1/GetTreatments', status: '401' })).toBe(1);
    expect(sample(a, 'tds_http_request_duration_seconds_count', { operation: '/v1/LogEvents' })).toBe(4);
    expect(sample(a, 'tds_delivery_responses_total', { outcome: 'treatments' })).toBe(4);
    expect(sample(a, 'tds_delivery_responses_total', { outcome: 'empty' })).toBe(1);
    expect(sample(a, 'tds_delivery_treatments_returned_total')).toBe(4);
    expect(sample(a, 'tds_cache_requests_total', { cache: 'catalog', result: 'hit' })).toBeGreaterThanOrEqual(4);
    expect(sample(a, 'tds_cache_requests_total', { cache: 'catalog', result: 'miss' })).toBe(1);
    expect(sample(a, 'tds_cache_requests_total', { cache: 'api_key', result: 'hit' })).toBeGreaterThanOrEqual(8);
    expect(sample(a, 'tds_cache_requests_total', { cache: 'api_key', result: 'miss' })).toBeGreaterThanOrEqual(1);
    expect(sample(a, 'tds_process_resident_memory_bytes')).toBeGreaterThan(0);
    expect(sample(a, 'tds_nodejs_heap_size_used_bytes', { thread: 'main' })).toBeGreaterThan(0);
    expect(sample(a, 'tds_nodejs_eventloop_lag_p99_seconds', { thread: 'main' })).toBeGreaterThanOrEqual(0);
    expect(sample(a, 'tds_ready')).toBe(1);
    expect(sample(a, 'tds_queue_jobs', { queue: 'events', state: 'waiting' })).toBe(0);

    // workers: ClickHouse inserts, jobs, ingestion outcomes, backfill progress, readiness
    // the duplicate's row is stored too (the table collapses it); only the profile ignores it
    expect(sample(w, 'tds_clickhouse_insert_rows_total', { table: 'events' })).toBeGreaterThanOrEqual(6);
    expect(sample(w, 'tds_clickhouse_insert_duration_seconds_count', { table: 'events' })).toBeGreaterThanOrEqual(1);
    expect(sample(w, 'tds_clickhouse_insert_errors_total', { table: 'events' })).toBe(0);
    expect(sample(w, 'tds_ingest_events_written_total')).toBe(6);
    expect(sample(w, 'tds_ingest_duplicates_dropped_total')).toBe(1);
    expect(sample(w, 'tds_job_duration_seconds_count', { queue: 'events', outcome: 'completed' })).toBeGreaterThanOrEqual(1);
    expect(sample(w, 'tds_job_duration_seconds_count', { queue: 'aggregations', outcome: 'completed' })).toBeGreaterThanOrEqual(1);
    expect(sample(w, 'tds_job_retries_total', { queue: 'events' })).toBe(0);
    // at least the three users of the purchase field (a provisioned surface field may also have backfilled u1's view)
    expect(sample(w, 'tds_aggregation_users_recomputed_total', { reason: 'backfill' })).toBeGreaterThanOrEqual(users.length);
    expect(sample(w, 'tds_aggregation_runs_active', { reason: 'backfill' })).toBe(0);
    expect(sample(w, 'tds_readiness_check_up', { check: 'clickhouse' })).toBe(1);
    expect(sample(w, 'tds_readiness_check_up', { check: 'queue-consumers' })).toBe(1);
    expect(sample(w, 'tds_process_resident_memory_bytes')).toBeGreaterThan(0);

    // one prefix for everything each process exports
    for (const s of [...a, ...w]) expect(s.name.startsWith('tds_'), s.name).toBe(true);
    const scraped = new Set([...a, ...w].map((s) => s.name));
    const { dashboard, alerts } = referencedNames();
    expect(dashboard.size).toBeGreaterThan(20);
    expect(alerts.size).toBeGreaterThan(8);
    expect(
      [...dashboard].filter((n) => !scraped.has(n)),
      'dashboard metrics missing from the scrapes',
    ).toEqual([]);
    expect(
      [...alerts].filter((n) => !scraped.has(n)),
      'alert metrics missing from the scrapes',
    ).toEqual([]);
  }, 150_000);
});

describe('readiness follows the real dependencies', () => {
  it('the workers process answers 503 while its Redis is unreachable, and 200 again once it is back', async () => {
    await proxy.cut();
    let body: any;
    await waitUntil(
      async () => {
        const r = await get(`${backgroundOps}/readyz`);
        body = JSON.parse(r.text);
        return r.status === 503;
      },
      30_000,
      200,
    );
    expect(body.error).toMatchObject({ code: 503, status: 'UNAVAILABLE' });
    expect(body.error.details.map((d: { field: string }) => d.field)).toContain('redis');
    // alive, and still scraped: the figures say why
    expect((await get(`${backgroundOps}/healthz`)).status).toBe(200);
    const s = await scrape(backgroundOps);
    expect(sample(s, 'tds_ready')).toBe(0);
    expect(sample(s, 'tds_readiness_check_up', { check: 'redis' })).toBe(0);
    expect(sample(s, 'tds_redis_up')).toBe(0);

    await proxy.restore();
    await waitUntil(async () => (await get(`${backgroundOps}/readyz`)).status === 200, 60_000, 250);
  }, 120_000);

  it('the workers role is not ready while its ClickHouse does not answer', async () => {
    // The workers role on a ClickHouse server that is down (a real client, a closed port): the
    // consumers run, Redis answers, ClickHouse does not.
    const config = testConfig({ REDIS_PREFIX: uniquePrefix('obs-ch'), ROLE: 'workers' });
    const platform = createPlatform(config, createLogger('silent'));
    await waitForRedis(platform.redis, 10_000);
    const ingestion = createIngestion(platform);
    const deadPort = await freePort();
    const clickhouse = createClickhouse({ url: `http://127.0.0.1:${deadPort}`, dataDir: '.' });
    const role = await startWorkers({ ...platform, ...ingestion }, new ClickhouseWarehouse(clickhouse), { concurrency: 1 });
    const ops = await startOpsServer({
      config,
      log: platform.log,
      redis: platform.redis,
      metrics: platform.metrics,
      lifecycle: platform.lifecycle,
      roles: [role],
    });
    platform.lifecycle.ready = true;
    try {
      const r = await get(`http://127.0.0.1:${ops.port}/readyz`);
      expect(r.status).toBe(503);
      const body = JSON.parse(r.text);
      expect(body.error.status).toBe('UNAVAILABLE');
      expect(body.error.details.map((d: { field: string }) => d.field)).toEqual(['clickhouse']);
      const s = parseExposition((await get(`http://127.0.0.1:${ops.port}/metrics`)).text);
      expect(sample(s, 'tds_readiness_check_up', { check: 'clickhouse' })).toBe(0);
      expect(sample(s, 'tds_readiness_check_up', { check: 'redis' })).toBe(1);
      expect(sample(s, 'tds_readiness_check_up', { check: 'queue-consumers' })).toBe(1);
      // shutting down: not ready whatever the dependencies say
      platform.lifecycle.ready = false;
      expect(JSON.parse((await get(`http://127.0.0.1:${ops.port}/readyz`)).text).error.details.map((d: { field: string }) => d.field)).toContain('lifecycle');
    } finally {
      await role.close();
      await ops.close();
      await clickhouse.close();
      const r = new Redis(config.redisUrl);
      await deletePrefix(r, config.redisPrefix);
      r.disconnect();
      await closeIngestion(ingestion);
      await closePlatform(platform);
    }
  }, 60_000);
});
