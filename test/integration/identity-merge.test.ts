import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, projectWithKeys, type TestService, v1Calls } from '../helpers/service.js';
import { Queue } from 'bullmq';
import { bullPrefix, QUEUE } from '../../shared/platform/queues.js';
import { waitUntil } from '../helpers/context.js';
import { createRedis, queueConnection } from '../../shared/platform/redis/redis.js';
import { ProfileStore } from '../../shared/profiles/profile.store.js';
import { redisKeys } from '../../shared/platform/redis/redis-keys.js';

/**
 * Identity merge (preLoginTempUserId) against the whole service (workers thread, embedded ClickHouse, real Redis): a signed-out
 * user's events and interactions followed by a signed-in event carrying both ids give one
 * profile with the sum of both histories, applied once; GetTreatments for either id sees it;
 * later activity of the pre-login id goes to the user; a recompute from ClickHouse keeps the sum;
 * a pre-login id already merged is not merged into a second user.
 */
let s: TestService;
let k: Awaited<ReturnType<typeof projectWithKeys>>;
let treatmentId: string;
let purchases: string;
let clicks: string;
const DAY = 86_400_000;

const { ok } = v1Calls(
  () => s,
  () => k.projectId,
);
async function profile(userId: string): Promise<any> {
  const r = await s.admin('GetUserProfile', { projectId: k.projectId, userId });
  if (r.status !== 200) throw new Error(JSON.stringify(r.body));
  return r.body.profile;
}
async function served(userId: string): Promise<boolean> {
  const r = await ok('GetTreatments', k.delivery, { userId, surfaces: [{ surface: 'home' }] });
  return (r.userTreatments ?? []).some((u: any) => u.treatmentId === treatmentId);
}
const purchase = (insertId: string, atMs: number, extra: Record<string, unknown> = {}) => ({
  eventName: 'purchase',
  clientEventTimestamp: new Date(atMs).toISOString(),
  insertId,
  ...extra,
});

beforeAll(async () => {
  s = await startTestService();
  k = await projectWithKeys(s, `idm${Date.now().toString(36)}`);
  await ok('InsertSurface', k.management, { name: 'home' });
  await ok('InsertTreatmentType', k.management, {
    treatmentTypeName: 'card',
    lastModifiedBy: 't',
    surfaces: [{ surfaceName: 'home' }],
    contentFieldTypes: [{ fieldName: 'title', maximumLengthAllowed: 100 }],
  });
  const f = await ok('GetDataFields', k.management, {
    dataFieldParams: [
      { eventDataFieldParams: { eventSchemaName: 'purchase', dailyCountAggregation: { windowName: 'LAST_7D' } } },
      { treatmentDataFieldParams: { surfaceName: 'home', treatmentInteractionType: 'CLICKED', dailyCountAggregation: { windowName: 'LAST_7D' } } },
    ],
  });
  [purchases, clicks] = f.dataFields.map((d: { dataFieldId: string }) => d.dataFieldId);
  // The new fields' backfills run before any event: a recompute of a user between the merge's row
  // copy and its profile step would count the pre-login history twice until the next hourly
  // recompute repairs it (README, identity merge), which this test must not race with.
  const aggregations = new Queue(QUEUE.aggregations, {
    connection: queueConnection(s.ctx.redis),
    prefix: bullPrefix(s.ctx.config.redisPrefix, s.ctx.redis),
    skipVersionCheck: true,
  });
  for (const id of [purchases, clicks]) {
    await waitUntil(async () => (await (await aggregations.getJob(`backfill-${k.projectId}-${id}`))?.getState()) === 'completed', 60_000, 100);
  }
  await aggregations.close();
  const r = await ok('InsertTreatment', k.management, {
    name: 'loyal',
    description: 'three purchases this week',
    treatmentTypeName: 'card',
    lastModifiedBy: 't',
    startTimestamp: new Date(Date.now() - 3 * DAY).toISOString(),
    shouldPublish: true,
    content: { languageAgnosticContentFields: [{ fieldName: 'title', stringValue: 'thanks' }] },
    eligibilityRules: { rules: [{ dataFieldId: purchases, condition: 'GREATER_THAN_OR_EQUALS', rhsValue: '4' }] },
  });
  treatmentId = r.treatment.treatmentId;
}, 120_000);

afterAll(async () => {
  await s?.stop();
});

describe('identity merge', () => {
  it('merges the signed-out history into the signed-in user once; both ids see it', async () => {
    const now = Date.now();
    // signed out: 2 purchases yesterday and 1 today, a newer tier, a click
    await ok('LogEvents', k.logEvents, {
      userId: 'anon-1',
      events: [
        purchase('a1', now - DAY),
        purchase('a2', now - DAY + 1),
        purchase('a3', now - 1000, { userProperties: { tier: { stringValue: 'silver' }, seen: { booleanValue: true } } }),
      ],
    });
    await ok('LogTreatmentInteraction', k.delivery, {
      userId: 'anon-1',
      treatmentId,
      treatmentTrackingId: `${treatmentId}_r-anon`,
      surface: 'home',
      interactionType: 'CLICKED',
      interactionTimeMicros: String((now - 500) * 1000),
    });
    await waitUntil(async () => (await profile('anon-1')).dataFields[clicks] === '1' && (await profile('anon-1')).dataFields[purchases] === '3', 60_000, 100);
    // the signed-in user: an older tier, one purchase of their own
    await ok('LogEvents', k.logEvents, {
      userId: 'alice',
      events: [purchase('b0', now - 2 * DAY, { userProperties: { tier: { stringValue: 'gold' }, name: { stringValue: 'Alice' } } })],
    });
    await waitUntil(async () => (await profile('alice')).dataFields[purchases] === '1', 60_000, 100);
    expect(await served('alice')).toBe(false);
    expect(await served('anon-1')).toBe(false);

    // signs in: an event carrying both ids
    await ok('LogEvents', k.logEvents, {
      userId: 'alice',
      events: [{ eventName: 'login', clientEventTimestamp: new Date(now - 100).toISOString(), insertId: 'l1', preLoginTempUserId: 'anon-1' }],
    });
    await waitUntil(async () => (await profile('alice')).mergedFrom?.includes('anon-1') === true, 60_000, 100);
    const merged = await profile('alice');
    expect(merged.mergedFrom).toEqual(['anon-1']);
    expect(merged.dataFields[purchases]).toBe('4');
    expect(merged.dataFields[clicks]).toBe('1');
    // last write wins by timestamp: anon-1's tier is newer; alice's name stays
    expect(merged.userProperties).toMatchObject({ tier: 'silver', name: 'Alice', seen: true });
    const alias = await profile('anon-1');
    expect(alias.mergedInto).toBe('alice');
    expect(alias.dataFields).toEqual(merged.dataFields);
    expect(await served('alice')).toBe(true);
    expect(await served('anon-1')).toBe(true);

    // again (a client sends both ids on every event; a retried job): merged once
    await ok('LogEvents', k.logEvents, {
      userId: 'alice',
      events: [{ eventName: 'login', clientEventTimestamp: new Date(now - 50).toISOString(), insertId: 'l2', preLoginTempUserId: 'anon-1' }],
    });
    // the merge steps themselves, repeated as a retry after a crash would: nothing changes
    const redis = createRedis(s.ctx.config, 'worker', 'test-merge');
    try {
      const store = new ProfileStore(redis, redisKeys(s.ctx.config.redisPrefix));
      expect(await store.claimAlias(k.projectId, 'anon-1', 'alice')).toEqual({ owner: 'alice', pending: false });
      expect(await store.mergeProfile(k.projectId, 'anon-1', 'alice')).toBe(false);
      await store.clearMerged(k.projectId, 'anon-1');
    } finally {
      redis.disconnect();
    }

    // later activity of the pre-login id is the user's: events and interactions
    await ok('LogEvents', k.logEvents, { userId: 'anon-1', events: [purchase('a4', now - 10)] });
    await ok('LogTreatmentInteraction', k.delivery, {
      userId: 'anon-1',
      treatmentId,
      treatmentTrackingId: `${treatmentId}_r-anon2`,
      surface: 'home',
      interactionType: 'CLICKED',
      interactionTimeMicros: String(now * 1000),
    });
    await waitUntil(async () => (await profile('alice')).dataFields[purchases] === '5' && (await profile('alice')).dataFields[clicks] === '2', 60_000, 100);

    // a recompute from ClickHouse (past days replaced) keeps both histories: rows count for alice
    expect((await s.admin('RunAggregations', { projectId: k.projectId })).status).toBe(200);
    expect((await profile('alice')).dataFields).toMatchObject({ [purchases]: '5', [clicks]: '2' });
    // and a field created now is backfilled with both histories
    const f = await ok('GetDataFields', k.management, {
      dataFieldParams: [{ eventDataFieldParams: { eventSchemaName: 'purchase', dailyCountAggregation: { windowName: 'LAST_30D' } } }],
    });
    await waitUntil(async () => (await profile('alice')).dataFields[f.dataFields[0].dataFieldId] === '5', 60_000, 100);

    // A decision made for the pre-login id is the user's: logged under the user it was merged into
    const g = await ok('GetTreatments', k.delivery, { userId: 'anon-1', surfaces: [{ surface: 'home' }] });
    const trackingId = g.userTreatments[0].treatmentTrackingId;
    const decided = async (userId: string) =>
      (await ok('ListDecisions', k.management, { userId, limit: 100 })).decisions.some((d: { responseId: string }) => d.responseId === g.responseId);
    await waitUntil(() => decided('alice'), 60_000, 100);
    expect(await decided('anon-1')).toBe(false);
    await ok('LogTreatmentInteraction', k.delivery, {
      userId: 'alice',
      treatmentTrackingId: trackingId,
      interactionType: 'CLICKED',
      interactionTimeMicros: String(Date.now() * 1000),
    });
    await waitUntil(async () => (await profile('alice')).dataFields[clicks] === '3', 60_000, 100);
  }, 240_000);

  it('a merge whose worker died between applying and clearing is finished once by the next event', async () => {
    const now = Date.now();
    await ok('LogEvents', k.logEvents, { userId: 'anon-3', events: [purchase('e1', now - 1000), purchase('e2', now - 999)] });
    await waitUntil(async () => (await profile('anon-3')).dataFields[purchases] === '2', 60_000, 100);
    // steps (a) and (c) done by a worker that then died (no (d), the job not completed)
    const redis = createRedis(s.ctx.config, 'worker', 'test-merge');
    try {
      const store = new ProfileStore(redis, redisKeys(s.ctx.config.redisPrefix));
      expect(await store.claimAlias(k.projectId, 'anon-3', 'dave')).toEqual({ owner: 'dave', pending: true });
      expect(await store.mergeProfile(k.projectId, 'anon-3', 'dave')).toBe(true);
    } finally {
      redis.disconnect();
    }
    // the retried job (here: the next event carrying both ids) finishes the merge without re-applying it
    await ok('LogEvents', k.logEvents, { userId: 'dave', events: [purchase('f1', now - 10, { preLoginTempUserId: 'anon-3' })] });
    await waitUntil(async () => (await profile('dave')).dataFields[purchases] === '3', 60_000, 100);
    await waitUntil(async () => (await s.ctx.ingestion.ingest.eventsQueue.getJobCounts('waiting', 'active', 'delayed')).active === 0, 30_000, 100);
    expect((await profile('dave')).dataFields[purchases]).toBe('3');
    expect((await profile('dave')).mergedFrom).toEqual(['anon-3']);
    // the copied rows count once in a recompute
    expect((await s.admin('RunAggregations', { projectId: k.projectId })).status).toBe(200);
    expect((await profile('dave')).dataFields[purchases]).toBe('3');
  }, 120_000);

  it('a pre-login id already merged is not merged into another user (first merge wins)', async () => {
    const now = Date.now();
    await ok('LogEvents', k.logEvents, { userId: 'anon-2', events: [purchase('c1', now - 1000), purchase('c2', now - 999)] });
    await ok('LogEvents', k.logEvents, {
      userId: 'bob',
      events: [{ eventName: 'login', clientEventTimestamp: new Date(now - 500).toISOString(), insertId: 'bl', preLoginTempUserId: 'anon-2' }],
    });
    await waitUntil(async () => (await profile('bob')).dataFields[purchases] === '2', 60_000, 100);
    await ok('LogEvents', k.logEvents, { userId: 'carol', events: [purchase('d1', now - 100, { preLoginTempUserId: 'anon-2' })] });
    await waitUntil(async () => (await profile('carol')).dataFields[purchases] === '1', 60_000, 100);
    await waitUntil(async () => (await s.ctx.ingestion.ingest.eventsQueue.getJobCounts('waiting', 'active', 'delayed')).active === 0, 30_000, 100);
    const carol = await profile('carol');
    expect(carol.mergedFrom).toBeUndefined();
    expect(carol.dataFields[purchases]).toBe('1');
    const bob = await profile('bob');
    expect(bob.mergedFrom).toEqual(['anon-2']);
    expect(bob.dataFields[purchases]).toBe('2');
    expect((await profile('anon-2')).mergedInto).toBe('bob');
  }, 120_000);
});
