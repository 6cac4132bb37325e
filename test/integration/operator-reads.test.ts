import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import type { DataFieldRecord } from '../../shared/aggregation/index.js';
import { createRedis, waitForRedis, type Redis } from '../../shared/platform/redis/redis.js';
import { QUEUE } from '../../shared/platform/queues.js';
import { startAggregationWorker, type AggregationWorker, type AggregationWorkerOptions } from '../../workers/aggregation/scheduler.js';
import { admin, call, createProjectWithKeys, createTestApp, waitUntil, type ProjectKeys, type TestApp } from '../helpers/context.js';

/**
 * The reads the web console needs beyond the spec's operations: mutual exclusion groups, the
 * backfill status of data fields and the queue figures. No workers run here except where a test
 * starts the aggregation worker itself, so the queues hold still.
 */
let t: TestApp;
let p: ProjectKeys;
let other: ProjectKeys;

beforeAll(async () => {
  t = await createTestApp({ INGEST_MAX_BACKLOG: '5000' });
  p = await createProjectWithKeys(t);
  other = await createProjectWithKeys(t);
});
afterAll(async () => {
  await t?.close();
});

async function ok(operation: string, key: string, body: Record<string, unknown>): Promise<any> {
  const res = await call(t, operation, key, { projectId: p.projectId, ...body });
  expect(res.status, `${operation}: ${JSON.stringify(res.body)}`).toBe(200);
  return res.body;
}

describe('GetMutualExclusionGroups', () => {
  it('lists the groups treatments named, ascending id, and only the project’s own', async () => {
    expect((await ok('GetMutualExclusionGroups', p.management, {})).mutualExclusionGroups).toEqual([]);
    await ok('InsertSurface', p.management, { name: 'home' });
    await ok('InsertTreatmentType', p.management, {
      treatmentTypeName: 'card',
      lastModifiedBy: 't',
      surfaces: [{ surfaceName: 'home' }],
      contentFieldTypes: [{ fieldName: 'title', maximumLengthAllowed: 20 }],
    });
    const insert = (name: string, group: string) =>
      ok('InsertTreatment', p.management, {
        name,
        description: name,
        treatmentTypeName: 'card',
        lastModifiedBy: 't',
        mutualExclusionGroup: group,
        startTimestamp: new Date().toISOString(),
        content: { languageAgnosticContentFields: [{ fieldName: 'title', stringValue: name }] },
      });
    await insert('a', 'hero');
    await insert('b', 'footer');
    await insert('c', 'hero');
    const groups = (await ok('GetMutualExclusionGroups', p.management, {})).mutualExclusionGroups as {
      projectId: string;
      mutualExclusionGroupId: string;
      name: string;
    }[];
    expect(groups.map((g) => g.name)).toEqual(['hero', 'footer']);
    expect(Number(groups[0].mutualExclusionGroupId)).toBeLessThan(Number(groups[1].mutualExclusionGroupId));
    expect(groups.every((g) => g.projectId === p.projectId && /^[0-9]+$/.test(g.mutualExclusionGroupId))).toBe(true);
    const theirs = await call(t, 'GetMutualExclusionGroups', other.management, { projectId: other.projectId });
    expect(theirs.body).toEqual({ mutualExclusionGroups: [] });
  });

  it('refuses unknown fields, a missing projectId and another project’s key', async () => {
    const bad = await call(t, 'GetMutualExclusionGroups', p.management, { projectId: p.projectId, name: 'hero' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.status).toBe('INVALID_ARGUMENT');
    expect((await call(t, 'GetMutualExclusionGroups', p.management, {})).status).toBe(401);
    expect((await call(t, 'GetMutualExclusionGroups', other.management, { projectId: p.projectId })).status).toBe(401);
    expect((await call(t, 'GetMutualExclusionGroups', p.delivery, { projectId: p.projectId })).status).toBe(403);
  });
});

describe('GetAllDataFields backfillStatus', () => {
  let worker: AggregationWorker | undefined;
  let redis: Redis;
  beforeAll(async () => {
    redis = createRedis(t.ctx.config.redisUrl, 'worker', 'operator-reads-test');
    await waitForRedis(redis, 5000);
  });
  afterAll(async () => {
    await worker?.close();
    redis?.disconnect();
  });

  /** The real aggregation worker of the test app's deployment, over a given field list and warehouse. */
  const startWorker = (warehouse: AggregationWorkerOptions['warehouse'], fields: DataFieldRecord[]) =>
    startAggregationWorker({
      connection: redis,
      redisPrefix: t.ctx.config.redisPrefix,
      keys: t.ctx.keys,
      deletions: t.ctx.profiles.userDeletions,
      warehouse,
      dataFields: { list: async () => fields },
      projects: { list: async () => [] },
      log: pino({ level: 'silent' }),
      now: Date.now,
    });
  const statusOf = async () => {
    const fields = (await ok('GetAllDataFields', p.management, {})).dataFields as { dataFieldId: string; backfillStatus: string }[];
    return Object.fromEntries(fields.map((f) => [f.dataFieldId, f.backfillStatus]));
  };
  const aggregation = async (eventSchemaName: string) =>
    (
      await ok('GetDataFields', p.management, {
        dataFieldParams: [{ eventDataFieldParams: { eventSchemaName, dailyCountAggregation: { windowName: 'LAST_7D' } } }],
      })
    ).dataFields[0].dataFieldId as string;

  it('follows an aggregation from PENDING to COMPLETE; a user property has none', async () => {
    const plan = (await ok('InsertDataField', p.management, { name: 'plan', userProperty: { dataType: 'STRING' } })).dataField.dataFieldId as string;
    const bought = await aggregation('purchase');
    // no worker has read the stream of new fields yet
    expect(await statusOf()).toMatchObject({ [plan]: 'NOT_APPLICABLE', [bought]: 'PENDING' });

    // The real worker reads the stream and runs the backfill (over no ClickHouse rows: the
    // field list it is given is empty, so the job completes without a query).
    worker = startWorker({} as never, []);
    await worker.queue.add('backfill-poll', { kind: 'backfillPoll' });
    await waitUntil(async () => (await statusOf())[bought] === 'COMPLETE', 30_000, 50);

    // A job record that expired still reads COMPLETE: the stream says the field was picked up.
    const job = await worker.queue.getJob(`backfill-${p.projectId}-${bought}`);
    await job!.remove();
    expect((await statusOf())[bought]).toBe('COMPLETE');
  });

  it('reads PENDING while the worker has not read a new field, and while a backfill waits for a retry', async () => {
    await worker!.close();
    const later = await aggregation('refund');
    expect((await statusOf())[later]).toBe('PENDING');

    // A failing backfill (its ClickHouse query throws) is retried after a delay: still PENDING.
    const fields = await t.ctx.aggregation.dataFields.list(p.projectId);
    worker = startWorker(
      new Proxy(
        {},
        {
          get: () => async () => {
            throw new Error('no ClickHouse here');
          },
        },
      ) as never,
      fields,
    );
    await worker.queue.add('backfill-poll', { kind: 'backfillPoll' });
    const job = () => worker!.queue.getJobState(`backfill-${p.projectId}-${later}`);
    await waitUntil(async () => (await job()) === 'delayed', 30_000, 50);
    expect((await statusOf())[later]).toBe('PENDING');
  });
});

describe('GetQueueStats', () => {
  it('reports every queue and the ingestion backlog against INGEST_MAX_BACKLOG', async () => {
    const events = Array.from({ length: 3 }, (_, i) => ({ eventName: 'app_open', clientEventTimestamp: new Date().toISOString(), insertId: `q${i}` }));
    const logged = await call(t, 'LogEvents', p.logEvents, { projectId: p.projectId, userId: 'u1', events });
    expect(logged.status, JSON.stringify(logged.body)).toBe(200);
    const res = await admin(t, 'GetQueueStats', {});
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const byName = Object.fromEntries((res.body.queues as { queue: string; oldestWaitingSeconds: number }[]).map((q) => [q.queue, q]));
    expect(Object.keys(byName).sort()).toEqual(Object.values(QUEUE).sort());
    // no ingest worker runs here: the job waits
    expect(byName[QUEUE.events]).toMatchObject({ waiting: 1, active: 0, failed: 0 });
    expect(byName[QUEUE.events].oldestWaitingSeconds).toBeGreaterThanOrEqual(0);
    expect(res.body.ingestBacklog).toEqual({ events: 3, limit: 5000 });
  });

  it('refuses a body with fields and a call without the admin token', async () => {
    const bad = await admin(t, 'GetQueueStats', { queue: 'events' });
    expect(bad.status).toBe(400);
    const res = await t.app.inject({ method: 'POST', url: '/admin/v1/GetQueueStats', payload: {} });
    expect(res.statusCode).toBe(401);
  });
});
