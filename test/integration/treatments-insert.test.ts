import { beforeAll, describe, expect, it } from 'vitest';
import { waitUntil } from '../helpers/context.js';
import { listChanges } from '../../shared/projects/change-log.store.js';
import type { Invalidation } from '../../shared/platform/redis/invalidation-bus.js';
import { T0, HOUR, iso, content, insertBody, statuses, expectInvalid, useTreatmentApp, type Catalog } from '../helpers/treatment-catalog.js';

/** InsertTreatment: what a new treatment holds, its side effects, and the validation Insert and Update share. */
const { app, send, setupCatalog, insert, get, getAll } = useTreatmentApp();

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

    app().clock.set(T0 + 2 * HOUR);
    expect((await get(p, scheduled.treatmentId)).status).toBe('LIVE');
    app().clock.set(T0 + 3 * HOUR);
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
          {
            languageCode: { languageCode: 'en-us' },
            contentFields: [
              { fieldName: 'title', stringValue: 'Hi' },
              { fieldName: 'body', stringValue: 'Hello there' },
            ],
          },
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
    const res = await send('InsertTreatment', p.management, {
      project_id: p.projectId,
      name: 'Snake',
      description: 'd',
      treatment_type_name: 'card',
      last_modified_by: 'alice',
      start_timestamp: iso(T0 - HOUR),
      should_publish: true,
      content: { content_by_language: [{ language_code: { language_code: 'en' }, content_fields: [{ field_name: 'title', string_value: 'Hi' }] }] },
      target_action: { event_id: p.purchaseEventId },
      eligibility_rules: {
        rules: [{ data_field_id: p.dataFields.country, condition: 'ANY_OF', rhs_value: '["DE","FR"]', data_missing_behaviour: 'EVALUATE_TO_ELIGIBLE' }],
      },
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
    expect(tr.versions[0].eligibilityRules.rules[0]).toMatchObject({
      dataFieldId: p.dataFields.country,
      rhsValue: '["DE","FR"]',
      dataMissingBehaviour: 'EVALUATE_TO_ELIGIBLE',
    });
    expect(tr.versions[0].removedSurfaces.surfaces).toEqual([{ name: 'home' }]);
  });

  it('records a change-log entry, bumps the catalogue version and publishes an invalidation', async () => {
    const p = await setupCatalog();
    const seen: Invalidation[] = [];
    const off = app().ctx.bus.on((m) => seen.push(m));
    const versionBefore = Number((await app().ctx.redis.get(app().ctx.keys.catalogVersion(p.projectId))) ?? 0);
    try {
      const tr = await insert(p);
      const { changes } = await listChanges(app().ctx.redis, app().ctx.keys, p.projectId, 1);
      expect(changes[0]).toMatchObject({ actor: 'alice', operation: 'InsertTreatment', resourceKind: 'treatment', resourceId: tr.treatmentId, before: null });
      expect((changes[0].after as any).name).toBe('Welcome');
      expect(Number(await app().ctx.redis.get(app().ctx.keys.catalogVersion(p.projectId)))).toBe(versionBefore + 1);
      await waitUntil(() => seen.some((m) => m.kind === 'catalog' && m.projectId === p.projectId), 15_000);
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

  const lang = (languageCode: string, fields: [string, string][]) => ({
    languageCode: { languageCode },
    contentFields: fields.map(([fieldName, stringValue]) => ({ fieldName, stringValue })),
  });

  const cases: [string, () => Record<string, unknown>, string][] = [
    [
      'unknown content field',
      () => ({ content: { contentByLanguage: [lang('en', [['colour', 'red']])] } }),
      'content.contentByLanguage[0].contentFields[0].fieldName',
    ],
    [
      'language-agnostic field inside a language',
      () => ({ content: { contentByLanguage: [lang('en', [['link', 'https://x']])] } }),
      'content.contentByLanguage[0].contentFields[0].fieldName',
    ],
    [
      'per-language field among the agnostic ones',
      () => ({ content: { languageAgnosticContentFields: [{ fieldName: 'title', stringValue: 'Hi' }] } }),
      'content.languageAgnosticContentFields[0].fieldName',
    ],
    [
      'value longer than the field allows',
      () => ({ content: { contentByLanguage: [lang('en', [['title', 'x'.repeat(21)]])] } }),
      'content.contentByLanguage[0].contentFields[0].stringValue',
    ],
    [
      'malformed language code',
      () => ({ content: { contentByLanguage: [lang('not a tag!', [['title', 'Hi']])] } }),
      'content.contentByLanguage[0].languageCode.languageCode',
    ],
    [
      'the same language twice',
      () => ({ content: { contentByLanguage: [lang('en-US', [['title', 'Hi']]), lang('en-us', [['title', 'Yo']])] } }),
      'content.contentByLanguage[1].languageCode.languageCode',
    ],
    [
      'rule on an unknown data field',
      () => ({ eligibilityRules: { rules: [{ dataFieldId: '999999999', condition: 'EQUALS', rhsValue: 'x' }] } }),
      'eligibilityRules.rules[0].dataFieldId',
    ],
    [
      'condition that does not fit the data field type',
      () => ({ eligibilityRules: { rules: [{ dataFieldId: p.dataFields.vip, condition: 'LESS_THAN', rhsValue: 'true' }] } }),
      'eligibilityRules.rules[0].condition',
    ],
    [
      'rhs value that does not parse for the type',
      () => ({ eligibilityRules: { rules: [{ dataFieldId: p.dataFields.age, condition: 'GREATER_THAN', rhsValue: 'old' }] } }),
      'eligibilityRules.rules[0].rhsValue',
    ],
    [
      'unspecified condition',
      () => ({ eligibilityRules: { rules: [{ dataFieldId: p.dataFields.age, condition: 'UNSPECIFIED_CONDITION', rhsValue: '1' }] } }),
      'eligibilityRules.rules[0].condition',
    ],
    ['removed surface that is not a surface of the type', () => ({ removedSurfaces: { surfaces: [{ name: 'banner' }] } }), 'removedSurfaces.surfaces[0].name'],
    ['end before start', () => ({ endTimestamp: iso(T0 - 2 * HOUR) }), 'endTimestamp'],
    ['impossible calendar date', () => ({ endTimestamp: '2026-02-30T00:00:00Z' }), 'endTimestamp'],
    ['timestamp without an offset', () => ({ endTimestamp: '2026-05-01T00:00:00' }), 'endTimestamp'],
    ['unknown request field', () => ({ colour: 'red' }), 'colour'],
    ['int64 out of range', () => ({ targetAction: { eventId: '99999999999999999999' } }), 'targetAction.eventId'],
  ];

  it.each(cases)('InsertTreatment rejects %s with 400 and the field path', async (_name, overrides, field) => {
    expectInvalid(await send('InsertTreatment', p.management, insertBody(p, overrides())), field);
  });

  it.each(cases)('UpdateTreatment rejects %s with 400 and leaves the treatment unchanged', async (_name, overrides, field) => {
    const tr = await insert(p);
    const res = await send('UpdateTreatment', p.management, { projectId: p.projectId, treatmentId: tr.treatmentId, lastModifiedBy: 'bob', ...overrides() });
    expectInvalid(res, field);
    expect(await get(p, tr.treatmentId)).toEqual(tr);
  });

  it('InsertTreatment names every problem of a request in one 400 and writes nothing', async () => {
    const q = await setupCatalog();
    const res = await send(
      'InsertTreatment',
      q.management,
      insertBody(q, {
        content: {
          contentByLanguage: [
            lang('en', [
              ['colour', 'red'],
              ['title', 'x'.repeat(30)],
            ]),
          ],
        },
        removedSurfaces: { surfaces: [{ name: 'nowhere' }] },
      }),
    );
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
    expectInvalid(await send('InsertTreatment', p.management, noName), 'name');
    const { content: _c, ...noContent } = insertBody(p);
    expectInvalid(await send('InsertTreatment', p.management, noContent), 'content');
    expectInvalid(await send('InsertTreatment', p.management, insertBody(p, { treatmentTypeName: 'nope' })), 'treatmentTypeName');
  });

  it('shouldPause / shouldDelete admit only the identifying fields, and not both at once', async () => {
    const tr = await insert(p, { shouldPublish: true });
    const base = { projectId: p.projectId, treatmentId: tr.treatmentId, lastModifiedBy: 'bob' };
    expectInvalid(await send('UpdateTreatment', p.management, { ...base, shouldPause: true, name: 'x' }), 'name');
    expectInvalid(await send('UpdateTreatment', p.management, { ...base, shouldDelete: true, tags: [] }), 'tags');
    expectInvalid(await send('UpdateTreatment', p.management, { ...base, shouldPause: true, shouldPublish: true }), 'shouldPublish');
    expectInvalid(await send('UpdateTreatment', p.management, { ...base, shouldPause: true, shouldDelete: true }), 'shouldPause');
    expect((await get(p, tr.treatmentId)).status).toBe('LIVE');
  });

  it('UpdateTreatment needs treatmentId or externalTreatmentId', async () => {
    expectInvalid(await send('UpdateTreatment', p.management, { projectId: p.projectId, lastModifiedBy: 'bob', name: 'x' }), 'treatmentId');
  });
});
