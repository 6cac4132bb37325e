import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createProjectWithKeys, createTestApp, type ProjectKeys, type TestApp } from '../helpers/context.js';

/** A management change never leaves stored content invalid; clearEndTimestamp / clearTargetAction. */

let t: TestApp;
let p: ProjectKeys;

beforeAll(async () => {
  t = await createTestApp();
  p = await createProjectWithKeys(t);
  for (const name of ['home', 'inbox', 'footer']) expect((await mgmt('InsertSurface', { name })).status).toBe(200);
});

afterAll(async () => {
  await t?.close();
});

const mgmt = (operation: string, body: Record<string, unknown>) => call(t, operation, p.management, { projectId: p.projectId, ...body });

function expectError(r: { status: number; body: any }, status: number, code: string, field?: string): void {
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  expect(r.body.error.status).toBe(code);
  if (field) expect(r.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
}

function ok(r: { status: number; body: any }): any {
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
}

const FIELDS = [
  { fieldName: 'title', maximumLengthAllowed: 50, isPerLanguage: true },
  { fieldName: 'link', maximumLengthAllowed: 200 },
];
let counter = 0;

async function insertType(surfaces = ['home', 'inbox'], contentFieldTypes: unknown[] = FIELDS): Promise<{ id: string; name: string }> {
  counter += 1;
  const name = `type-${counter}`;
  const r = ok(
    await mgmt('InsertTreatmentType', {
      treatmentTypeName: name,
      contentFieldTypes,
      surfaces: surfaces.map((surfaceName) => ({ surfaceName })),
      lastModifiedBy: 'alice',
    }),
  );
  return { id: r.treatmentType.treatmentTypeId, name };
}

function content(title: string, link?: string) {
  return {
    contentByLanguage: [{ languageCode: { languageCode: 'en' }, contentFields: [{ fieldName: 'title', stringValue: title }] }],
    languageAgnosticContentFields: link === undefined ? [] : [{ fieldName: 'link', stringValue: link }],
  };
}

async function insertTreatment(typeName: string, extra: Record<string, unknown> = {}): Promise<string> {
  const r = ok(
    await mgmt('InsertTreatment', {
      name: `t-${typeName}`,
      description: 'd',
      treatmentTypeName: typeName,
      lastModifiedBy: 'alice',
      startTimestamp: '2026-01-01T00:00:00Z',
      content: content('Hello there', 'https://example.com'),
      ...extra,
    }),
  );
  return r.treatment.treatmentId;
}

const updateType = (id: string, body: Record<string, unknown>) =>
  mgmt('UpdateTreatmentType', { treatmentTypeId: id, lastModifiedBy: 'bob', contentFieldTypes: FIELDS, ...body });
const updateTreatment = (treatmentId: string, body: Record<string, unknown>) => mgmt('UpdateTreatment', { treatmentId, lastModifiedBy: 'bob', ...body });

async function storedType(id: string): Promise<any> {
  const all = ok(await mgmt('GetAllTreatmentTypes', {}));
  return all.treatmentTypes.find((x: { treatmentTypeId: string }) => x.treatmentTypeId === id);
}

describe('UpdateTreatmentType refuses changes that would invalidate stored content', () => {
  it('removing a content field that a draft treatment stores a value for: 400 FAILED_PRECONDITION naming the treatment and field; nothing changes', async () => {
    const type = await insertType();
    const tid = await insertTreatment(type.name); // a DRAFT: not published
    const before = await storedType(type.id);
    const r = await updateType(type.id, { contentFieldTypes: [FIELDS[0]] });
    expectError(r, 400, 'FAILED_PRECONDITION', 'contentFieldTypes');
    expect(r.body.error.details[0].description).toContain(`treatment ${tid}`);
    expect(r.body.error.details[0].description).toContain('"link"');
    expect(r.body.error.message).toContain(`treatment ${tid}`);
    expect(await storedType(type.id)).toEqual(before);
  });

  it('shortening maximumLengthAllowed below a value of any version (an older one included): 400; down to the longest value: 200', async () => {
    const type = await insertType();
    const tid = await insertTreatment(type.name, { shouldPublish: true, content: content('x'.repeat(40)) });
    ok(await updateTreatment(tid, { content: content('short'), shouldPublish: true })); // v2; v1 (40 chars) is ARCHIVED
    const shorter = [{ ...FIELDS[0], maximumLengthAllowed: 39 }, FIELDS[1]];
    const r = await updateType(type.id, { contentFieldTypes: shorter });
    expectError(r, 400, 'FAILED_PRECONDITION', 'contentFieldTypes[0].maximumLengthAllowed');
    expect(r.body.error.details).toHaveLength(1);
    expect(r.body.error.details[0].description).toMatch(new RegExp(`treatment ${tid} .*40-character value in "title" \\(version 1\\)`));
    const exact = ok(await updateType(type.id, { contentFieldTypes: [{ ...FIELDS[0], maximumLengthAllowed: 40 }, FIELDS[1]] }));
    expect(exact.treatmentType.contentFieldTypes[0].maximumLengthAllowed).toBe(40);
  });

  it('characters are counted as code points, like content validation', async () => {
    const type = await insertType();
    await insertTreatment(type.name, { content: content('😀😀😀') });
    ok(await updateType(type.id, { contentFieldTypes: [{ ...FIELDS[0], maximumLengthAllowed: 3 }, FIELDS[1]] }));
    expectError(
      await updateType(type.id, { contentFieldTypes: [{ ...FIELDS[0], maximumLengthAllowed: 2 }, FIELDS[1]] }),
      400,
      'FAILED_PRECONDITION',
      'contentFieldTypes[0].maximumLengthAllowed',
    );
  });

  it('moving a stored per-language field to language-agnostic: 400 on isPerLanguage', async () => {
    const type = await insertType();
    await insertTreatment(type.name);
    const r = await updateType(type.id, { contentFieldTypes: [{ ...FIELDS[0], isPerLanguage: false }, FIELDS[1]] });
    expectError(r, 400, 'FAILED_PRECONDITION', 'contentFieldTypes[0].isPerLanguage');
  });

  it('every problem of every treatment is listed at once', async () => {
    const type = await insertType();
    const a = await insertTreatment(type.name, { content: content('x'.repeat(30), 'https://a') });
    const b = await insertTreatment(type.name, { shouldPublish: true, content: content('y'.repeat(20), 'https://b') });
    const r = await updateType(type.id, { contentFieldTypes: [{ ...FIELDS[0], maximumLengthAllowed: 10 }] });
    expectError(r, 400, 'FAILED_PRECONDITION');
    const text = r.body.error.details.map((d: { field: string; description: string }) => `${d.field}|${d.description}`);
    expect(text).toHaveLength(4);
    for (const id of [a, b]) {
      expect(text.some((x: string) => x.startsWith('contentFieldTypes|') && x.includes(`treatment ${id}`))).toBe(true);
      expect(text.some((x: string) => x.startsWith('contentFieldTypes[0].maximumLengthAllowed|') && x.includes(`treatment ${id}`))).toBe(true);
    }
  });

  it('an archived (deleted) treatment does not block the change, and a version copied from its stale content is refused later', async () => {
    const type = await insertType();
    const tid = await insertTreatment(type.name, { shouldPublish: true, content: content('x'.repeat(40), 'https://old') });
    ok(await updateTreatment(tid, { shouldDelete: true }));
    ok(await updateType(type.id, { contentFieldTypes: [{ ...FIELDS[0], maximumLengthAllowed: 10 }] }));
    // A new version would copy the 40-character title and the removed "link": refused, naming both.
    const copy = await updateTreatment(tid, { tags: [{ name: 'again' }], shouldPublish: true });
    expectError(copy, 400, 'FAILED_PRECONDITION', 'content');
    expect(copy.body.error.message).toContain('version 2');
    // Content given in the request is checked against the type as it is now.
    expectError(
      await updateTreatment(tid, { content: content('x'.repeat(11)), shouldPublish: true }),
      400,
      'INVALID_ARGUMENT',
      'content.contentByLanguage[0].contentFields[0].stringValue',
    );
    // The deletion moved the end to its time; clearEndTimestamp lets the new version run again.
    const revived = ok(await updateTreatment(tid, { content: content('short'), clearEndTimestamp: true, shouldPublish: true }));
    expect(revived.treatment.status).toBe('LIVE');
  });

  it('a draft that no longer fits cannot be published', async () => {
    const type = await insertType();
    const tid = await insertTreatment(type.name, { shouldPublish: true, content: content('first') });
    ok(await updateTreatment(tid, { shouldDelete: true }));
    ok(await updateTreatment(tid, { content: content('x'.repeat(30)) })); // v2: a DRAFT of an ARCHIVED treatment
    ok(await updateType(type.id, { contentFieldTypes: [{ ...FIELDS[0], maximumLengthAllowed: 20 }, FIELDS[1]] }));
    expectError(await updateTreatment(tid, { shouldPublish: true }), 400, 'FAILED_PRECONDITION', 'content');
    ok(await updateTreatment(tid, { content: content('fits now'), shouldPublish: true }));
  });

  it('widening changes and changes to other types are never refused', async () => {
    const type = await insertType();
    const other = await insertType();
    await insertTreatment(type.name, { shouldPublish: true, content: content('x'.repeat(45), 'https://a') });
    ok(
      await updateType(type.id, {
        contentFieldTypes: [{ ...FIELDS[0], maximumLengthAllowed: 1000 }, FIELDS[1], { fieldName: 'extra', maximumLengthAllowed: 5 }],
      }),
    );
    ok(
      await updateType(type.id, {
        treatmentTypeName: `${type.name}-renamed`,
        deliveryType: 'NOTIFICATION',
        contentFieldTypes: [{ ...FIELDS[0], maximumLengthAllowed: 45 }, FIELDS[1]],
      }),
    );
    ok(await updateType(other.id, { contentFieldTypes: [{ ...FIELDS[0], maximumLengthAllowed: 1 }], clearSurfaces: true }));
  });

  it('removing a surface a non-archived treatment is delivered on: 400 naming it; once every open version removes it: 200', async () => {
    const type = await insertType(['home', 'inbox', 'footer']);
    const tid = await insertTreatment(type.name, { shouldPublish: true });
    const r = await updateType(type.id, { surfaces: [{ surfaceName: 'home' }, { surfaceName: 'inbox' }] });
    expectError(r, 400, 'FAILED_PRECONDITION', 'surfaces');
    expect(r.body.error.details[0].description).toContain('"footer"');
    expect(r.body.error.details[0].description).toContain(`treatment ${tid}`);
    const cleared = await updateType(type.id, { clearSurfaces: true });
    expectError(cleared, 400, 'FAILED_PRECONDITION', 'clearSurfaces');
    expect(cleared.body.error.details).toHaveLength(3);
    // v2 removes "footer" and is published: v1 becomes ARCHIVED, so nothing open uses "footer".
    ok(await updateTreatment(tid, { removedSurfaces: { surfaces: [{ name: 'footer' }] }, shouldPublish: true }));
    const done = ok(await updateType(type.id, { surfaces: [{ surfaceName: 'home' }, { surfaceName: 'inbox' }] }));
    expect(done.treatmentType.surfaces).toEqual([{ surfaceName: 'home' }, { surfaceName: 'inbox' }]);
  });

  it('a paused treatment and a draft also hold their surfaces', async () => {
    const type = await insertType(['home', 'inbox']);
    const paused = await insertTreatment(type.name, { shouldPublish: true });
    ok(await updateTreatment(paused, { shouldPause: true }));
    const r = await updateType(type.id, { surfaces: [{ surfaceName: 'home' }] });
    expectError(r, 400, 'FAILED_PRECONDITION', 'surfaces');
    expect(r.body.error.details.map((d: { description: string }) => d.description).join()).toContain(`treatment ${paused}`);
    ok(await updateTreatment(paused, { shouldDelete: true }));
    const draft = await insertTreatment(type.name);
    const r2 = await updateType(type.id, { surfaces: [{ surfaceName: 'home' }] });
    expectError(r2, 400, 'FAILED_PRECONDITION', 'surfaces');
    expect(r2.body.error.details[0].description).toContain(`treatment ${draft}`);
  });
});

describe('concurrent treatment writes and type changes stay consistent', () => {
  it('a shortening type change racing with writes of long content never leaves a value above the limit', async () => {
    for (let round = 0; round < 6; round++) {
      const type = await insertType();
      const tid = await insertTreatment(type.name, { content: content('short') });
      const shorter = [{ ...FIELDS[0], maximumLengthAllowed: 10 }, FIELDS[1]];
      const results = await Promise.all([
        updateTreatment(tid, { content: content('x'.repeat(45)) }),
        updateType(type.id, { contentFieldTypes: shorter }),
        mgmt('InsertTreatment', {
          name: 'racer',
          description: 'd',
          treatmentTypeName: type.name,
          lastModifiedBy: 'c',
          startTimestamp: '2026-01-01T00:00:00Z',
          content: content('y'.repeat(30)),
        }),
      ]);
      for (const r of results) expect([200, 400], JSON.stringify(r.body)).toContain(r.status);
      const limit = (await storedType(type.id)).contentFieldTypes[0].maximumLengthAllowed;
      const all = ok(await mgmt('GetAllTreatments', { treatmentFilter: { treatmentTypeName: type.name } }));
      for (const tr of all.treatments) {
        for (const v of tr.versions) {
          for (const e of v.content.contentByLanguage) for (const f of e.contentFields) expect(f.stringValue.length).toBeLessThanOrEqual(limit);
        }
      }
      // Exactly one side wins each race: either the type kept its limit or the long writes were refused.
      if (limit === 10) expect(results[0].status === 400 || results[2].status === 400).toBe(true);
    }
  });
});

describe('UpdateTreatment clearEndTimestamp / clearTargetAction', () => {
  it('clearEndTimestamp removes the end in a new version; endTimestamp with it is 400', async () => {
    const type = await insertType();
    const tid = await insertTreatment(type.name, { shouldPublish: true, endTimestamp: '2099-01-01T00:00:00Z' });
    expectError(await updateTreatment(tid, { clearEndTimestamp: true, endTimestamp: '2098-01-01T00:00:00Z' }), 400, 'INVALID_ARGUMENT', 'clearEndTimestamp');
    const r = ok(await updateTreatment(tid, { clearEndTimestamp: true, shouldPublish: true }));
    const [newest, previous] = r.treatment.versions;
    expect(newest.versionNumber).toBe(2);
    expect(newest.endTimestamp).toBeUndefined();
    expect(newest.status).toBe('LIVE');
    expect(previous.endTimestamp).not.toBe('2099-01-01T00:00:00Z'); // archived at the publish time
    // Repeating it changes nothing: no end to clear, no new version.
    const again = ok(await updateTreatment(tid, { clearEndTimestamp: true }));
    expect(again.treatment.versions).toHaveLength(2);
    // false is ignored.
    expect(ok(await updateTreatment(tid, { clearEndTimestamp: false })).treatment.versions).toHaveLength(2);
  });

  it('clearTargetAction removes the target action in a new draft version; targetAction with it is 400', async () => {
    const type = await insertType();
    // A target action names an event schema of the project
    const eventId = ok(await mgmt('InsertEventSchema', { eventName: 'purchase' })).eventSchema.eventId;
    const tid = await insertTreatment(type.name, { targetAction: { eventId } });
    expectError(await updateTreatment(tid, { clearTargetAction: true, targetAction: { eventId } }), 400, 'INVALID_ARGUMENT', 'clearTargetAction');
    const r = ok(await updateTreatment(tid, { clearTargetAction: true }));
    expect(r.treatment.versions).toHaveLength(2);
    expect(r.treatment.versions[0].targetAction).toBeUndefined();
    expect(r.treatment.versions[0].status).toBe('DRAFT');
    expect(r.treatment.versions[1].targetAction).toEqual({ eventId });
  });

  it('both flags at once with their values name both fields; with shouldPause or shouldDelete: 400', async () => {
    const type = await insertType();
    const tid = await insertTreatment(type.name, { shouldPublish: true });
    const both = await updateTreatment(tid, {
      clearEndTimestamp: true,
      endTimestamp: '2098-01-01T00:00:00Z',
      clearTargetAction: true,
      targetAction: { eventId: '1' },
    });
    expectError(both, 400, 'INVALID_ARGUMENT', 'clearTargetAction');
    expect(both.body.error.details.map((d: { field: string }) => d.field)).toContain('clearEndTimestamp');
    expectError(await updateTreatment(tid, { shouldPause: true, clearEndTimestamp: true }), 400, 'INVALID_ARGUMENT', 'clearEndTimestamp');
    expectError(await updateTreatment(tid, { shouldDelete: true, clearTargetAction: true }), 400, 'INVALID_ARGUMENT', 'clearTargetAction');
    expectError(await updateTreatment(tid, { clearEndTimestamp: 'yes' }), 400, 'INVALID_ARGUMENT');
  });

  it('snake_case spelling is accepted', async () => {
    const type = await insertType();
    const tid = await insertTreatment(type.name, { endTimestamp: '2099-01-01T00:00:00Z' });
    const r = ok(await mgmt('UpdateTreatment', { treatment_id: tid, last_modified_by: 'x', clear_end_timestamp: true }));
    expect(r.treatment.versions[0].endTimestamp).toBeUndefined();
  });
});
