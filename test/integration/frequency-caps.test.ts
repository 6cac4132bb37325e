import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capCounterField } from '../../shared/profiles/profile-layout.js';
import type { InteractionJob } from '../../shared/ingestion/jobs.js';
import { CapCache, viewCapInteractionOps } from '../../workers/delivery/cap-counters.js';
import { pruneCapCounters } from '../../workers/delivery/cap-prune.js';
import { admin, call, createProjectWithKeys, createTestApp, waitUntil, type ProjectKeys, type TestApp } from '../helpers/context.js';

/**
 * Frequency caps with a test clock: the VIEWED counters are written as the interactions worker writes them
 * (its op provider, applied by the profile script), RETURNED ones as the decision-log worker does.
 */
const DAY = 86_400_000;
const START = Date.parse('2026-03-10T10:00:00Z');
const iso = (ms: number): string => new Date(ms).toISOString();

let t: TestApp;
let p: ProjectKeys;
let viewCaps: CapCache;
let seq = 0;

async function ok(operation: string, key: string, body: Record<string, unknown>): Promise<any> {
  const res = await call(t, operation, key, { projectId: p.projectId, ...body });
  if (res.status !== 200) throw new Error(`${operation} failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

beforeAll(async () => {
  t = await createTestApp({}, { fixedNow: START });
  p = await createProjectWithKeys(t);
  await ok('InsertSurface', p.management, { name: 'home' });
  await ok('InsertTreatmentType', p.management, {
    treatmentTypeName: 'card',
    lastModifiedBy: 'setup',
    surfaces: [{ surfaceName: 'home' }],
    contentFieldTypes: [{ fieldName: 'title', maximumLengthAllowed: 100 }],
  });
  viewCaps = new CapCache('VIEWED', (projectId) => t.ctx.treatments.treatments.list(projectId), t.ctx.bus);
});
afterAll(async () => {
  viewCaps?.close();
  await t?.close();
});

function body(overrides: Record<string, unknown> = {}) {
  return {
    name: `capped ${++seq}`,
    description: 'd',
    treatmentTypeName: 'card',
    lastModifiedBy: 'alice',
    startTimestamp: iso(START - DAY),
    shouldPublish: true,
    content: { languageAgnosticContentFields: [{ fieldName: 'title', stringValue: 'hi' }] },
    ...overrides,
  };
}

async function returned(userId: string): Promise<string[]> {
  const r = await call(t, 'GetTreatments', p.delivery, { projectId: p.projectId, userId, surfaces: [{ surface: 'home', maximumTreatmentCount: 10 }] });
  expect(r.status).toBe(200);
  return (r.body.userTreatments ?? []).map((u: any) => u.treatmentId);
}

/** What the interactions worker does with a VIEWED: its ops, applied once by the profile script. */
async function view(userId: string, treatmentId: string): Promise<void> {
  const job: InteractionJob = {
    kind: 'interaction',
    projectId: p.projectId,
    userId,
    treatmentId,
    treatmentTrackingId: `${treatmentId}_r${++seq}`,
    surface: 'home',
    interactionType: 'VIEWED',
    interactionTimeMicros: String(t.clock.now * 1000),
    receivedAt: t.clock.now,
  };
  const ops = await viewCapInteractionOps(viewCaps)(job);
  await t.ctx.profiles.profiles.applyEvents(p.projectId, userId, `job-${seq}`, [{ ts: t.clock.now, ops }]);
}

describe('frequency caps', () => {
  it('rejects bad caps with 400 naming the field', async () => {
    const cases: [unknown, string][] = [
      [{ maxCount: 0, windowName: 'LAST_7D', countOf: 'VIEWED' }, 'maxCount'],
      [{ maxCount: 1001, windowName: 'LAST_7D', countOf: 'VIEWED' }, 'maxCount'],
      [{ maxCount: 5, windowName: 'LAST_0D', countOf: 'VIEWED' }, 'frequencyCap.windowName'],
      [{ maxCount: 5, windowName: 'LAST_366D', countOf: 'VIEWED' }, 'frequencyCap.windowName'],
      [{ maxCount: 5, windowName: 'weekly', countOf: 'VIEWED' }, 'frequencyCap.windowName'],
      [{ maxCount: 5, windowName: 'LAST_7D', countOf: 'CLICKED' }, 'countOf'],
      [{ maxCount: 5, windowName: 'LAST_7D' }, 'countOf'],
    ];
    for (const [frequencyCap, field] of cases) {
      const r = await call(t, 'InsertTreatment', p.management, { projectId: p.projectId, ...body({ frequencyCap }) });
      expect(r.status, JSON.stringify(frequencyCap)).toBe(400);
      expect(JSON.stringify(r.body.error.details)).toContain(field);
    }
  });

  it('a VIEWED cap stops delivery as soon as the capping view is applied, and resumes when the window passes', async () => {
    const id = (await ok('InsertTreatment', p.management, body({ frequencyCap: { maxCount: 2, windowName: 'LAST_3D', countOf: 'VIEWED' } }))).treatment
      .treatmentId;
    const got = (await ok('GetTreatment', p.management, { treatmentId: id })).treatment;
    expect(got.frequencyCap).toEqual({ maxCount: 2, windowName: 'LAST_3D', countOf: 'VIEWED' });
    await waitUntil(async () => (await returned('ann')).includes(id), 5000, 25);
    await view('ann', id);
    expect(await returned('ann')).toEqual([id]);
    await view('ann', id);
    // no wait: delivery reads the counter from the profile it loads anyway
    expect(await returned('ann')).toEqual([]);
    expect(await returned('bob')).toEqual([id]);
    const explained = await admin(t, 'ExplainTreatments', { projectId: p.projectId, userId: 'ann', surfaces: [{ surface: 'home' }] });
    expect(explained.body.explanation.surfaces[0].treatments.find((x: any) => x.treatmentId === id)).toMatchObject({
      returned: false,
      reasons: ['FREQUENCY_CAPPED'],
      outcome: 'capped: 2 of 2 VIEWED in LAST_3D',
    });
    // day 2 and 3: the views of day 1 are still in the window
    t.clock.set(START + 2 * DAY);
    expect(await returned('ann')).toEqual([]);
    // day 4: they are not
    t.clock.set(START + 3 * DAY);
    expect(await returned('ann')).toEqual([id]);
    t.clock.set(START);
  });

  it('a RETURNED cap counts the decision log’s counters; the cap is treatment-level and can be removed', async () => {
    const id = (await ok('InsertTreatment', p.management, body({ frequencyCap: { maxCount: 1, windowName: 'LAST_1D', countOf: 'RETURNED' } }))).treatment
      .treatmentId;
    await waitUntil(async () => (await returned('cat')).includes(id), 5000, 25);
    const counter = capCounterField('RETURNED', id, Math.floor(t.clock.now / DAY));
    await t.ctx.profiles.profiles.applyEvents(p.projectId, 'cat', `dec-${++seq}`, [{ ts: t.clock.now, ops: [['inc', counter, 1]] }]);
    expect(await returned('cat')).not.toContain(id);
    const cleared = (await ok('UpdateTreatment', p.management, { treatmentId: id, lastModifiedBy: 'bob', clearFrequencyCap: true })).treatment;
    expect(cleared.frequencyCap).toBeUndefined();
    expect(cleared.versions).toHaveLength(1);
    const changes = (await admin(t, 'ListChanges', { projectId: p.projectId, pageSize: 1 })).body.changes;
    expect(changes[0].before.frequencyCap).toEqual({ maxCount: 1, windowName: 'LAST_1D', countOf: 'RETURNED' });
    await waitUntil(async () => (await returned('cat')).includes(id), 5000, 25);
    const both = await call(t, 'UpdateTreatment', p.management, {
      projectId: p.projectId,
      treatmentId: id,
      lastModifiedBy: 'bob',
      clearFrequencyCap: true,
      frequencyCap: { maxCount: 1, windowName: 'LAST_1D', countOf: 'VIEWED' },
    });
    expect(both.status).toBe(400);
    expect(both.body.error.details[0].field).toBe('clearFrequencyCap');
  });

  it('counts no views of treatments without a VIEWED cap (profiles do not grow for nothing)', async () => {
    const id = (await ok('InsertTreatment', p.management, body())).treatment.treatmentId;
    await view('dan', id);
    const profile = await t.ctx.profiles.profiles.get(p.projectId, 'dan');
    expect(Object.keys(profile.fields).filter((f) => f.startsWith('cap:'))).toEqual([]);
  });
});

describe('cap counter pruning', () => {
  it('drops the days no window can read (older than 365 days) and nothing else', async () => {
    const today = Math.floor(START / DAY);
    const ops: ['inc', string, number][] = [today, today - 364, today - 365, today - 900].map((d) => ['inc', capCounterField('VIEWED', '42', d), 1]);
    ops.push(['inc', capCounterField('RETURNED', '42', today - 400), 1], ['inc', 'dc:7:20260310', 3]);
    await t.ctx.profiles.profiles.applyEvents(p.projectId, 'erin', `prune-${++seq}`, [{ ts: START, ops }]);
    const removed = await pruneCapCounters(t.ctx.redis, t.ctx.keys.profile('*', '*'), START);
    expect(removed).toBe(3);
    const fields = Object.keys((await t.ctx.profiles.profiles.get(p.projectId, 'erin')).fields).sort();
    expect(fields).toEqual([capCounterField('VIEWED', '42', today), capCounterField('VIEWED', '42', today - 364), 'dc:7:20260310'].sort());
  });
});
