import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, call, callOk, createProjectWithKeys, createTestApp, waitUntil, type ProjectKeys, type TestApp } from '../helpers/context.js';

const MINUTE = 60_000;
const iso = (ms: number): string => new Date(ms).toISOString();
const bucketOf = (key: string) => createHash('sha256').update(key, 'utf8').digest().readUInt32BE(0) % 10_000;

let t: TestApp;
let seq = 0;

beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t?.close();
});

const ok = (operation: string, key: string, body: unknown) => callOk(t, operation, key, body);

/** Surfaces home/inbox, a `card` type on both. */
async function setupCatalog(): Promise<ProjectKeys> {
  const p = await createProjectWithKeys(t);
  for (const name of ['home', 'inbox']) await ok('InsertSurface', p.management, { projectId: p.projectId, name });
  await ok('InsertTreatmentType', p.management, {
    projectId: p.projectId,
    treatmentTypeName: 'card',
    lastModifiedBy: 'setup',
    surfaces: [{ surfaceName: 'home' }, { surfaceName: 'inbox' }],
    contentFieldTypes: [{ fieldName: 'title', maximumLengthAllowed: 100 }],
  });
  return p;
}

function treatmentBody(p: ProjectKeys, overrides: Record<string, unknown> = {}) {
  return {
    projectId: p.projectId,
    name: `treatment ${++seq}`,
    description: 'd',
    treatmentTypeName: 'card',
    lastModifiedBy: 'alice',
    startTimestamp: iso(t.ctx.now() - MINUTE),
    shouldPublish: true,
    content: { languageAgnosticContentFields: [{ fieldName: 'title', stringValue: `hello {{first_name|there}}` }] },
    ...overrides,
  };
}

async function insertTreatment(p: ProjectKeys, overrides: Record<string, unknown> = {}): Promise<string> {
  return (await ok('InsertTreatment', p.management, treatmentBody(p, overrides))).treatment.treatmentId;
}

async function update(p: ProjectKeys, treatmentId: string, fields: Record<string, unknown>): Promise<any> {
  return (await ok('UpdateTreatment', p.management, { projectId: p.projectId, treatmentId, lastModifiedBy: 'bob', ...fields })).treatment;
}

function getTreatments(p: ProjectKeys, body: Record<string, unknown> = {}) {
  return call(t, 'GetTreatments', p.delivery, { projectId: p.projectId, userId: 'u1', surfaces: [{ surface: 'home' }], ...body });
}

async function returnedIds(p: ProjectKeys, body: Record<string, unknown> = {}): Promise<string[]> {
  const r = await getTreatments(p, body);
  expect(r.status).toBe(200);
  return (r.body.userTreatments ?? []).map((u: any) => u.treatmentId);
}

/** Management changes reach the plan within a second (cross-process propagation is tested elsewhere): wait for it. */
async function until(p: ProjectKeys, body: Record<string, unknown>, expected: string[]): Promise<void> {
  await waitUntil(async () => JSON.stringify(await returnedIds(p, body)) === JSON.stringify(expected), 5000, 25);
}

async function lastChange(p: ProjectKeys): Promise<any> {
  return (await admin(t, 'ListChanges', { projectId: p.projectId, pageSize: 1 })).body.changes[0];
}

// ------------------------------------------------------------------------------------------------

describe('holdouts', () => {
  it('stores, returns and logs holdoutPercentage without creating a version; bad values are 400 naming the field', async () => {
    const p = await setupCatalog();
    const id = await insertTreatment(p, { holdoutPercentage: 12.5 });
    const got = (await ok('GetTreatment', p.management, { projectId: p.projectId, treatmentId: id })).treatment;
    expect(got).toMatchObject({ holdoutPercentage: 12.5, qaUserIds: [], isFallback: false });
    expect(got.versions).toHaveLength(1);
    const updated = await update(p, id, { holdoutPercentage: 20 });
    expect(updated.holdoutPercentage).toBe(20);
    expect(updated.versions).toHaveLength(1);
    const change = await lastChange(p);
    expect(change.operation).toBe('UpdateTreatment');
    expect(change.before.holdoutPercentage).toBe(12.5);
    expect(change.after.holdoutPercentage).toBe(20);
    for (const bad of [100.5, -1, 12.345, 'ten']) {
      const r = await call(t, 'UpdateTreatment', p.management, { projectId: p.projectId, treatmentId: id, lastModifiedBy: 'bob', holdoutPercentage: bad });
      expect(r.status).toBe(400);
      expect(r.body.error.details.map((d: any) => d.field)).toContain('holdoutPercentage');
    }
    // snake_case input names are accepted for the new fields too
    const snake = await call(
      t,
      'InsertTreatment',
      p.management,
      treatmentBody(p, {
        holdout_percentage: 5,
        qa_user_ids: ['q'],
        is_fallback: true,
        frequency_cap: { max_count: 2, window_name: 'LAST_7D', count_of: 'VIEWED' },
      }),
    );
    expect(snake.status).toBe(200);
    expect(snake.body.treatment).toMatchObject({
      holdoutPercentage: 5,
      qaUserIds: ['q'],
      isFallback: true,
      frequencyCap: { maxCount: 2, windowName: 'LAST_7D', countOf: 'VIEWED' },
    });
    const r = await call(t, 'InsertTreatment', p.management, treatmentBody(p, { holdoutPercentage: 0.001 }));
    expect(r.status).toBe(400);
    expect(r.body.error.details[0].field).toBe('holdoutPercentage');
  });

  it('withholds the treatment from exactly the users the holdout hash buckets, and the next one takes the place', async () => {
    const p = await setupCatalog();
    const held = await insertTreatment(p, { holdoutPercentage: 50 });
    // pick users on both sides of the bucket line, computed independently
    const users = Array.from({ length: 40 }, (_, i) => `user-${i}`);
    const expectHeld = (u: string) => bucketOf(`${p.projectId}:${held}:${u}`) < 5000;
    expect(users.some(expectHeld) && !users.every(expectHeld)).toBe(true);
    await until(p, { userId: users.find((u) => !expectHeld(u)) }, [held]);
    const other = await insertTreatment(p);
    await waitUntil(async () => (await returnedIds(p, { userId: users.find(expectHeld) })).length === 1, 5000, 25);
    for (const u of users) {
      const ids = await returnedIds(p, { userId: u, surfaces: [{ surface: 'home', maximumTreatmentCount: 2 }] });
      expect(ids.includes(held)).toBe(!expectHeld(u));
      expect(ids).toContain(other);
    }
  });

  it('globalHoldoutPercentage on the project: held-out users get no userTreatments', async () => {
    const p = await setupCatalog();
    await insertTreatment(p);
    expect((await admin(t, 'GetProject', { projectId: p.projectId })).body.project.globalHoldoutPercentage).toBe(0);
    const bad = await admin(t, 'UpdateProject', { projectId: p.projectId, globalHoldoutPercentage: 3.141 });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details[0].field).toBe('globalHoldoutPercentage');
    const up = await admin(t, 'UpdateProject', { projectId: p.projectId, globalHoldoutPercentage: 30 });
    expect(up.status).toBe(200);
    expect(up.body.project.globalHoldoutPercentage).toBe(30);
    expect((await admin(t, 'GetProject', { projectId: p.projectId })).body.project.globalHoldoutPercentage).toBe(30);
    expect((await lastChange(p)).after.globalHoldoutPercentage).toBe(30);
    const users = Array.from({ length: 40 }, (_, i) => `g-${i}`);
    const expectHeld = (u: string) => bucketOf(`${p.projectId}:global:${u}`) < 3000;
    await waitUntil(async () => (await getTreatments(p, { userId: users.find(expectHeld) })).body.userTreatments === undefined, 5000, 25);
    for (const u of users) {
      const r = await getTreatments(p, { userId: u });
      expect('userTreatments' in r.body).toBe(!expectHeld(u));
    }
    const created = await admin(t, 'CreateProject', { projectId: `${p.projectId}x`, globalHoldoutPercentage: 5.5 });
    expect(created.body.project.globalHoldoutPercentage).toBe(5.5);
  });
});

describe('QA users', () => {
  it('a QA user sees a DRAFT while a normal user does not; qaUserIds is treatment-level and validated', async () => {
    const p = await setupCatalog();
    const id = await insertTreatment(p, { shouldPublish: false, qaUserIds: ['qa-ann'] });
    const got = (await ok('GetTreatment', p.management, { projectId: p.projectId, treatmentId: id })).treatment;
    expect(got.qaUserIds).toEqual(['qa-ann']);
    expect(got.versions[0].status).toBe('DRAFT');
    await until(p, { userId: 'qa-ann' }, [id]);
    const r = await getTreatments(p, { userId: 'qa-ann' });
    expect(r.body.userTreatments[0]).toMatchObject({ treatmentId: id, rank: '1', treatmentContent: JSON.stringify({ title: 'hello there' }) });
    expect(await returnedIds(p, { userId: 'someone-else' })).toEqual([]);
    // adding a QA user does not create a version; an edited draft is what the QA user sees next
    const withBob = await update(p, id, { qaUserIds: ['qa-ann', 'qa-bob'] });
    expect(withBob.versions).toHaveLength(1);
    expect((await lastChange(p)).after.qaUserIds).toEqual(['qa-ann', 'qa-bob']);
    await update(p, id, { content: { languageAgnosticContentFields: [{ fieldName: 'title', stringValue: 'v2' }] } });
    await waitUntil(
      async () => (await getTreatments(p, { userId: 'qa-bob' })).body.userTreatments?.[0]?.treatmentContent === JSON.stringify({ title: 'v2' }),
      5000,
      25,
    );
    // deleting it ends QA delivery too, and an edit after the deletion (a new draft) does not bring it back
    await ok('UpdateTreatment', p.management, { projectId: p.projectId, treatmentId: id, lastModifiedBy: 'bob', shouldDelete: true });
    await until(p, { userId: 'qa-ann' }, []);
    const edited = await update(p, id, {
      name: 'edited after delete',
      content: { languageAgnosticContentFields: [{ fieldName: 'title', stringValue: 'after delete' }] },
    });
    expect(edited.status).toBe('ARCHIVED');
    expect(edited.versions[0].status).toBe('DRAFT');
    const explained = async () =>
      (await ok('ExplainTreatments', p.management, { projectId: p.projectId, userId: 'qa-ann', surfaces: [{ surface: 'home' }] })).explanation.surfaces[0]
        .treatments[0];
    // the plan has the edit (its new name) before the QA user is asked
    await waitUntil(async () => (await explained()).name === 'edited after delete', 5000, 25);
    expect((await explained()).returned).toBe(false);
    expect(await returnedIds(p, { userId: 'qa-ann' })).toEqual([]);
    for (const qaUserIds of [Array.from({ length: 101 }, (_, i) => `u${i}`), [''], ['x'.repeat(257)], 'qa-ann']) {
      const bad = await call(t, 'InsertTreatment', p.management, treatmentBody(p, { qaUserIds }));
      expect(bad.status).toBe(400);
      expect(JSON.stringify(bad.body.error.details)).toContain('qaUserIds');
    }
  });
});

describe('fallback', () => {
  it('appears exactly when nothing else qualifies; isFallback is treatment-level and validated', async () => {
    const p = await setupCatalog();
    const age = (await ok('InsertDataField', p.management, { projectId: p.projectId, name: 'age', userProperty: { dataType: 'INTEGER' } })).dataField
      .dataFieldId;
    const fallback = await insertTreatment(p, { isFallback: true });
    expect((await ok('GetTreatment', p.management, { projectId: p.projectId, treatmentId: fallback })).treatment.isFallback).toBe(true);
    const adults = await insertTreatment(p, { eligibilityRules: { rules: [{ dataFieldId: age, condition: 'GREATER_THAN_OR_EQUALS', rhsValue: '18' }] } });
    const ctxAge = (n: number) => ({ contextualAttributes: [{ key: 'age', integerValue: n }] });
    await until(p, ctxAge(30), [adults]);
    expect(await returnedIds(p, ctxAge(12))).toEqual([fallback]);
    expect(await returnedIds(p, { ...ctxAge(30), surfaces: [{ surface: 'home', maximumTreatmentCount: 5 }] })).toEqual([adults]);
    // no longer a fallback: an ordinary treatment, returned beside the other
    const plain = await update(p, fallback, { isFallback: false });
    expect(plain.isFallback).toBe(false);
    expect(plain.versions).toHaveLength(1);
    expect((await lastChange(p)).before.isFallback).toBe(true);
    await waitUntil(async () => (await returnedIds(p, { ...ctxAge(30), surfaces: [{ surface: 'home', maximumTreatmentCount: 5 }] })).length === 2, 5000, 25);
    const bad = await call(t, 'UpdateTreatment', p.management, { projectId: p.projectId, treatmentId: fallback, lastModifiedBy: 'bob', isFallback: 'yes' });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body.error.details)).toContain('isFallback');
  });
});

describe('PreviewTreatment and /v1/ExplainTreatments', () => {
  it('renders any version for any user as GetTreatments would, with the rule evaluation; nothing is counted', async () => {
    const p = await setupCatalog();
    const age = (await ok('InsertDataField', p.management, { projectId: p.projectId, name: 'age', userProperty: { dataType: 'INTEGER' } })).dataField
      .dataFieldId;
    await ok('InsertDataField', p.management, { projectId: p.projectId, name: 'first_name', userProperty: { dataType: 'STRING' } });
    const userProperties = { first_name: { stringValue: 'Ann' } } as never;
    await t.ctx.profiles.profiles.applyEvents(p.projectId, 'ann', `seed-${++seq}`, [{ ts: Date.now(), userProperties }]);
    const id = await insertTreatment(p, { eligibilityRules: { rules: [{ dataFieldId: age, condition: 'GREATER_THAN_OR_EQUALS', rhsValue: '18' }] } });
    // version 2: an unpublished draft, previewed at once (no wait for the delivery cache)
    await update(p, id, {
      shouldPublish: false,
      content: { languageAgnosticContentFields: [{ fieldName: 'title', stringValue: 'draft for {{first_name|you}}' }] },
    });
    const draft = await call(t, 'PreviewTreatment', p.management, {
      projectId: p.projectId,
      treatmentId: id,
      userId: 'ann',
      contextualAttributes: [{ key: 'age', integerValue: 30 }],
    });
    expect(draft.status).toBe(200);
    expect(draft.body.userTreatment).toEqual({
      treatmentId: id,
      treatmentTrackingId: 'preview',
      surface: 'home',
      rank: '1',
      treatmentType: 'card',
      treatmentContent: JSON.stringify({ title: 'draft for Ann' }),
      contentLanguageCode: 'en',
    });
    expect(draft.body.eligibility).toMatchObject({ eligible: true, versionNumber: 2, versionStatus: 'DRAFT', heldOut: false, globallyHeldOut: false });
    expect(draft.body.eligibility.rules[0]).toMatchObject({ dataFieldName: 'age', value: '30', source: 'contextualAttribute', outcome: { result: true } });
    const v1 = await call(t, 'PreviewTreatment', p.management, { projectId: p.projectId, treatmentId: id, versionNumber: 1 });
    expect(v1.body.userTreatment.treatmentContent).toBe(JSON.stringify({ title: 'hello there' }));
    expect(v1.body.eligibility).toMatchObject({ eligible: false, versionNumber: 1, versionStatus: 'LIVE' });
    expect(v1.body.eligibility.rules[0]).toMatchObject({ source: 'missing', outcome: { result: false } });
    // errors: unknown treatment or version 404, delivery keys 403, bad fields 400
    expect((await call(t, 'PreviewTreatment', p.management, { projectId: p.projectId, treatmentId: '999999' })).status).toBe(404);
    expect((await call(t, 'PreviewTreatment', p.management, { projectId: p.projectId, treatmentId: id, versionNumber: 9 })).status).toBe(404);
    expect((await call(t, 'PreviewTreatment', p.delivery, { projectId: p.projectId, treatmentId: id })).status).toBe(403);
    const badLang = await call(t, 'PreviewTreatment', p.management, { projectId: p.projectId, treatmentId: id, languageCode: '12 not a tag' });
    expect(badLang.status).toBe(400);
    expect(badLang.body.error.details[0].field).toBe('languageCode');
    const badVersion = await call(t, 'PreviewTreatment', p.management, { projectId: p.projectId, treatmentId: id, versionNumber: 0 });
    expect(badVersion.status).toBe(400);
    expect(JSON.stringify(badVersion.body.error.details)).toContain('versionNumber');
    // the same for operators, on the admin API (and the CLI's preview-treatment)
    const adm = await admin(t, 'PreviewTreatment', {
      projectId: p.projectId,
      treatmentId: id,
      userId: 'ann',
      versionNumber: 1,
      contextualAttributes: [{ key: 'age', integerValue: 30 }],
    });
    expect(adm.status).toBe(200);
    expect(adm.body.eligibility).toMatchObject({ eligible: true, versionNumber: 1 });
    // nothing was logged or counted for ann
    const profile = await t.ctx.profiles.profiles.get(p.projectId, 'ann');
    expect(Object.keys(profile.fields).filter((f) => f.startsWith('cap:'))).toEqual([]);
  });

  it('ExplainTreatments answers on /v1 for management keys, with the controls in words', async () => {
    const p = await setupCatalog();
    const id = await insertTreatment(p, { holdoutPercentage: 100 });
    const fb = await insertTreatment(p, { isFallback: true });
    await until(p, {}, [fb]);
    const r = await call(t, 'ExplainTreatments', p.management, { projectId: p.projectId, userId: 'u1', surfaces: [{ surface: 'home' }] });
    expect(r.status).toBe(200);
    const byId = new Map(r.body.explanation.surfaces[0].treatments.map((x: any) => [x.treatmentId, x]));
    expect(byId.get(id)).toMatchObject({ returned: false, outcome: 'held out', reasons: ['HELD_OUT'] });
    expect(byId.get(fb)).toMatchObject({ returned: true, outcome: 'fallback' });
    expect(r.body.response.userTreatments.map((u: any) => u.treatmentId)).toEqual([fb]);
    expect((await call(t, 'ExplainTreatments', p.delivery, { projectId: p.projectId, userId: 'u1', surfaces: [{ surface: 'home' }] })).status).toBe(403);
  });
});

describe('OpenAPI', () => {
  it('documents every new field and operation', async () => {
    const doc = JSON.stringify((await t.app.inject({ method: 'GET', url: '/openapi.json' })).json());
    for (const name of [
      'holdoutPercentage',
      'globalHoldoutPercentage',
      'qaUserIds',
      'isFallback',
      'frequencyCap',
      'clearFrequencyCap',
      'countOf',
      '/v1/PreviewTreatment',
      '/v1/ExplainTreatments',
      '/admin/v1/PreviewTreatment',
    ]) {
      expect(doc, name).toContain(`"${name}"`);
    }
  });
});
