import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ClickHouseClient } from '@clickhouse/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createProjectWithKeys, createTestApp, waitUntil, type ProjectKeys, type TestApp } from '../helpers/context.js';
import { createClickhouse } from '../../shared/platform/warehouse/clickhouse.js';
import { ClickhouseWarehouse } from '../../shared/platform/warehouse/clickhouse-warehouse.js';
import { createRedis } from '../../shared/platform/redis/redis.js';
import { createLogger } from '../../shared/platform/logger.js';
import { runMigrations } from '../../shared/platform/warehouse/migrations.js';
import { ProfileStore } from '../../shared/profiles/profile.store.js';
import { startIngestWorkers, type IngestWorkers } from '../../workers/ingestion/ingest-workers.js';

/**
 * Ingestion backpressure: with INGEST_MAX_BACKLOG tiny and no workers, the queue fills, LogEvents and
 * LogTreatmentInteraction answer 429 RESOURCE_EXHAUSTED with Retry-After; once workers drain it
 * they answer 200 again, and every event accepted before is stored exactly once.
 */
let t: TestApp;
let p: ProjectKeys;
let treatmentId: string;
let clickhouse: ClickHouseClient | undefined;
let workers: IngestWorkers | undefined;
let connection: ReturnType<typeof createRedis> | undefined;

async function ok(op: string, body: Record<string, unknown>) {
  const r = await call(t, op, p.management, { projectId: p.projectId, ...body });
  if (r.status !== 200) throw new Error(JSON.stringify(r.body));
  return r.body;
}

beforeAll(async () => {
  t = await createTestApp({ INGEST_MAX_BACKLOG: '5' });
  p = await createProjectWithKeys(t);
  await ok('InsertSurface', { name: 's' });
  await ok('InsertTreatmentType', {
    treatmentTypeName: 'card',
    lastModifiedBy: 't',
    surfaces: [{ surfaceName: 's' }],
    contentFieldTypes: [{ fieldName: 'body', maximumLengthAllowed: 100 }],
  });
  const r = await ok('InsertTreatment', {
    name: 'card',
    description: 'd',
    treatmentTypeName: 'card',
    lastModifiedBy: 't',
    startTimestamp: '2026-01-01T00:00:00Z',
    shouldPublish: true,
    content: { languageAgnosticContentFields: [{ fieldName: 'body', stringValue: 'x' }] },
  });
  treatmentId = r.treatment.treatmentId;
});
afterAll(async () => {
  await workers?.close();
  connection?.disconnect();
  await clickhouse?.close();
  await t?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function logEvents(n: number, accepted: string[]) {
  const ids = Array.from({ length: n }, () => `ins-${accepted.length}-${Math.random().toString(36).slice(2)}`);
  const events = ids.map((insertId) => ({ eventName: 'e', clientEventTimestamp: new Date().toISOString(), insertId }));
  return call(t, 'LogEvents', p.logEvents, { projectId: p.projectId, userId: 'u-bp', events }).then((r) => ({ ...r, ids }));
}

const interaction = () =>
  t.app.inject({
    method: 'POST',
    url: '/v1/LogTreatmentInteraction',
    headers: { 'x-api-key': p.delivery },
    payload: {
      projectId: p.projectId,
      userId: 'u-bp',
      treatmentId,
      treatmentTrackingId: `${treatmentId}_r1`,
      surface: 's',
      interactionType: 'VIEWED',
      interactionTimeMicros: String(Date.now() * 1000),
    },
  });

describe('ingestion backpressure (INGEST_MAX_BACKLOG=5, no workers)', () => {
  it('answers 429 once the backlog is full, 200 again once it drained, and stores every accepted event once', async () => {
    const accepted: string[] = [];
    let refused: Awaited<ReturnType<typeof logEvents>> | undefined;
    // Requests of 2 events each, spaced so the backlog monitor (a poll every 250 ms) sees the queue grow.
    for (let i = 0; i < 200 && !refused; i++) {
      const r = await logEvents(2, accepted);
      if (r.status === 200) accepted.push(...r.ids);
      else refused = r;
      await sleep(100);
    }
    expect(refused, 'LogEvents never refused').toBeDefined();
    expect(refused!.status).toBe(429);
    expect(refused!.body).toEqual({ error: { code: 429, status: 'RESOURCE_EXHAUSTED', message: expect.any(String), details: [] } });
    expect(accepted.length).toBeGreaterThan(5);
    // the backlog is counted in events: queued jobs × the events per job producers enqueued (2 here)
    await t.ctx.ingestion.ingestBacklog.poll();
    expect(t.ctx.ingestion.ingestBacklog.backlog).toBe(accepted.length);

    const refusedInteraction = await interaction();
    expect(refusedInteraction.statusCode).toBe(429);
    expect(Number(refusedInteraction.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(refusedInteraction.json().error.status).toBe('RESOURCE_EXHAUSTED');
    // the raw response carries Retry-After in whole seconds
    const raw = await t.app.inject({
      method: 'POST',
      url: '/v1/LogEvents',
      headers: { 'x-api-key': p.logEvents },
      payload: { projectId: p.projectId, userId: 'u-bp', events: [{ eventName: 'e', clientEventTimestamp: new Date().toISOString() }] },
    });
    expect(raw.statusCode).toBe(429);
    expect(raw.headers['retry-after']).toMatch(/^[1-9]\d*$/);
    // a bad body is still a 400, not a 429
    expect((await call(t, 'LogEvents', p.logEvents, { projectId: p.projectId, userId: 'u-bp', events: [] })).status).toBe(400);

    // Workers start and drain the queue: ingestion is admitted again.
    clickhouse = createClickhouse({ dataDir: mkdtempSync(join(tmpdir(), 'tds-backpressure-')) });
    await runMigrations(clickhouse);
    connection = createRedis(t.ctx.config.redisUrl, 'worker');
    workers = startIngestWorkers({
      connection,
      redisPrefix: t.ctx.config.redisPrefix,
      warehouse: new ClickhouseWarehouse(clickhouse),
      profiles: new ProfileStore(connection, t.ctx.keys),
      log: createLogger('silent'),
      now: Date.now,
      concurrency: 8,
    });
    let again: Awaited<ReturnType<typeof logEvents>> | undefined;
    await waitUntil(
      async () => {
        again = await logEvents(1, accepted);
        return again.status === 200;
      },
      60_000,
      300,
    );
    accepted.push(...again!.ids);
    expect((await interaction()).statusCode).toBe(200);

    await waitUntil(
      async () => {
        const c = await t.ctx.ingestion.ingest.eventsQueue.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
        return c.waiting + c.active + c.delayed + c.prioritized === 0;
      },
      60_000,
      100,
    );
    const rs = await clickhouse.query({
      query: 'SELECT insert_id, count() AS n FROM events FINAL WHERE project_id = {p:String} GROUP BY insert_id',
      query_params: { p: p.projectId },
      format: 'JSONEachRow',
    });
    const rows = await rs.json<{ insert_id: string; n: string }>();
    expect(rows.map((r) => r.insert_id).sort()).toEqual([...accepted].sort());
    expect(rows.every((r) => Number(r.n) === 1)).toBe(true);
    expect((await t.ctx.ingestion.ingest.eventsQueue.getJobCounts('failed')).failed).toBe(0);
  }, 120_000);
});

describe('Pub/Sub intake under backpressure', () => {
  it('holds and then nacks messages instead of queueing them while the backlog is full', async () => {
    const { PubSubIntake } = await import('../../workers/ingestion/pubsub-intake.js');
    const { createProtoCodec } = await import('../../shared/ingestion/proto.codec.js');
    const full = true;
    const enqueued: unknown[] = [];
    const intake = new PubSubIntake(
      {
        pubsub: { close: async () => undefined } as never,
        sources: { list: async () => [] },
        events: { enqueue: async (job) => void enqueued.push(job) },
        backlog: { overLimit: () => full },
        deadLetters: undefined as never,
        bus: { on: () => () => undefined },
        codec: createProtoCodec(),
        log: createLogger('silent'),
        now: Date.now,
      },
      { backlogNackDelayMs: 50 },
    );
    // A stand-in for the client library's message: records how it was settled.
    const message = (id: string) => {
      const m = {
        id,
        attributes: { data_type: 'EventData' },
        data: Buffer.from(''),
        settled: [] as string[],
        ack: () => m.settled.push('ack'),
        nack: () => m.settled.push('nack'),
      };
      return m;
    };
    const onMessage = (m: ReturnType<typeof message>) =>
      (intake as unknown as { onMessage(s: unknown, m: unknown): Promise<void> }).onMessage({ projectId: 'p', topic: 't', subscription: 's' }, m);
    const held = message('1');
    await onMessage(held);
    expect(held.settled).toEqual([]); // held first: an immediate nack would come straight back
    await waitUntil(() => held.settled.length > 0, 5000);
    expect(held.settled).toEqual(['nack']);
    // closing nacks whatever is still held, at once
    const atClose = message('2');
    await onMessage(atClose);
    await intake.close();
    expect(atClose.settled).toEqual(['nack']);
    expect(enqueued).toEqual([]);
  });
});
