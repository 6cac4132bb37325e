import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { call, createProjectWithKeys, createTestApp, waitUntil, type ProjectKeys, type TestApp } from '../helpers/context.js';
import { listChanges } from '../../shared/projects/change-log.store.js';
import type { Invalidation } from '../../shared/platform/redis/invalidation-bus.js';

const T0 = Date.parse('2026-03-01T12:00:00.000Z');
const MINUTE = 60_000;
const HOUR = 3_600_000;
const iso = (ms: number): string => new Date(ms).toISOString();

let t: TestApp;

beforeAll(async () => {
  t = await createTestApp({}, { fixedNow: T0 });
});
afterAll(async () => {
  await t?.close();
});
beforeEach(() => {
  t.clock.set(T0);
});

interface Catalog extends ProjectKeys {
  dataFields: { age: string; vip: string; country: string };
  purchaseEventId: string;
}

async function ok(operation: string, key: string, body: unknown): Promise<any> {
  const res = await call(t, operation, key, body);
  if (res.status !== 200) throw new Error(`${operation} failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** A project with surfaces home/inbox/banner, types card (home, inbox) and email (banner), three data fields. */
async function setupCatalog(deliveryEndpoint: 'BASE' | 'ALT' = 'BASE'): Promise<Catalog> {
  const p = await createProjectWithKeys(t, undefined, deliveryEndpoint);
  const m = p.management;
  for (const name of ['home', 'inbox', 'banner']) await ok('InsertSurface', m, { projectId: p.projectId, name });
  await ok('InsertTreatmentType', m, {
    projectId: p.projectId,
    treatmentTypeName: 'card',
    lastModifiedBy: 'setup',
    surfaces: [{ surfaceName: 'home' }, { surfaceName: 'inbox' }],
    contentFieldTypes: [
      { fieldName: 'title', maximumLengthAllowed: 20, isPerLanguage: true },
      { fieldName: 'body', maximumLengthAllowed: 100, isPerLanguage: true },
      { fieldName: 'link', maximumLengthAllowed: 200 },
    ],
  });
  await ok('InsertTreatmentType', m, {
    projectId: p.projectId,
    treatmentTypeName: 'email',
    lastModifiedBy: 'setup',
    deliveryType: 'EMAIL',
    surfaces: [{ surfaceName: 'banner' }],
    contentFieldTypes: [{ fieldName: 'subject', maximumLengthAllowed: 50, isPerLanguage: true }],
  });
  const field = async (name: string, dataType: string) => (await ok('InsertDataField', m, { projectId: p.projectId, name, userProperty: { dataType } })).dataField.dataFieldId as string;
  // D35: a target action names an event schema of the project
  const purchase = (await ok('InsertEventSchema', m, { projectId: p.projectId, eventName: 'purchase' })).eventSchema.eventId as string;
  return { ...p, purchaseEventId: purchase, dataFields: { age: await field('age', 'INTEGER'), vip: await field('vip', 'BOOLEAN'), country: await field('country', 'STRING') } };
}

const content = (title = 'Hi') => ({
  contentByLanguage: [{ languageCode: { languageCode: 'en' }, contentFields: [{ fieldName: 'title', stringValue: title }] }],
  languageAgnosticContentFields: [{ fieldName: 'link', stringValue: 'https://example.com' }],
});

function insertBody(p: ProjectKeys, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    projectId: p.projectId,
    name: 'Welcome',
    description: 'first screen',
    treatmentTypeName: 'card',
    lastModifiedBy: 'alice',
    startTimestamp: iso(T0 - HOUR),
    content: content(),
    ...overrides,
  };
}

async function insert(p: ProjectKeys, overrides: Record<string, unknown> = {}): Promise<any> {
  return (await ok('InsertTreatment', p.management, insertBody(p, overrides))).treatment;
}

async function update(p: ProjectKeys, body: Record<string, unknown>): Promise<any> {
  return (await ok('UpdateTreatment', p.management, { projectId: p.projectId, lastModifiedBy: 'bob', ...body })).treatment;
}

async function get(p: ProjectKeys, treatmentId: string): Promise<any> {
  return (await ok('GetTreatment', p.management, { projectId: p.projectId, treatmentId })).treatment;
}

async function getAll(p: ProjectKeys, body: Record<string, unknown> = {}): Promise<any[]> {
  return (await ok('GetAllTreatments', p.management, { projectId: p.projectId, ...body })).treatments;
}

const statuses = (tr: any) => tr.versions.map((v: any) => [v.versionNumber, v.status]);

function expectInvalid(res: { status: number; body: any }, field: string, code = 'INVALID_ARGUMENT'): void {
  expect(res.status, JSON.stringify(res.body)).toBe(400);
  expect(res.body.error.status).toBe(code);
  expect(res.body.error.details.map((d: any) => d.field)).toContain(field);
}

describe('InsertTreatment', () => {
  it('creates a DRAFT with a service-assigned decimal id, the delivery form of its type, and reads back equal', async () => {
    const p = await setupCatalog();
    const tr = await insert(p);
    expect(tr.treatmentId).toMatch(/^[1-9][0-9]*$/);
    expect(tr).toMatchObject({
      projectId: p.projectId,
      name: 'Welcome',
      description: 'first screen',
      status: 'DRAFT',
      lastModifiedBy: 'alice',
      lastModifiedTimestamp: iso(T0),
      modificationSource: 'API',
      treatmentType: {
        projectId: p.projectId,
        name: 'card',
        deliveryType: 'IN_APP',
        languageSpecificContentFieldTypes: [
          { fieldName: 'title', valueLengthLimit: 20, dataType: 'STRING' },
          { fieldName: 'body', valueLengthLimit: 100, dataType: 'STRING' },
        ],
        languageAgnosticContentFieldTypes: [{ fieldName: 'link', valueLengthLimit: 200, dataType: 'STRING' }],
        surfaces: [{ name: 'home' }, { name: 'inbox' }],
      },
    });
    expect(tr.externalTreatmentId).toBeUndefined();
    expect(tr.mutualExclusionGroup).toBeUndefined();
    expect(tr.versions).toHaveLength(1);
    expect(tr.versions[0]).toMatchObject({
      versionNumber: 1,
      status: 'DRAFT',
      tags: [],
      startTimestamp: iso(T0 - HOUR),
      content: content(),
      eligibilityRules: { rules: [] },
      removedSurfaces: { surfaces: [] },
    });
    expect(tr.versions[0].endTimestamp).toBeUndefined();
    expect(tr.versions[0].publishTime).toBeUndefined();
    expect(await get(p, tr.treatmentId)).toEqual(tr);
  });

  it('publishes: LIVE with a past start; SCHEDULED with a future start, LIVE once reached, ARCHIVED after the end', async () => {
    const p = await setupCatalog();
    const live = await insert(p, { shouldPublish: true });
    expect(live.status).toBe('LIVE');
    expect(live.versions[0]).toMatchObject({ status: 'LIVE', publishTime: iso(T0) });

    const scheduled = await insert(p, { shouldPublish: true, startTimestamp: iso(T0 + HOUR), endTimestamp: iso(T0 + 3 * HOUR) });
    expect(scheduled.status).toBe('SCHEDULED');
    expect(BigInt(scheduled.treatmentId)).toBeGreaterThan(BigInt(live.treatmentId));

    t.clock.set(T0 + 2 * HOUR);
    expect((await get(p, scheduled.treatmentId)).status).toBe('LIVE');
    t.clock.set(T0 + 3 * HOUR);
    const ended = await get(p, scheduled.treatmentId);
    expect(ended.status).toBe('ARCHIVED');
    expect(statuses(ended)).toEqual([[1, 'ARCHIVED']]);
  });

  it('stores every optional field in canonical form (UTC timestamps, canonical language tags, int64 strings, default missing-data behaviour)', async () => {
    const p = await setupCatalog();
    const tr = await insert(p, {
      startTimestamp: '2026-03-01T13:00:00+02:00',
      endTimestamp: '2026-04-01T00:00:00.5Z',
      content: {
        contentByLanguage: [
          { languageCode: { languageCode: 'en-us' }, contentFields: [{ fieldName: 'title', stringValue: 'Hi' }, { fieldName: 'body', stringValue: 'Hello there' }] },
          { languageCode: { languageCode: 'de' }, contentFields: [{ fieldName: 'title', stringValue: 'Hallo' }] },
        ],
      },
      tags: [{ name: 'promo' }, { name: 'spring' }],
      targetAction: { eventId: Number(p.purchaseEventId) },
      removedSurfaces: { surfaces: [{ name: 'inbox' }] },
      eligibilityRules: {
        rules: [
          { dataFieldId: p.dataFields.age, condition: 'GREATER_THAN_OR_EQUALS', rhsValue: '18' },
          { dataFieldId: Number(p.dataFields.vip), condition: 'EQUALS', rhsValue: 'true', dataMissingBehaviour: 'EVALUATE_TO_ELIGIBLE' },
        ],
      },
      externalTreatmentId: 'ext-1',
    });
    const v = tr.versions[0];
    expect(v.startTimestamp).toBe('2026-03-01T11:00:00.000Z');
    expect(v.endTimestamp).toBe('2026-04-01T00:00:00.500Z');
    expect(v.content.contentByLanguage.map((c: any) => c.languageCode.languageCode)).toEqual(['en-US', 'de']);
    expect(v.content.languageAgnosticContentFields).toEqual([]);
    expect(v.tags).toEqual([{ name: 'promo' }, { name: 'spring' }]);
    expect(v.targetAction).toEqual({ eventId: p.purchaseEventId });
    expect(v.removedSurfaces).toEqual({ surfaces: [{ name: 'inbox' }] });
    expect(v.eligibilityRules.rules).toEqual([
      { dataFieldId: p.dataFields.age, condition: 'GREATER_THAN_OR_EQUALS', rhsValue: '18', dataMissingBehaviour: 'EVALUATE_TO_INELIGIBLE' },
      { dataFieldId: p.dataFields.vip, condition: 'EQUALS', rhsValue: 'true', dataMissingBehaviour: 'EVALUATE_TO_ELIGIBLE' },
    ]);
    expect(tr.externalTreatmentId).toBe('ext-1');
  });

  it('accepts snake_case field names and int64 values given as strings', async () => {
    const p = await setupCatalog();
    const res = await call(t, 'InsertTreatment', p.management, {
      project_id: p.projectId,
      name: 'Snake',
      description: 'd',
      treatment_type_name: 'card',
      last_modified_by: 'alice',
      start_timestamp: iso(T0 - HOUR),
      should_publish: true,
      content: { content_by_language: [{ language_code: { language_code: 'en' }, content_fields: [{ field_name: 'title', string_value: 'Hi' }] }] },
      target_action: { event_id: p.purchaseEventId },
      eligibility_rules: { rules: [{ data_field_id: p.dataFields.country, condition: 'ANY_OF', rhs_value: '["DE","FR"]', data_missing_behaviour: 'EVALUATE_TO_ELIGIBLE' }] },
      removed_surfaces: { surfaces: [{ name: 'home' }] },
      mutual_exclusion_group: 'snakes',
      external_treatment_id: 'snake-1',
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const tr = res.body.treatment;
    expect(tr.status).toBe('LIVE');
    expect(tr.externalTreatmentId).toBe('snake-1');
    expect(tr.mutualExclusionGroup.name).toBe('snakes');
    expect(tr.versions[0].targetAction).toEqual({ eventId: p.purchaseEventId });
    expect(tr.versions[0].eligibilityRules.rules[0]).toMatchObject({ dataFieldId: p.dataFields.country, rhsValue: '["DE","FR"]', dataMissingBehaviour: 'EVALUATE_TO_ELIGIBLE' });
    expect(tr.versions[0].removedSurfaces.surfaces).toEqual([{ name: 'home' }]);
  });

  it('records a change-log entry, bumps the catalogue version and publishes an invalidation', async () => {
    const p = await setupCatalog();
    const seen: Invalidation[] = [];
    const off = t.ctx.bus.on((m) => seen.push(m));
    const versionBefore = Number((await t.ctx.redis.get(t.ctx.keys.catalogVersion(p.projectId))) ?? 0);
    try {
      const tr = await insert(p);
      const { changes } = await listChanges(t.ctx.redis, t.ctx.keys, p.projectId, 1);
      expect(changes[0]).toMatchObject({ actor: 'alice', operation: 'InsertTreatment', resourceKind: 'treatment', resourceId: tr.treatmentId, before: null });
      expect((changes[0].after as any).name).toBe('Welcome');
      expect(Number(await t.ctx.redis.get(t.ctx.keys.catalogVersion(p.projectId)))).toBe(versionBefore + 1);
      await waitUntil(() => seen.some((m) => m.kind === 'catalog' && m.projectId === p.projectId), 2000);
    } finally {
      off();
    }
  });
});

describe('InsertTreatment / UpdateTreatment validation', () => {
  let p: Catalog;
  beforeAll(async () => {
    p = await setupCatalog();
  });

  const lang = (languageCode: string, fields: [string, string][]) => ({ languageCode: { languageCode }, contentFields: fields.map(([fieldName, stringValue]) => ({ fieldName, stringValue })) });

  const cases: [string, () => Record<string, unknown>, string][] = [
    ['unknown content field', () => ({ content: { contentByLanguage: [lang('en', [['colour', 'red']])] } }), 'content.contentByLanguage[0].contentFields[0].fieldName'],
    ['language-agnostic field inside a language', () => ({ content: { contentByLanguage: [lang('en', [['link', 'https://x']])] } }), 'content.contentByLanguage[0].contentFields[0].fieldName'],
    ['per-language field among the agnostic ones', () => ({ content: { languageAgnosticContentFields: [{ fieldName: 'title', stringValue: 'Hi' }] } }), 'content.languageAgnosticContentFields[0].fieldName'],
    ['value longer than the field allows', () => ({ content: { contentByLanguage: [lang('en', [['title', 'x'.repeat(21)]])] } }), 'content.contentByLanguage[0].contentFields[0].stringValue'],
    ['malformed language code', () => ({ content: { contentByLanguage: [lang('not a tag!', [['title', 'Hi']])] } }), 'content.contentByLanguage[0].languageCode.languageCode'],
    ['the same language twice', () => ({ content: { contentByLanguage: [lang('en-US', [['title', 'Hi']]), lang('en-us', [['title', 'Yo']])] } }), 'content.contentByLanguage[1].languageCode.languageCode'],
    ['rule on an unknown data field', () => ({ eligibilityRules: { rules: [{ dataFieldId: '999999999', condition: 'EQUALS', rhsValue: 'x' }] } }), 'eligibilityRules.rules[0].dataFieldId'],
    ['condition that does not fit the data field type', () => ({ eligibilityRules: { rules: [{ dataFieldId: p.dataFields.vip, condition: 'LESS_THAN', rhsValue: 'true' }] } }), 'eligibilityRules.rules[0].condition'],
    ['rhs value that does not parse for the type', () => ({ eligibilityRules: { rules: [{ dataFieldId: p.dataFields.age, condition: 'GREATER_THAN', rhsValue: 'old' }] } }), 'eligibilityRules.rules[0].rhsValue'],
    ['unspecified condition', () => ({ eligibilityRules: { rules: [{ dataFieldId: p.dataFields.age, condition: 'UNSPECIFIED_CONDITION', rhsValue: '1' }] } }), 'eligibilityRules.rules[0].condition'],
    ['removed surface that is not a surface of the type', () => ({ removedSurfaces: { surfaces: [{ name: 'banner' }] } }), 'removedSurfaces.surfaces[0].name'],
    ['end before start', () => ({ endTimestamp: iso(T0 - 2 * HOUR) }), 'endTimestamp'],
    ['impossible calendar date', () => ({ endTimestamp: '2026-02-30T00:00:00Z' }), 'endTimestamp'],
    ['timestamp without an offset', () => ({ endTimestamp: '2026-05-01T00:00:00' }), 'endTimestamp'],
    ['unknown request field', () => ({ colour: 'red' }), 'colour'],
    ['int64 out of range', () => ({ targetAction: { eventId: '99999999999999999999' } }), 'targetAction.eventId'],
  ];

  it.each(cases)('InsertTreatment rejects %s with 400 and the field path', async (_name, overrides, field) => {
    expectInvalid(await call(t, 'InsertTreatment', p.management, insertBody(p, overrides())), field);
  });

  it.each(cases)('UpdateTreatment rejects %s with 400 and leaves the treatment unchanged', async (_name, overrides, field) => {
    const tr = await insert(p);
    const res = await call(t, 'UpdateTreatment', p.management, { projectId: p.projectId, treatmentId: tr.treatmentId, lastModifiedBy: 'bob', ...overrides() });
    expectInvalid(res, field);
    expect(await get(p, tr.treatmentId)).toEqual(tr);
  });

  it('InsertTreatment names every problem of a request in one 400 and writes nothing', async () => {
    const q = await setupCatalog();
    const res = await call(t, 'InsertTreatment', q.management, insertBody(q, {
      content: { contentByLanguage: [lang('en', [['colour', 'red'], ['title', 'x'.repeat(30)]])] },
      removedSurfaces: { surfaces: [{ name: 'nowhere' }] },
    }));
    expect(res.status).toBe(400);
    expect(res.body.error.details.map((d: any) => d.field).sort()).toEqual([
      'content.contentByLanguage[0].contentFields[0].fieldName',
      'content.contentByLanguage[0].contentFields[1].stringValue',
      'removedSurfaces.surfaces[0].name',
    ]);
    expect(await getAll(q)).toEqual([]);
  });

  it('InsertTreatment requires its fields and an existing treatment type', async () => {
    const { name: _n, ...noName } = insertBody(p);
    expectInvalid(await call(t, 'InsertTreatment', p.management, noName), 'name');
    const { content: _c, ...noContent } = insertBody(p);
    expectInvalid(await call(t, 'InsertTreatment', p.management, noContent), 'content');
    expectInvalid(await call(t, 'InsertTreatment', p.management, insertBody(p, { treatmentTypeName: 'nope' })), 'treatmentTypeName');
  });

  it('shouldPause / shouldDelete admit only the identifying fields, and not both at once', async () => {
    const tr = await insert(p, { shouldPublish: true });
    const base = { projectId: p.projectId, treatmentId: tr.treatmentId, lastModifiedBy: 'bob' };
    expectInvalid(await call(t, 'UpdateTreatment', p.management, { ...base, shouldPause: true, name: 'x' }), 'name');
    expectInvalid(await call(t, 'UpdateTreatment', p.management, { ...base, shouldDelete: true, tags: [] }), 'tags');
    expectInvalid(await call(t, 'UpdateTreatment', p.management, { ...base, shouldPause: true, shouldPublish: true }), 'shouldPublish');
    expectInvalid(await call(t, 'UpdateTreatment', p.management, { ...base, shouldPause: true, shouldDelete: true }), 'shouldPause');
    expect((await get(p, tr.treatmentId)).status).toBe('LIVE');
  });

  it('UpdateTreatment needs treatmentId or externalTreatmentId', async () => {
    expectInvalid(await call(t, 'UpdateTreatment', p.management, { projectId: p.projectId, lastModifiedBy: 'bob', name: 'x' }), 'treatmentId');
  });
});

describe('UpdateTreatment', () => {
  it('changes name and description in place, and a content change adds a DRAFT version while the LIVE one keeps serving', async () => {
    const p = await setupCatalog();
    const tr = await insert(p, { shouldPublish: true });
    t.clock.set(T0 + MINUTE);
    const renamed = await update(p, { treatmentId: tr.treatmentId, name: 'Renamed', description: 'new' });
    expect(renamed).toMatchObject({ name: 'Renamed', description: 'new', lastModifiedBy: 'bob', lastModifiedTimestamp: iso(T0 + MINUTE), modificationSource: 'API' });
    expect(renamed.versions).toHaveLength(1);

    const edited = await update(p, { treatmentId: tr.treatmentId, content: content('Hello') });
    expect(edited.status).toBe('LIVE');
    expect(statuses(edited)).toEqual([[2, 'DRAFT'], [1, 'LIVE']]);
    expect(edited.versions[0].content.contentByLanguage[0].contentFields[0].stringValue).toBe('Hello');
    // copied from the newest version: fields not in the request are kept
    expect(edited.versions[0].content.languageAgnosticContentFields).toEqual(content().languageAgnosticContentFields);
    expect(edited.versions[1].content.contentByLanguage[0].contentFields[0].stringValue).toBe('Hi');

    // a retried identical update changes nothing
    const again = await update(p, { treatmentId: tr.treatmentId, content: content('Hello') });
    expect(again.versions).toHaveLength(2);
    expect(again.lastModifiedTimestamp).toBe(iso(T0 + MINUTE));
  });

  it('publishing supersedes the served version, which becomes ARCHIVED with its end moved to the publish time', async () => {
    const p = await setupCatalog();
    const tr = await insert(p, { shouldPublish: true });
    t.clock.set(T0 + MINUTE);
    await update(p, { treatmentId: tr.treatmentId, content: content('Draft') });
    t.clock.set(T0 + 2 * MINUTE);
    // shouldPublish alone publishes the newest draft
    const published = await update(p, { treatmentId: tr.treatmentId, shouldPublish: true });
    expect(statuses(published)).toEqual([[2, 'LIVE'], [1, 'ARCHIVED']]);
    expect(published.versions[1].endTimestamp).toBe(iso(T0 + 2 * MINUTE));
    expect(published.versions[0].publishTime).toBe(iso(T0 + 2 * MINUTE));

    t.clock.set(T0 + 3 * MINUTE);
    const direct = await update(p, { treatmentId: tr.treatmentId, tags: [{ name: 'x' }], shouldPublish: true });
    expect(statuses(direct)).toEqual([[3, 'LIVE'], [2, 'ARCHIVED'], [1, 'ARCHIVED']]);
  });

  it('tags [] clears, eligibilityRules unset keeps and set replaces, each as a new version', async () => {
    const p = await setupCatalog();
    const rule = { dataFieldId: p.dataFields.age, condition: 'LESS_THAN', rhsValue: '30' };
    const tr = await insert(p, { tags: [{ name: 'a' }, { name: 'b' }], eligibilityRules: { rules: [rule] } });
    const cleared = await update(p, { treatmentId: tr.treatmentId, tags: [] });
    expect(cleared.versions[0]).toMatchObject({ versionNumber: 2, tags: [] });
    expect(cleared.versions[0].eligibilityRules.rules).toHaveLength(1);
    const replaced = await update(p, { treatmentId: tr.treatmentId, eligibilityRules: { rules: [{ ...rule, rhsValue: '40' }] } });
    expect(replaced.versions[0].eligibilityRules.rules.map((r: any) => r.rhsValue)).toEqual(['40']);
    const emptied = await update(p, { treatmentId: tr.treatmentId, eligibilityRules: { rules: [] } });
    expect(emptied.versions[0]).toMatchObject({ versionNumber: 4, eligibilityRules: { rules: [] } });
  });

  it('pauses a LIVE treatment; pausing a PAUSED or DRAFT one is FAILED_PRECONDITION; shouldPublish resumes', async () => {
    const p = await setupCatalog();
    const tr = await insert(p, { shouldPublish: true });
    const paused = await update(p, { treatmentId: tr.treatmentId, shouldPause: true });
    expect(paused.status).toBe('PAUSED');
    const draft = await insert(p);
    for (const id of [tr.treatmentId, draft.treatmentId]) {
      const res = await call(t, 'UpdateTreatment', p.management, { projectId: p.projectId, treatmentId: id, lastModifiedBy: 'bob', shouldPause: true });
      expect(res.status).toBe(400);
      expect(res.body.error.status).toBe('FAILED_PRECONDITION');
    }
    expect((await get(p, draft.treatmentId)).status).toBe('DRAFT');
    const resumed = await update(p, { treatmentId: tr.treatmentId, shouldPublish: true });
    expect(resumed.status).toBe('LIVE');
    expect(resumed.versions).toHaveLength(1);
  });

  it('delete ends every version now: ARCHIVED, still readable by GetTreatment and GetAllTreatments', async () => {
    const p = await setupCatalog();
    const tr = await insert(p, { shouldPublish: true });
    await update(p, { treatmentId: tr.treatmentId, content: content('Draft') });
    t.clock.set(T0 + MINUTE);
    const deleted = await update(p, { treatmentId: tr.treatmentId, shouldDelete: true });
    expect(deleted.status).toBe('ARCHIVED');
    expect(statuses(deleted)).toEqual([[2, 'ARCHIVED'], [1, 'ARCHIVED']]);
    for (const v of deleted.versions) expect(v.endTimestamp).toBe(iso(T0 + MINUTE));
    expect((await get(p, tr.treatmentId)).status).toBe('ARCHIVED');
    expect((await getAll(p)).map((x) => x.treatmentId)).toEqual([tr.treatmentId]);
  });

  it('rejects an end before the start also against the copied version', async () => {
    const p = await setupCatalog();
    const tr = await insert(p, { startTimestamp: iso(T0 + HOUR) });
    expectInvalid(await call(t, 'UpdateTreatment', p.management, { projectId: p.projectId, treatmentId: tr.treatmentId, lastModifiedBy: 'bob', endTimestamp: iso(T0) }), 'endTimestamp');
    const moved = await update(p, { treatmentId: tr.treatmentId, endTimestamp: iso(T0 + 2 * HOUR) });
    expect(moved.versions[0]).toMatchObject({ startTimestamp: iso(T0 + HOUR), endTimestamp: iso(T0 + 2 * HOUR) });
  });

  it('ten concurrent updates of one treatment all succeed and none is lost', async () => {
    const p = await setupCatalog();
    const tr = await insert(p, { shouldPublish: true });
    const n = 10;
    const results = await Promise.all(
      Array.from({ length: n }, (_, i) => call(t, 'UpdateTreatment', p.management, { projectId: p.projectId, treatmentId: tr.treatmentId, lastModifiedBy: `user${i}`, tags: [{ name: `tag${i}` }] })),
    );
    expect(results.map((r) => r.status)).toEqual(Array(n).fill(200));
    const final = await get(p, tr.treatmentId);
    expect(final.versions.map((v: any) => v.versionNumber)).toEqual(Array.from({ length: n + 1 }, (_, i) => n + 1 - i));
    const tags = final.versions.slice(0, n).map((v: any) => v.tags[0].name).sort();
    expect(tags).toEqual(Array.from({ length: n }, (_, i) => `tag${i}`).sort());
    const { changes } = await listChanges(t.ctx.redis, t.ctx.keys, p.projectId, 100);
    expect(changes.filter((c) => c.operation === 'UpdateTreatment' && c.resourceId === tr.treatmentId)).toHaveLength(n);

    const renames = await Promise.all(
      Array.from({ length: n }, (_, i) => call(t, 'UpdateTreatment', p.management, { projectId: p.projectId, treatmentId: tr.treatmentId, lastModifiedBy: 'x', description: `d${i}`, content: content(`c${i}`) })),
    );
    expect(renames.map((r) => r.status)).toEqual(Array(n).fill(200));
    expect((await get(p, tr.treatmentId)).versions).toHaveLength(2 * n + 1);
  });
});

describe('externalTreatmentId', () => {
  it('is unique per project (409), identifies the treatment on update, and can be assigned later', async () => {
    const p = await setupCatalog();
    const a = await insert(p, { externalTreatmentId: 'crm-1' });
    const dup = await call(t, 'InsertTreatment', p.management, insertBody(p, { externalTreatmentId: 'crm-1' }));
    expect(dup.status).toBe(409);
    expect(dup.body.error.status).toBe('ALREADY_EXISTS');

    const byExt = await update(p, { externalTreatmentId: 'crm-1', name: 'by ext' });
    expect(byExt).toMatchObject({ treatmentId: a.treatmentId, name: 'by ext' });
    const both = await update(p, { treatmentId: a.treatmentId, externalTreatmentId: 'crm-1', description: 'both' });
    expect(both.description).toBe('both');

    const missing = await call(t, 'UpdateTreatment', p.management, { projectId: p.projectId, externalTreatmentId: 'crm-404', lastModifiedBy: 'bob', name: 'x' });
    expect(missing.status).toBe(404);

    const b = await insert(p);
    expectInvalid(await call(t, 'UpdateTreatment', p.management, { projectId: p.projectId, treatmentId: b.treatmentId, externalTreatmentId: 'crm-1', lastModifiedBy: 'bob' }), 'externalTreatmentId');
    const assigned = await update(p, { treatmentId: b.treatmentId, externalTreatmentId: 'crm-2' });
    expect(assigned.externalTreatmentId).toBe('crm-2');
    expect((await update(p, { externalTreatmentId: 'crm-2', shouldDelete: true })).status).toBe('ARCHIVED');
    expectInvalid(await call(t, 'UpdateTreatment', p.management, { projectId: p.projectId, treatmentId: a.treatmentId, externalTreatmentId: 'crm-2', lastModifiedBy: 'bob' }), 'externalTreatmentId');

    // another project may use the same external id
    const q = await setupCatalog();
    expect((await insert(q, { externalTreatmentId: 'crm-1' })).externalTreatmentId).toBe('crm-1');
  });
});

describe('mutual exclusion groups', () => {
  it('are created on first use, reused by name, and cleared by an empty string', async () => {
    const p = await setupCatalog();
    const a = await insert(p, { mutualExclusionGroup: 'hero' });
    expect(a.mutualExclusionGroup).toEqual({ projectId: p.projectId, mutualExclusionGroupId: expect.stringMatching(/^[1-9][0-9]*$/), name: 'hero' });
    const b = await insert(p, { mutualExclusionGroup: 'hero' });
    expect(b.mutualExclusionGroup).toEqual(a.mutualExclusionGroup);
    const c = await update(p, { treatmentId: b.treatmentId, mutualExclusionGroup: 'footer' });
    expect(c.mutualExclusionGroup.name).toBe('footer');
    expect(c.mutualExclusionGroup.mutualExclusionGroupId).not.toBe(a.mutualExclusionGroup.mutualExclusionGroupId);
    expect(c.versions).toHaveLength(1);
    const cleared = await update(p, { treatmentId: a.treatmentId, mutualExclusionGroup: '' });
    expect(cleared.mutualExclusionGroup).toBeUndefined();
    const listed = await getAll(p);
    expect(listed.map((x) => x.mutualExclusionGroup?.name)).toEqual([undefined, 'footer']);
    expect((await insert(p, { mutualExclusionGroup: 'hero' })).mutualExclusionGroup).toEqual(a.mutualExclusionGroup);
  });
});

describe('GetAllTreatments', () => {
  let p: Catalog;
  let a: any;
  let b: any;
  let c: any;
  let d: any;

  beforeAll(async () => {
    t.clock.set(T0);
    p = await setupCatalog();
    // a: card, LIVE v1 + drafts v2 (T0+1m) and v3 (T0+2m); tags promo
    a = await insert(p, { tags: [{ name: 'promo' }], shouldPublish: true });
    t.clock.set(T0 + MINUTE);
    await update(p, { treatmentId: a.treatmentId, content: content('v2') });
    t.clock.set(T0 + 2 * MINUTE);
    await update(p, { treatmentId: a.treatmentId, content: content('v3') });
    // b: card, only on inbox, tags news
    b = await insert(p, { tags: [{ name: 'news' }], removedSurfaces: { surfaces: [{ name: 'home' }] }, shouldPublish: true });
    // c: email on banner, tags promo
    c = await insert(p, { treatmentTypeName: 'email', tags: [{ name: 'promo' }], content: { contentByLanguage: [{ languageCode: { languageCode: 'en' }, contentFields: [{ fieldName: 'subject', stringValue: 'S' }] }] }, shouldPublish: true });
    // d: card draft only
    d = await insert(p);
    t.clock.set(T0);
  });

  const ids = (ts: any[]) => ts.map((x) => x.treatmentId);

  it('lists every treatment in ascending id order with every version, newest first', async () => {
    const all = await getAll(p);
    expect(ids(all)).toEqual([a.treatmentId, b.treatmentId, c.treatmentId, d.treatmentId]);
    t.clock.set(T0 + 3 * MINUTE);
    expect(statuses((await getAll(p))[0])).toEqual([[3, 'DRAFT'], [2, 'DRAFT'], [1, 'LIVE']]);
  });

  it('filters by treatment type name', async () => {
    expect(ids(await getAll(p, { treatmentFilter: { treatmentTypeName: 'email' } }))).toEqual([c.treatmentId]);
    expect(await getAll(p, { treatmentFilter: { treatmentTypeName: 'nope' } })).toEqual([]);
    expect(ids(await getAll(p, { treatmentFilter: { treatmentTypeName: '' } }))).toHaveLength(4);
  });

  it('filters versions by surface (OR), by tag (OR), and by both (AND)', async () => {
    const f = (surfaceNames?: string[], tags?: string[]) =>
      getAll(p, { treatmentVersionFilter: { ...(surfaceNames ? { surface: { surfaceNames } } : {}), ...(tags ? { tag: { tags } } : {}) } });
    expect(ids(await f(['home']))).toEqual([a.treatmentId, d.treatmentId]);
    expect(ids(await f(['home', 'banner']))).toEqual([a.treatmentId, c.treatmentId, d.treatmentId]);
    expect(ids(await f(undefined, ['promo']))).toEqual([a.treatmentId, c.treatmentId]);
    expect(ids(await f(undefined, ['promo', 'news']))).toEqual([a.treatmentId, b.treatmentId, c.treatmentId]);
    expect(ids(await f(['inbox'], ['news']))).toEqual([b.treatmentId]);
    expect(ids(await f(['banner'], ['news']))).toEqual([]);
  });

  it('maxNonLiveVersions: unset all, 0 live only (treatments without one omitted), N live plus N newest others', async () => {
    const versionsOf = async (max?: number) => {
      const listed = await getAll(p, max === undefined ? {} : { maxNonLiveVersions: max });
      return Object.fromEntries(listed.map((x) => [x.treatmentId, x.versions.map((v: any) => v.versionNumber)]));
    };
    expect((await versionsOf())[a.treatmentId]).toEqual([3, 2, 1]);
    const zero = await versionsOf(0);
    expect(zero[a.treatmentId]).toEqual([1]);
    expect(zero[d.treatmentId]).toBeUndefined();
    expect((await versionsOf(1))[a.treatmentId]).toEqual([3, 1]);
    expect((await versionsOf(1))[d.treatmentId]).toEqual([1]);
    expect((await versionsOf(5))[a.treatmentId]).toEqual([3, 2, 1]);
    expectInvalid(await call(t, 'GetAllTreatments', p.management, { projectId: p.projectId, maxNonLiveVersions: -1 }), 'maxNonLiveVersions');
  });

  it('answers {treatments: []} for a project without treatments', async () => {
    const q = await createProjectWithKeys(t);
    const res = await call(t, 'GetAllTreatments', q.management, { projectId: q.projectId });
    expect(res).toEqual({ status: 200, body: { treatments: [] } });
  });
});

describe('GetTreatment, 404s and permissions', () => {
  let p: Catalog;
  let q: Catalog;
  let tr: any;
  beforeAll(async () => {
    p = await setupCatalog();
    q = await setupCatalog();
    tr = await insert(p, { shouldPublish: true });
  });

  it('answers 404 for an unknown id and for an id of another project (get and update)', async () => {
    const unknown = await call(t, 'GetTreatment', p.management, { projectId: p.projectId, treatmentId: '987654321987' });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.status).toBe('NOT_FOUND');
    expect((await call(t, 'GetTreatment', q.management, { projectId: q.projectId, treatmentId: tr.treatmentId })).status).toBe(404);
    const upd = await call(t, 'UpdateTreatment', q.management, { projectId: q.projectId, treatmentId: tr.treatmentId, lastModifiedBy: 'eve', name: 'pwned' });
    expect(upd.status).toBe(404);
    expect((await call(t, 'UpdateTreatment', p.management, { projectId: p.projectId, treatmentId: '987654321987', lastModifiedBy: 'bob', shouldDelete: true })).status).toBe(404);
    expect((await get(p, tr.treatmentId)).name).toBe('Welcome');
  });

  it('lets a DELIVERY key read but not write or list; LOG_EVENTS keys get 403; another project’s key 401', async () => {
    expect((await call(t, 'GetTreatment', p.delivery, { projectId: p.projectId, treatmentId: tr.treatmentId })).status).toBe(200);
    for (const [op, body] of [
      ['InsertTreatment', insertBody(p)],
      ['UpdateTreatment', { projectId: p.projectId, treatmentId: tr.treatmentId, lastModifiedBy: 'x', name: 'y' }],
      ['GetAllTreatments', { projectId: p.projectId }],
    ] as const) {
      const res = await call(t, op, p.delivery, body);
      expect(res.status, op).toBe(403);
      expect(res.body.error.status).toBe('PERMISSION_DENIED');
    }
    expect((await call(t, 'GetTreatment', p.logEvents, { projectId: p.projectId, treatmentId: tr.treatmentId })).status).toBe(403);
    expect((await call(t, 'InsertTreatment', p.logEvents, insertBody(p))).status).toBe(403);
    expect((await call(t, 'GetTreatment', q.management, { projectId: p.projectId, treatmentId: tr.treatmentId })).status).toBe(401);
    expect((await call(t, 'InsertTreatment', q.management, insertBody(p))).status).toBe(401);
    expect((await call(t, 'InsertTreatment', undefined, insertBody(p))).status).toBe(401);
  });

  it('serves GetTreatment on the alternate listener for ALT projects only (header or api_key parameter)', async () => {
    const alt = await setupCatalog('ALT');
    const altTr = await insert(alt);
    const viaHeader = await call(t, 'GetTreatment', alt.delivery, { projectId: alt.projectId, treatmentId: altTr.treatmentId }, t.alt);
    expect(viaHeader.status).toBe(200);
    expect(viaHeader.body.treatment).toEqual(altTr);
    const viaParam = await t.alt.inject({ method: 'POST', url: `/v1/GetTreatment?api_key=${encodeURIComponent(alt.delivery)}`, payload: { projectId: alt.projectId, treatmentId: altTr.treatmentId } });
    expect(viaParam.statusCode).toBe(200);
    expect((await call(t, 'GetTreatment', alt.delivery, { projectId: alt.projectId, treatmentId: altTr.treatmentId })).status).toBe(401);
    expect((await call(t, 'GetTreatment', p.delivery, { projectId: p.projectId, treatmentId: tr.treatmentId }, t.alt)).status).toBe(401);
    expect((await call(t, 'InsertTreatment', alt.management, insertBody(alt), t.alt)).status).toBe(404);
  });
});
