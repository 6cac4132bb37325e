import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, projectWithKeys, type TestService, v1Calls } from '../helpers/service.js';
import { waitUntil } from '../helpers/context.js';

/**
 * Interactions sent without userId or surface, against the whole service (workers thread, embedded ClickHouse): LogTreatmentInteraction
 * with only `treatmentTrackingId` (plus type and time) is stored with the user and surface of its
 * decision (decision log), counts in that user's profile, and survives a recompute from
 * ClickHouse (so the stored row has them too). One whose decision never appears is a dead letter
 * once the (here shortened) wait is over; a userId that disagrees with the decision is one too.
 */
let s: TestService;
let k: Awaited<ReturnType<typeof projectWithKeys>>;
let treatmentId: string;
let clicksOnHome: string;
const DAY = 86_400_000;
const WAIT_SECONDS = 3;

const { v1, ok } = v1Calls(
  () => s,
  () => k.projectId,
);
async function dataFields(userId: string): Promise<Record<string, unknown>> {
  const r = await s.admin('GetUserProfile', { projectId: k.projectId, userId });
  return r.body.profile.dataFields;
}
async function deadLetters(): Promise<{ reason: string; payloadBase64: string }[]> {
  const r = await s.admin('ListDeadLetters', { projectId: k.projectId });
  return r.status === 200 ? r.body.deadLetters : [];
}

beforeAll(async () => {
  s = await startTestService({ INTERACTION_DECISION_WAIT_SECONDS: String(WAIT_SECONDS) });
  k = await projectWithKeys(s, `irs${Date.now().toString(36)}`);
  for (const name of ['home', 'feed']) await ok('InsertSurface', k.management, { name });
  await ok('InsertTreatmentType', k.management, {
    treatmentTypeName: 'card',
    lastModifiedBy: 't',
    surfaces: [{ surfaceName: 'home' }, { surfaceName: 'feed' }],
    contentFieldTypes: [{ fieldName: 'title', maximumLengthAllowed: 100 }],
  });
  const r = await ok('InsertTreatment', k.management, {
    name: 'a',
    description: 'a',
    treatmentTypeName: 'card',
    lastModifiedBy: 't',
    startTimestamp: new Date(Date.now() - 3 * DAY).toISOString(),
    shouldPublish: true,
    content: { languageAgnosticContentFields: [{ fieldName: 'title', stringValue: 'A' }] },
  });
  treatmentId = r.treatment.treatmentId;
  const f = await ok('GetDataFields', k.management, {
    dataFieldParams: [
      { treatmentDataFieldParams: { surfaceName: 'home', treatmentInteractionType: 'CLICKED', dailyCountAggregation: { windowName: 'LAST_7D' } } },
    ],
  });
  clicksOnHome = f.dataFields[0].dataFieldId;
}, 120_000);

afterAll(async () => {
  await s?.stop();
});

describe('interactions by tracking id', () => {
  it('resolves userId and surface from the decision log, counts in that user’s profile and in ClickHouse', async () => {
    const res = await ok('GetTreatments', k.delivery, { userId: 'alice', surfaces: [{ surface: 'home' }] });
    const served = res.userTreatments.find((u: any) => u.treatmentId === treatmentId);
    expect(served?.surface).toBe('home');
    const trackingId: string = served.treatmentTrackingId;
    // the decision is in the log (the worker would also wait for it, retrying)
    await waitUntil(async () => (await ok('ListDecisions', k.management, { userId: 'alice' })).decisions.length > 0, 60_000, 100);
    // yesterday: a recompute replaces past days with what ClickHouse holds for the user
    const at = Date.now() - DAY;
    expect(
      await v1('LogTreatmentInteraction', k.delivery, {
        treatmentTrackingId: trackingId,
        interactionType: 'CLICKED',
        interactionTimeMicros: String(at * 1000),
      }),
    ).toEqual({ status: 200, body: {} });
    await waitUntil(async () => (await dataFields('alice'))[clicksOnHome] === '1', 60_000, 100);
    expect((await s.admin('RunAggregations', { projectId: k.projectId })).status).toBe(200);
    expect((await dataFields('alice'))[clicksOnHome]).toBe('1');
    // a given treatmentId and surface that agree with the decision are fine too
    expect(
      (
        await v1('LogTreatmentInteraction', k.delivery, {
          treatmentTrackingId: trackingId,
          treatmentId,
          surface: 'home',
          interactionType: 'CLICKED',
          interactionTimeMicros: String(at * 1000 + 1),
        })
      ).status,
    ).toBe(200);
    await waitUntil(async () => (await dataFields('alice'))[clicksOnHome] === '2', 60_000, 100);
    // a field created now is backfilled from ClickHouse alone: the rows carry alice and home
    const f = await ok('GetDataFields', k.management, {
      dataFieldParams: [
        { treatmentDataFieldParams: { surfaceName: 'home', treatmentInteractionType: 'CLICKED', dailyCountAggregation: { windowName: 'LAST_30D' } } },
      ],
    });
    const backfilled = f.dataFields[0].dataFieldId;
    await waitUntil(async () => (await dataFields('alice'))[backfilled] === '2', 60_000, 100);
  }, 180_000);

  it('400 when the given treatmentId is not the tracking id’s, or the tracking id names no treatment', async () => {
    const bad = await v1('LogTreatmentInteraction', k.delivery, {
      treatmentTrackingId: `${treatmentId}_r1`,
      treatmentId: String(Number(treatmentId) + 100),
      interactionType: 'CLICKED',
      interactionTimeMicros: String(Date.now() * 1000),
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details[0].field).toBe('treatmentTrackingId');
    const none = await v1('LogTreatmentInteraction', k.delivery, {
      treatmentTrackingId: '999999_r1',
      interactionType: 'CLICKED',
      interactionTimeMicros: String(Date.now() * 1000),
    });
    expect(none.status).toBe(400);
    expect(none.body.error.details[0].field).toBe('treatmentTrackingId');
  });

  it('an interaction whose decision never appears, or that disagrees with it, ends in the dead letters with the reason', async () => {
    const res = await ok('GetTreatments', k.delivery, { userId: 'bob', surfaces: [{ surface: 'home' }] });
    const trackingId: string = res.userTreatments.find((u: any) => u.treatmentId === treatmentId).treatmentTrackingId;
    await waitUntil(async () => (await ok('ListDecisions', k.management, { userId: 'bob' })).decisions.length > 0, 60_000, 100);
    const micros = String(Date.now() * 1000);
    expect(
      (
        await v1('LogTreatmentInteraction', k.delivery, {
          treatmentTrackingId: `${treatmentId}_never-decided`,
          interactionType: 'VIEWED',
          interactionTimeMicros: micros,
        })
      ).status,
    ).toBe(200);
    expect(
      (
        await v1('LogTreatmentInteraction', k.delivery, {
          treatmentTrackingId: trackingId,
          userId: 'mallory',
          interactionType: 'CLICKED',
          interactionTimeMicros: micros,
        })
      ).status,
    ).toBe(200);
    expect(
      (
        await v1('LogTreatmentInteraction', k.delivery, {
          treatmentTrackingId: trackingId,
          surface: 'feed',
          interactionType: 'CLICKED',
          interactionTimeMicros: micros,
        })
      ).status,
    ).toBe(200);
    let letters: { reason: string }[] = [];
    await waitUntil(async () => (letters = await deadLetters()).length >= 3, 120_000, 250);
    const reasons = letters.map((l) => l.reason).join('\n');
    expect(reasons).toContain(`no decision for treatmentTrackingId "${treatmentId}_never-decided"`);
    expect(reasons).toContain(`within ${WAIT_SECONDS} s`);
    expect(reasons).toContain('userId "mallory" disagrees with the decision');
    expect(reasons).toContain('surface "feed" disagrees with the decision');
    // nothing of it reached bob's or mallory's profile
    expect((await dataFields('bob'))[clicksOnHome]).toBe('0');
    expect((await dataFields('mallory'))[clicksOnHome]).toBe('0');
  }, 180_000);
});
