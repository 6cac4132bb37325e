import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, projectWithKeys, type TestService } from '../helpers/service.js';
import { waitUntil } from '../helpers/context.js';
import { aggregationApi, countOf, DAY, eventAgg, iso } from '../helpers/aggregation-api.js';
import { Queue } from 'bullmq';
import { utcDayOffset } from '../../shared/aggregation/data-field-values.js';
import { bullPrefix, QUEUE } from '../../shared/platform/queues.js';
import { recomputeDataFields, type RecomputeCursor } from '../../workers/aggregation/recompute.js';
import { AGGREGATION_SCHEDULES, reconcileSchedules } from '../../workers/aggregation/scheduler.js';
import { queueConnection } from '../../shared/platform/redis/redis.js';

/**
 * Data-field aggregations end to end: the incremental path through the ingestion
 * workers, the backfill of fields created after their events, and the recompute from ClickHouse.
 */

let s: TestService;
let keys: Awaited<ReturnType<typeof projectWithKeys>>;
const { ok, dataFieldIds, logEvents, dataFields, expectFields, queuesIdle, recomputeDeps } = aggregationApi(() => ({ s, keys }));

beforeAll(async () => {
  s = await startTestService();
  keys = await projectWithKeys(s, 'agg1');
  // one event through the whole pipeline, so the freshness test below measures a warm service
  await logEvents('warm-up', [{ eventName: 'warm', clientEventTimestamp: iso(Date.now()) }]);
  await waitUntil(queuesIdle, 20_000);
}, 120_000);

afterAll(async () => {
  await s?.stop();
});

describe('incremental path: ingested events update aggregations', () => {
  it('a logged event shows in a daily count within 1 s; duplicates and events outside the window do not count', async () => {
    const [last7, last30] = await dataFieldIds(countOf('purchase', 'LAST_7D'), countOf('purchase', 'LAST_30D'));
    const now = Date.now();
    await logEvents('u-count', [{ eventName: 'purchase', clientEventTimestamp: iso(now), insertId: 'p-1' }]);
    await expectFields('u-count', { [last7]: '1', [last30]: '1' }, 1000);

    await logEvents('u-count', [
      { eventName: 'purchase', clientEventTimestamp: iso(now), insertId: 'p-1' }, // duplicate
      { eventName: 'purchase', clientEventTimestamp: iso(now - 10 * DAY), insertId: 'p-old' },
      { eventName: 'purchase', clientEventTimestamp: iso(now - DAY), insertId: 'p-2' },
      { eventName: 'view', clientEventTimestamp: iso(now), insertId: 'v-1' },
    ]);
    await logEvents('u-count', [{ eventName: 'purchase', clientEventTimestamp: iso(now - DAY), insertId: 'p-2' }]); // retried request
    await waitUntil(queuesIdle, 20_000);
    await expectFields('u-count', { [last7]: '2', [last30]: '3' }, 2000);
  });

  it('first/latest timestamps and days since them', async () => {
    const [first, latest, sinceFirst, sinceLast] = await dataFieldIds(
      eventAgg('login', 'firstTimestampAggregation'),
      eventAgg('login', 'latestTimestampAggregation'),
      eventAgg('login', 'daysSinceFirstTimestampAggregation'),
      eventAgg('login', 'daysSinceLastTimestampAggregation'),
    );
    const now = Date.now();
    const t1 = Math.floor((now - 3 * DAY - 3600_000) / 1000) * 1000;
    const t2 = Math.floor((now - DAY - 60_000) / 1000) * 1000;
    // out of order on purpose: latest arrives first
    await logEvents('u-ts', [{ eventName: 'login', clientEventTimestamp: iso(t2) }]);
    await logEvents('u-ts', [{ eventName: 'login', clientEventTimestamp: iso(t1) }]);
    await expectFields('u-ts', { [first]: iso(t1), [latest]: iso(t2), [sinceFirst]: '3', [sinceLast]: '1' }, 3000);
    const other = await dataFields('u-nobody');
    expect(other[first]).toBeUndefined();
    expect(other[sinceLast]).toBeUndefined();
  });

  it('an event property filter counts only events whose properties equal every given value', async () => {
    const [pro, seats3, any] = await dataFieldIds(
      countOf('upgrade', 'LAST_7D', { propertyValueByPropertyName: { plan: { stringValue: 'pro' } } }),
      countOf('upgrade', 'LAST_7D', { propertyValueByPropertyName: { plan: { stringValue: 'pro' }, seats: { longValue: 3 } } }),
      countOf('upgrade', 'LAST_7D'),
    );
    const at = iso(Date.now());
    await logEvents('u-props', [
      { eventName: 'upgrade', clientEventTimestamp: at, eventProperties: { plan: { stringValue: 'pro' }, seats: { longValue: '3' } } },
      { eventName: 'upgrade', clientEventTimestamp: at, eventProperties: { plan: { stringValue: 'pro' }, seats: { longValue: '4' } } },
      { eventName: 'upgrade', clientEventTimestamp: at, eventProperties: { plan: { stringValue: 'basic' }, seats: { longValue: '3' } } },
      { eventName: 'upgrade', clientEventTimestamp: at },
    ]);
    await expectFields('u-props', { [pro]: '2', [seats3]: '1', [any]: '4' }, 3000);
    // the recompute from ClickHouse applies the same filter
    expect((await s.admin('RunAggregations', { projectId: keys.projectId })).status).toBe(200);
    expect(await dataFields('u-props')).toMatchObject({ [pro]: '2', [seats3]: '1', [any]: '4' });
  });
});

describe('fields created after their events (backfill, recompute)', () => {
  it('a new field is backfilled from stored history without any call', async () => {
    const now = Date.now();
    await logEvents('u-late', [
      { eventName: 'share', clientEventTimestamp: iso(now) },
      { eventName: 'share', clientEventTimestamp: iso(now - 2 * DAY) },
      { eventName: 'share', clientEventTimestamp: iso(now - 20 * DAY) },
    ]);
    await waitUntil(queuesIdle, 20_000);
    const [last7, lastShare] = await dataFieldIds(countOf('share', 'LAST_7D'), eventAgg('share', 'latestTimestampAggregation'));
    await expectFields('u-late', { [last7]: '2', [lastShare]: iso(now) }, 15_000);
  });

  it('RunAggregations recomputes every field now and repairs drifted profile state', async () => {
    const now = Date.now();
    await logEvents('u-run', [
      { eventName: 'invite', clientEventTimestamp: iso(now) },
      { eventName: 'invite', clientEventTimestamp: iso(now - DAY) },
      { eventName: 'invite', clientEventTimestamp: iso(now - 40 * DAY) },
    ]);
    await waitUntil(queuesIdle, 20_000);
    const [last3, sinceFirst] = await dataFieldIds(countOf('invite', 'LAST_3D'), eventAgg('invite', 'daysSinceFirstTimestampAggregation'));
    const run = await s.admin('RunAggregations', { projectId: keys.projectId });
    expect(run.status).toBe(200);
    expect(run.body.dataFieldsRecomputed).toBeGreaterThanOrEqual(2);
    expect(run.body.usersUpdated).toBeGreaterThan(0);
    expect(await dataFields('u-run')).toMatchObject({ [last3]: '2', [sinceFirst]: '40' });

    // drift: a finished day counted wrongly, and a stale day far outside every window
    const { redis, keys: rk } = s.ctx;
    const profileKey = rk.profile(keys.projectId, 'u-run');
    await redis.hset(profileKey, `dc:${last3}:${utcDayOffset(now, -1)}`, '99', `dc:${last3}:${utcDayOffset(now, -30)}`, '5');
    expect((await dataFields('u-run'))[last3]).toBe('100');
    expect((await s.admin('RunAggregations', { projectId: keys.projectId })).status).toBe(200);
    expect((await dataFields('u-run'))[last3]).toBe('2');
    expect(await redis.hexists(profileKey, `dc:${last3}:${utcDayOffset(now, -30)}`)).toBe(0);
  });

  it('RunAggregations: 404 for an unknown project, 400 without projectId', async () => {
    expect((await s.admin('RunAggregations', { projectId: 'nope' })).status).toBe(404);
    expect((await s.admin('RunAggregations', {})).status).toBe(400);
  });
});

describe('recompute runs', () => {
  /** Users with one event yesterday in a new LAST_7D field, whose stored count for yesterday then drifts to 50. */
  async function driftedUsers(eventName: string, users: string[]): Promise<{ id: string }> {
    const now = Date.now();
    for (const u of users) await logEvents(u, [{ eventName, clientEventTimestamp: iso(now - DAY) }]);
    await waitUntil(queuesIdle, 20_000);
    const [id] = await dataFieldIds(countOf(eventName, 'LAST_7D'));
    for (const u of users) await expectFields(u, { [id]: '1' }, 15_000);
    const { redis, keys: rk } = s.ctx;
    for (const u of users) await redis.hset(rk.profile(keys.projectId, u), `dc:${id}:${utcDayOffset(now, -1)}`, '50');
    return { id };
  }

  it('pages by user id and resumes after the cursor of an interrupted run', async () => {
    const users = ['u-pg-a', 'u-pg-b', 'u-pg-c'];
    const { id } = await driftedUsers('paged', users);
    const checkpoints: RecomputeCursor[] = [];
    const result = await recomputeDataFields(
      recomputeDeps(s.clickhouse),
      { projectId: keys.projectId },
      {
        resumeFrom: { dataFieldIds: [id], fieldIndex: 0, afterUserId: 'u-pg-a', usersUpdated: 0 },
        pageUsers: 1,
        batchUsers: 1,
        onCheckpoint: async (c) => void checkpoints.push(c),
      },
    );
    expect(result).toEqual({ dataFieldsRecomputed: 1, usersUpdated: 2, usersLeft: 0 });
    expect(checkpoints.map((c) => c.afterUserId)).toEqual(['u-pg-b', 'u-pg-c', '']);
    expect((await dataFields('u-pg-a'))[id]).toBe('50'); // before the cursor: not touched
    expect((await dataFields('u-pg-b'))[id]).toBe('1');
    expect((await dataFields('u-pg-c'))[id]).toBe('1');
  });

  it('the hourly job fans out to every project and repairs its profiles', async () => {
    const { id } = await driftedUsers('hourly', ['u-hourly']);
    const queue = new Queue(QUEUE.aggregations, { connection: queueConnection(s.ctx.redis), prefix: bullPrefix(s.ctx.config.redisPrefix) });
    try {
      await queue.add('recompute-all', AGGREGATION_SCHEDULES.find((x) => x.key === 'recompute-all')!.data);
      await expectFields('u-hourly', { [id]: '1' }, 15_000);
    } finally {
      await queue.close();
    }
  });

  it('the schedule is reconciled: declared schedulers upserted, stale ones removed', async () => {
    const queue = new Queue(QUEUE.aggregations, { connection: queueConnection(s.ctx.redis), prefix: bullPrefix(s.ctx.config.redisPrefix) });
    try {
      await queue.upsertJobScheduler('retired-job', { every: 3_600_000 }, { data: { kind: 'backfillPoll' } });
      await reconcileSchedules(queue, AGGREGATION_SCHEDULES, s.ctx.log);
      const ids = (await queue.getJobSchedulers(0, -1)).map((x) => x.key).sort();
      expect(ids).toEqual(['backfill-poll', 'recompute-all']);
      expect((await queue.getJobScheduler('recompute-all'))?.tz).toBe('UTC');
    } finally {
      await queue.close();
    }
  });
});

describe('treatment interactions', () => {
  let treatmentId: string;

  beforeAll(async () => {
    const m = keys.management;
    for (const name of ['home', 'inbox']) await ok('/v1/InsertSurface', m, { name });
    await ok('/v1/InsertTreatmentType', m, {
      treatmentTypeName: 'card',
      lastModifiedBy: 'setup',
      surfaces: [{ surfaceName: 'home' }, { surfaceName: 'inbox' }],
      contentFieldTypes: [{ fieldName: 'title', maximumLengthAllowed: 50 }],
    });
    const inserted = await ok('/v1/InsertTreatment', m, {
      name: 'Welcome',
      description: 'd',
      treatmentTypeName: 'card',
      lastModifiedBy: 'setup',
      startTimestamp: iso(Date.now() - DAY),
      shouldPublish: true,
      content: { languageAgnosticContentFields: [{ fieldName: 'title', stringValue: 'Hi' }] },
    });
    treatmentId = inserted.treatment.treatmentId;
  });

  function interact(userId: string, responseId: string, interactionType: string, surface: string, atMs: number) {
    return ok('/v1/LogTreatmentInteraction', keys.delivery, {
      userId,
      treatmentId,
      treatmentTrackingId: `${treatmentId}_${responseId}`,
      surface,
      interactionType,
      interactionTimeMicros: String(atMs * 1000),
    });
  }

  it('counts interactions by type and scope, and distinct tracking ids once, incrementally and after a recompute', async () => {
    const tp = (extra: object) => ({ treatmentDataFieldParams: { dailyCountAggregation: { windowName: 'LAST_7D' }, ...extra } });
    const [views, distinctViews, homeClicks, treatmentViews, lastView] = await dataFieldIds(
      tp({ treatmentInteractionType: 'VIEWED' }),
      tp({ treatmentInteractionType: 'VIEWED', isDistinctInteraction: true }),
      tp({ treatmentInteractionType: 'CLICKED', surfaceName: 'home' }),
      tp({ treatmentInteractionType: 'VIEWED', treatmentId }),
      { treatmentDataFieldParams: { treatmentInteractionType: 'VIEWED', latestTimestampAggregation: {} } },
    );
    const now = Date.now();
    await interact('u-int', 'r1', 'VIEWED', 'home', now - 2000);
    await interact('u-int', 'r1', 'VIEWED', 'home', now - 1000); // the same tracking id again
    await interact('u-int', 'r2', 'VIEWED', 'inbox', now);
    await interact('u-int', 'r1', 'CLICKED', 'home', now);
    await interact('u-int', 'r2', 'CLICKED', 'inbox', now);
    const expected = { [views]: '3', [distinctViews]: '2', [homeClicks]: '1', [treatmentViews]: '3', [lastView]: iso(now) };
    await expectFields('u-int', expected, 3000);

    expect((await s.admin('RunAggregations', { projectId: keys.projectId })).status).toBe(200);
    expect(await dataFields('u-int')).toMatchObject(expected);
    // after the recompute the marker of r1 is stamped: seeing r1 again still does not count
    await interact('u-int', 'r1', 'VIEWED', 'home', now + 1000);
    await expectFields('u-int', { [views]: '4' }, 3000);
    expect((await dataFields('u-int'))[distinctViews]).toBe('2');
  });

  it('a distinct field created after the interactions is backfilled and does not count a known tracking id again', async () => {
    const now = Date.now();
    await interact('u-int2', 'r7', 'SWIPE', 'home', now - DAY);
    await interact('u-int2', 'r8', 'SWIPE', 'home', now);
    await waitUntil(queuesIdle, 20_000);
    const [distinctSwipes] = await dataFieldIds({
      treatmentDataFieldParams: { treatmentInteractionType: 'SWIPE', isDistinctInteraction: true, dailyCountAggregation: { windowName: 'LAST_7D' } },
    });
    await expectFields('u-int2', { [distinctSwipes]: '2' }, 15_000);
    await interact('u-int2', 'r7', 'SWIPE', 'home', now);
    await waitUntil(queuesIdle, 20_000);
    expect((await dataFields('u-int2'))[distinctSwipes]).toBe('2');
  });

  it('a backfill writes a user with more marker fields than one chunk of 1,000 HSET arguments', async () => {
    const now = Date.now();
    // 700 distinct tracking ids: 1,400 field/value arguments, written in chunks of 1,000
    for (let i = 0; i < 700; i += 50)
      await Promise.all(Array.from({ length: 50 }, (_, k) => interact('u-many', `m${i + k}`, 'SNOOZED', 'home', now - ((i + k) % 3) * DAY)));
    await waitUntil(queuesIdle, 30_000);
    const [distinctSnoozes] = await dataFieldIds({
      treatmentDataFieldParams: { treatmentInteractionType: 'SNOOZED', isDistinctInteraction: true, dailyCountAggregation: { windowName: 'LAST_7D' } },
    });
    await expectFields('u-many', { [distinctSnoozes]: '700' }, 20_000);
    const profile = await s.ctx.redis.hgetall(s.ctx.keys.profile(keys.projectId, 'u-many'));
    expect(Object.keys(profile).filter((k) => k.startsWith(`dm:${distinctSnoozes}:`))).toHaveLength(700);
  });
});
