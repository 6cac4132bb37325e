import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../api/app.js';
import { metricsPlugin, requestMetricsPlugin } from '../../api/http/metrics.plugin.js';
import { queueDashboardPlugin } from '../../api/http/queue-dashboard.plugin.js';
import { createRedis, queueConnection } from '../../shared/platform/redis/redis.js';
import { createMetrics } from '../../shared/platform/metrics.js';
import { startOpsServer, type OpsServer } from '../../shared/platform/ops-server.js';
import { bullPrefix, QUEUE } from '../../shared/platform/queues.js';
import { ADMIN_TOKEN, createTestApp, waitUntil, type TestApp } from '../helpers/context.js';
import { parseExposition, sample, type Sample } from '../helpers/metrics-exposition.js';

const NOW = Date.parse('2026-03-01T12:00:00Z');
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
const bearer = { authorization: `Bearer ${ADMIN_TOKEN}` };

let t: TestApp;
let ops: FastifyInstance;
let alt: FastifyInstance;
let opsServer: OpsServer;
const queues: Queue[] = [];

function queue(name: string): Queue {
  const q = new Queue(name, { connection: queueConnection(t.ctx.redis), prefix: bullPrefix(t.ctx.config.redisPrefix), skipVersionCheck: true });
  queues.push(q);
  return q;
}

async function scrapeRes(): Promise<Response> {
  const res = await fetch(`http://127.0.0.1:${opsServer.port}/metrics`);
  expect(res.status).toBe(200);
  return res;
}

async function scrape(): Promise<Sample[]> {
  return parseExposition(await (await scrapeRes()).text());
}

beforeAll(async () => {
  t = await createTestApp({}, { fixedNow: NOW });
  ops = await buildApp(t.ctx, { listener: 'base', extraPlugins: [metricsPlugin(t.ctx), queueDashboardPlugin(t.ctx)] });
  alt = await buildApp(t.ctx, { listener: 'alt', extraPlugins: [requestMetricsPlugin(t.ctx)] });
  opsServer = await startOpsServer({ config: t.ctx.config, log: t.ctx.log, redis: t.ctx.redis, metrics: t.ctx.metrics, lifecycle: t.ctx.lifecycle, roles: [] });
});

afterAll(async () => {
  for (const q of queues) await q.close();
  await opsServer?.close();
  await ops?.close();
  await alt?.close();
  await t?.close();
});

describe('GET /metrics (ops listener)', () => {
  it('counts requests by route and status, with unknown paths under one label', async () => {
    for (let i = 0; i < 3; i++) await ops.inject({ method: 'GET', url: '/healthz' });
    expect((await ops.inject({ method: 'POST', url: '/v1/LogEvents', payload: {} })).statusCode).toBe(401);
    await ops.inject({ method: 'GET', url: '/no/such/path/1' });
    await ops.inject({ method: 'GET', url: '/no/such/path/2' });

    const res = await scrapeRes();
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const s = parseExposition(await res.text());
    expect(sample(s, 'tds_http_requests_total', { operation: '/healthz', status: '200' })).toBe(3);
    expect(sample(s, 'tds_http_requests_total', { operation: '/v1/LogEvents', status: '401' })).toBe(1);
    expect(sample(s, 'tds_http_requests_total', { operation: 'unmatched', status: '404' })).toBe(2);
    expect(s.some((x) => x.labels.operation?.startsWith('/no/such'))).toBe(false);
    expect(sample(s, 'tds_http_request_duration_seconds_count', { operation: '/healthz' })).toBe(3);
    expect(sample(s, 'tds_http_request_duration_seconds_bucket', { operation: '/healthz', le: '5' })).toBe(3);
  });

  it('is not served on the public listeners, whose requests still count', async () => {
    expect((await alt.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(404);
    expect((await ops.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(404);
    const res = await alt.inject({ method: 'POST', url: '/v1/GetTreatment', payload: {} });
    const s = await scrape();
    expect(sample(s, 'tds_http_requests_total', { operation: '/v1/GetTreatment', status: String(res.statusCode) })).toBe(1);
  });

  it('reports queue depth and the age of the oldest waiting job, per queue', async () => {
    const events = queue(QUEUE.events);
    await events.add('events', { n: 1 }, { timestamp: NOW - 60_000 });
    await events.add('events', { n: 2 }, { timestamp: NOW - 5_000 });
    const s = await scrape();
    expect(sample(s, 'tds_redis_up')).toBe(1);
    expect(sample(s, 'tds_queue_jobs', { queue: 'events', state: 'waiting' })).toBe(2);
    expect(sample(s, 'tds_queue_jobs', { queue: 'interactions', state: 'waiting' })).toBe(0);
    // The first job added is the oldest, though it sits at the far end of BullMQ's wait list.
    expect(sample(s, 'tds_queue_oldest_waiting_age_seconds', { queue: 'events' })).toBe(60);
    expect(sample(s, 'tds_queue_oldest_waiting_age_seconds', { queue: 'aggregations' })).toBe(0);
  });

  it('counts ingest outcomes and Pub/Sub messages through the context helpers', async () => {
    t.ctx.metrics.countIngest('eventsWritten', 5);
    t.ctx.metrics.countIngest('duplicatesDropped', 2);
    t.ctx.metrics.countIngest('deadLetters', 1);
    t.ctx.metrics.pubsubReceived('p1');
    t.ctx.metrics.pubsubReceived('p1');
    t.ctx.metrics.pubsubAcked('p1', 'queued');
    t.ctx.metrics.pubsubAcked('p1', 'dead_letter');
    const s = await scrape();
    expect(sample(s, 'tds_ingest_events_written_total')).toBe(5);
    expect(sample(s, 'tds_ingest_duplicates_dropped_total')).toBe(2);
    expect(sample(s, 'tds_ingest_dead_letters_total')).toBe(1);
    expect(sample(s, 'tds_pubsub_messages_received_total', { project: 'p1' })).toBe(2);
    expect(sample(s, 'tds_pubsub_messages_acked_total', { project: 'p1', outcome: 'queued' })).toBe(1);
    expect(sample(s, 'tds_pubsub_messages_acked_total', { project: 'p1', outcome: 'dead_letter' })).toBe(1);
  });

  it('still answers when Redis is down: queue gauges omitted, tds_redis_up 0', async () => {
    const down = createRedis('redis://127.0.0.1:1', 'producer');
    down.on('error', () => undefined);
    const q = new Queue(QUEUE.events, { connection: queueConnection(down), prefix: 'nowhere' });
    q.on('error', () => undefined);
    const metrics = createMetrics({ now: () => NOW, queueStatsTimeoutMs: 500 });
    metrics.watchQueues([q]);
    metrics.observeRequest('/healthz', 200, 0.002);
    try {
      const s = parseExposition(await metrics.render());
      expect(sample(s, 'tds_redis_up')).toBe(0);
      expect(s.some((x) => x.name === 'tds_queue_jobs' || x.name === 'tds_queue_oldest_waiting_age_seconds')).toBe(false);
      expect(sample(s, 'tds_http_requests_total', { operation: '/healthz', status: '200' })).toBe(1);
    } finally {
      await q.close().catch(() => undefined);
      down.disconnect();
    }
  });
});

describe('queue dashboard at /admin/queues', () => {
  it('does not exist without ADMIN_TOKEN', async () => {
    const bare = await createTestApp({ ADMIN_TOKEN: '' });
    const app = await buildApp(bare.ctx, { listener: 'base', extraPlugins: [queueDashboardPlugin(bare.ctx)] });
    try {
      expect((await app.inject({ method: 'GET', url: '/admin/queues' })).statusCode).toBe(404);
      expect((await app.inject({ method: 'GET', url: '/admin/queues/api/queues', headers: bearer })).statusCode).toBe(404);
    } finally {
      await app.close();
      await bare.close();
    }
  });

  it('asks a browser for the token with Basic auth and rejects wrong tokens', async () => {
    const none = await ops.inject({ method: 'GET', url: '/admin/queues' });
    expect(none.statusCode).toBe(401);
    expect(none.headers['www-authenticate']).toBe('Basic realm="tds"');
    expect(none.json().error.status).toBe('UNAUTHENTICATED');
    for (const authorization of ['Bearer nope', basic('admin', 'nope'), basic('admin', ''), `Basic ${ADMIN_TOKEN}`, ADMIN_TOKEN]) {
      expect((await ops.inject({ method: 'GET', url: '/admin/queues/api/queues', headers: { authorization } })).statusCode).toBe(401);
    }
  });

  it('serves the board with a Bearer token or the token as Basic password', async () => {
    const viaBearer = await ops.inject({ method: 'GET', url: '/admin/queues', headers: bearer });
    expect(viaBearer.statusCode).toBe(200);
    expect(viaBearer.headers['content-type']).toMatch(/text\/html/);
    const viaBasic = await ops.inject({ method: 'GET', url: '/admin/queues/queue/events', headers: { authorization: basic('anyone', ADMIN_TOKEN) } });
    expect(viaBasic.statusCode).toBe(200);
  });

  it('lists every queue, shows a failed job with its reason, and retries it back to waiting', async () => {
    const aggregations = queue(QUEUE.aggregations);
    const job = await aggregations.add('recompute', { kind: 'recompute', reason: 'manual' }, { attempts: 1 });
    const workerConn = new Redis(t.ctx.config.redisUrl, { maxRetriesPerRequest: null });
    const worker = new Worker(
      QUEUE.aggregations,
      async () => {
        throw new Error('recompute exploded');
      },
      { connection: workerConn, prefix: bullPrefix(t.ctx.config.redisPrefix) },
    );
    try {
      await waitUntil(async () => (await job.getState()) === 'failed', 10_000);
    } finally {
      await worker.close();
      workerConn.disconnect();
    }

    const list = await ops.inject({ method: 'GET', url: '/admin/queues/api/queues?activeQueue=aggregations&status=failed&page=1', headers: bearer });
    expect(list.statusCode).toBe(200);
    const listed = list.json().queues as { name: string; counts: Record<string, number>; jobs: { id: string; failedReason?: string }[] }[];
    expect(listed.map((q) => q.name).sort()).toEqual(Object.values(QUEUE).sort());
    const agg = listed.find((q) => q.name === QUEUE.aggregations)!;
    expect(agg.counts.failed).toBe(1);
    expect(agg.jobs).toEqual([expect.objectContaining({ id: job.id, failedReason: 'recompute exploded' })]);

    const retry = await ops.inject({
      method: 'PUT',
      url: `/admin/queues/api/queues/aggregations/${job.id}/retry`,
      headers: { authorization: basic('ops', ADMIN_TOKEN) },
    });
    expect(retry.statusCode).toBe(204);
    expect(await job.getState()).toBe('waiting');
    expect(await aggregations.getJobCounts('failed', 'waiting')).toEqual({ failed: 0, waiting: 1 });
  });
});
