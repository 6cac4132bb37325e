import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Invalidation } from '../../shared/platform/redis/invalidation-bus.js';
import { admin, call, createProjectWithKeys, createTestApp, waitUntil, type ProjectKeys, type TestApp } from '../helpers/context.js';

let t: TestApp;
let p: ProjectKeys;
let other: ProjectKeys;

beforeAll(async () => {
  t = await createTestApp();
  p = await createProjectWithKeys(t);
  other = await createProjectWithKeys(t);
  for (const name of ['home', 'banner', 'inbox']) {
    const r = await call(t, 'InsertSurface', p.management, { projectId: p.projectId, name });
    expect(r.status).toBe(200);
  }
});

afterAll(async () => {
  await t?.close();
});

const mgmt = (operation: string, body: Record<string, unknown>) => call(t, operation, p.management, { projectId: p.projectId, ...body });

function expectError(r: { status: number; body: any }, status: number, code: string, field?: string): void {
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  expect(r.body.error.status).toBe(code);
  expect(r.body.error.code).toBe(status);
  if (field) expect(r.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
}

const fields = [{ fieldName: 'title', maximumLengthAllowed: 50, isPerLanguage: true }, { fieldName: 'link', maximumLengthAllowed: 200 }];
let typeCounter = 0;
async function insertType(extra: Record<string, unknown> = {}) {
  typeCounter += 1;
  const r = await mgmt('InsertTreatmentType', { treatmentTypeName: `type-${typeCounter}`, contentFieldTypes: fields, lastModifiedBy: 'alice', ...extra });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.treatmentType;
}

describe('authentication and permissions (D8, D9)', () => {
  it.each(['InsertSurface', 'InsertDataField', 'GetDataFields', 'InsertTreatmentType', 'GetAllSurfaces'])('%s: 403 with a DELIVERY key and with a LOG_EVENTS key', async (op) => {
    for (const key of [p.delivery, p.logEvents]) {
      const r = await call(t, op, key, { projectId: p.projectId, name: 'x_y', userProperty: { dataType: 'STRING' } });
      expectError(r, 403, 'PERMISSION_DENIED');
    }
  });

  it('401 with a management key of another project, or none', async () => {
    expectError(await call(t, 'InsertSurface', other.management, { projectId: p.projectId, name: 'stolen' }), 401, 'UNAUTHENTICATED');
    expectError(await call(t, 'InsertDataField', other.management, { projectId: p.projectId, name: 'x', userProperty: { dataType: 'STRING' } }), 401, 'UNAUTHENTICATED');
    expectError(await call(t, 'GetAllTreatmentTypes', undefined, { projectId: p.projectId }), 401, 'UNAUTHENTICATED');
    expect((await mgmt('GetAllSurfaces', {})).body.surfaces.map((s: { name: string }) => s.name)).not.toContain('stolen');
  });
});

describe('InsertSurface / GetAllSurfaces (D12)', () => {
  it('creates a surface and returns it', async () => {
    const r = await mgmt('InsertSurface', { name: 'app:checkout/v2.top-bar_1', description: 'checkout banner' });
    expect(r.status).toBe(200);
    expect(r.body.surface).toEqual({ projectId: p.projectId, name: 'app:checkout/v2.top-bar_1', description: 'checkout banner', createTime: expect.stringMatching(/Z$/) });
  });

  it('is idempotent: an existing name returns the stored surface', async () => {
    const first = await mgmt('InsertSurface', { name: 'idem' });
    const again = await mgmt('InsertSurface', { name: 'idem', description: 'changed' });
    expect(again.status).toBe(200);
    expect(again.body.surface).toEqual(first.body.surface);
    expect(first.body.surface.description).toBe('');
  });

  it('names are case-sensitive, 1..128 allowed characters', async () => {
    expect((await mgmt('InsertSurface', { name: 'Idem' })).status).toBe(200);
    expect((await mgmt('InsertSurface', { name: 'a'.repeat(128) })).status).toBe(200);
    for (const name of ['', 'a b', 'a'.repeat(129), 'naïve', 'a?b']) expectError(await mgmt('InsertSurface', { name }), 400, 'INVALID_ARGUMENT', 'name');
    expectError(await mgmt('InsertSurface', { name: 'ok', color: 'red' }), 400, 'INVALID_ARGUMENT', 'color');
  });

  it('GetAllSurfaces lists every surface sorted by name, only of the project', async () => {
    const r = await mgmt('GetAllSurfaces', {});
    const names: string[] = r.body.surfaces.map((s: { name: string }) => s.name);
    expect(names).toEqual([...names].sort());
    expect(names).toEqual(expect.arrayContaining(['Idem', 'banner', 'home', 'idem', 'inbox']));
    expect(names.indexOf('Idem')).toBeLessThan(names.indexOf('idem'));
    const o = await call(t, 'GetAllSurfaces', other.management, { projectId: other.projectId });
    expect(o.body.surfaces).toEqual([]);
  });
});

describe('InsertTreatmentType (D13, D13a)', () => {
  it('creates a type with defaults filled in', async () => {
    const r = await mgmt('InsertTreatmentType', { treatmentTypeName: 'Banner', surfaces: [{ surfaceName: 'home' }, { surfaceName: 'banner' }], contentFieldTypes: fields, lastModifiedBy: 'alice' });
    expect(r.status).toBe(200);
    const tt = r.body.treatmentType;
    expect(tt).toEqual({
      treatmentTypeId: expect.stringMatching(/^[1-9][0-9]*$/),
      projectId: p.projectId,
      treatmentTypeName: 'Banner',
      contentFieldTypes: [
        { fieldName: 'title', maximumLengthAllowed: 50, isPerLanguage: true, dataType: 'STRING' },
        { fieldName: 'link', maximumLengthAllowed: 200, isPerLanguage: false, dataType: 'STRING' },
      ],
      surfaces: [{ surfaceName: 'home' }, { surfaceName: 'banner' }],
      deliveryType: 'IN_APP',
      lastModifiedBy: 'alice',
      lastModifiedTimestamp: expect.stringMatching(/Z$/),
      modificationSource: 'API',
    });
    const stored = await t.ctx.treatmentTypes.getByName(p.projectId, 'Banner');
    expect(stored?.treatmentTypeId).toBe(tt.treatmentTypeId);
  });

  it('accepts snake_case, an explicit deliveryType and dataType, and zero surfaces', async () => {
    const r = await call(t, 'InsertTreatmentType', p.management, {
      project_id: p.projectId,
      treatment_type_name: 'Email',
      content_field_types: [
        { field_name: 'body', maximum_length_allowed: 1_000_000, data_type: 'HTML' },
        { field_name: 'subject', maximum_length_allowed: 1, data_type: 'CONTENT_FIELD_DATA_TYPE_UNSPECIFIED' },
      ],
      delivery_type: 'EMAIL',
      last_modified_by: 'bob',
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.treatmentType.deliveryType).toBe('EMAIL');
    expect(r.body.treatmentType.surfaces).toEqual([]);
    expect(r.body.treatmentType.contentFieldTypes.map((f: { dataType: string }) => f.dataType)).toEqual(['HTML', 'STRING']);
  });

  it('400 for an unknown surface, naming the field', async () => {
    const r = await mgmt('InsertTreatmentType', { treatmentTypeName: 'Nope', surfaces: [{ surfaceName: 'home' }, { surfaceName: 'nowhere' }], contentFieldTypes: fields, lastModifiedBy: 'a' });
    expectError(r, 400, 'INVALID_ARGUMENT', 'surfaces[1].surfaceName');
    expect(await t.ctx.treatmentTypes.getByName(p.projectId, 'Nope')).toBeUndefined();
  });

  it('400 for a surface of another project', async () => {
    await call(t, 'InsertSurface', other.management, { projectId: other.projectId, name: 'theirs' });
    expectError(await mgmt('InsertTreatmentType', { treatmentTypeName: 'X', surfaces: [{ surfaceName: 'theirs' }], contentFieldTypes: fields, lastModifiedBy: 'a' }), 400, 'INVALID_ARGUMENT', 'surfaces[0].surfaceName');
  });

  it('400 for duplicate surfaces, duplicate field names, bad lengths, empty name, missing fields', async () => {
    const base = { treatmentTypeName: 'Bad', contentFieldTypes: fields, lastModifiedBy: 'a' };
    expectError(await mgmt('InsertTreatmentType', { ...base, surfaces: [{ surfaceName: 'home' }, { surfaceName: 'home' }] }), 400, 'INVALID_ARGUMENT', 'surfaces[1].surfaceName');
    expectError(await mgmt('InsertTreatmentType', { ...base, contentFieldTypes: [fields[0], { ...fields[1], fieldName: 'title' }] }), 400, 'INVALID_ARGUMENT', 'contentFieldTypes[1].fieldName');
    for (const maximumLengthAllowed of [0, 1_000_001, 1.5, '5']) {
      expectError(await mgmt('InsertTreatmentType', { ...base, contentFieldTypes: [{ fieldName: 'f', maximumLengthAllowed }] }), 400, 'INVALID_ARGUMENT', 'contentFieldTypes[0].maximumLengthAllowed');
    }
    expectError(await mgmt('InsertTreatmentType', { ...base, treatmentTypeName: '' }), 400, 'INVALID_ARGUMENT', 'treatmentTypeName');
    expectError(await mgmt('InsertTreatmentType', { ...base, deliveryType: 'SMS' }), 400, 'INVALID_ARGUMENT', 'deliveryType');
    expectError(await mgmt('InsertTreatmentType', { treatmentTypeName: 'Bad', contentFieldTypes: fields }), 400, 'INVALID_ARGUMENT', 'lastModifiedBy');
    expectError(await mgmt('InsertTreatmentType', { ...base, contentFieldTypes: [{ fieldName: 'f', maximumLengthAllowed: 5, size: 1 }] }), 400, 'INVALID_ARGUMENT', 'contentFieldTypes[0].size');
    expect(await t.ctx.treatmentTypes.getByName(p.projectId, 'Bad')).toBeUndefined();
  });

  it('409 ALREADY_EXISTS for a name taken in the project; the same name in another project is fine', async () => {
    await insertType({ treatmentTypeName: 'Dup' });
    expectError(await mgmt('InsertTreatmentType', { treatmentTypeName: 'Dup', contentFieldTypes: fields, lastModifiedBy: 'a' }), 409, 'ALREADY_EXISTS');
    const o = await call(t, 'InsertTreatmentType', other.management, { projectId: other.projectId, treatmentTypeName: 'Dup', contentFieldTypes: fields, lastModifiedBy: 'a' });
    expect(o.status).toBe(200);
  });

  it('concurrent inserts of one name: exactly one wins', async () => {
    const rs = await Promise.all([1, 2, 3, 4].map(() => mgmt('InsertTreatmentType', { treatmentTypeName: 'Race', contentFieldTypes: fields, lastModifiedBy: 'a' })));
    expect(rs.map((r) => r.status).sort()).toEqual([200, 409, 409, 409]);
  });
});

describe('UpdateTreatmentType (D5, D6)', () => {
  it('renames, replaces content field types and keeps unset parts unchanged', async () => {
    const tt = await insertType({ surfaces: [{ surfaceName: 'home' }], deliveryType: 'NOTIFICATION' });
    const r = await mgmt('UpdateTreatmentType', { treatmentTypeId: Number(tt.treatmentTypeId), treatmentTypeName: `${tt.treatmentTypeName}-renamed`, contentFieldTypes: [{ fieldName: 'only', maximumLengthAllowed: 9 }], lastModifiedBy: 'carol' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.treatmentType).toMatchObject({
      treatmentTypeId: tt.treatmentTypeId,
      treatmentTypeName: `${tt.treatmentTypeName}-renamed`,
      contentFieldTypes: [{ fieldName: 'only', maximumLengthAllowed: 9, isPerLanguage: false, dataType: 'STRING' }],
      surfaces: [{ surfaceName: 'home' }],
      deliveryType: 'NOTIFICATION',
      lastModifiedBy: 'carol',
    });
    // The old name is free again, the new one points at the type.
    expect((await t.ctx.treatmentTypes.getByName(p.projectId, `${tt.treatmentTypeName}-renamed`))?.treatmentTypeId).toBe(tt.treatmentTypeId);
    expect(await t.ctx.treatmentTypes.getByName(p.projectId, tt.treatmentTypeName)).toBeUndefined();
    expect((await mgmt('InsertTreatmentType', { treatmentTypeName: tt.treatmentTypeName, contentFieldTypes: fields, lastModifiedBy: 'a' })).status).toBe(200);
  });

  it('unset name keeps it; empty name is 400; a name of another type is 409; its own name is fine', async () => {
    const a = await insertType();
    const b = await insertType();
    const id = a.treatmentTypeId;
    const kept = await mgmt('UpdateTreatmentType', { treatmentTypeId: id, contentFieldTypes: fields, lastModifiedBy: 'x' });
    expect(kept.body.treatmentType.treatmentTypeName).toBe(a.treatmentTypeName);
    expectError(await mgmt('UpdateTreatmentType', { treatmentTypeId: id, treatmentTypeName: '', contentFieldTypes: fields, lastModifiedBy: 'x' }), 400, 'INVALID_ARGUMENT', 'treatmentTypeName');
    expectError(await mgmt('UpdateTreatmentType', { treatmentTypeId: id, treatmentTypeName: b.treatmentTypeName, contentFieldTypes: fields, lastModifiedBy: 'x' }), 409, 'ALREADY_EXISTS');
    expect((await mgmt('UpdateTreatmentType', { treatmentTypeId: id, treatmentTypeName: a.treatmentTypeName, contentFieldTypes: fields, lastModifiedBy: 'x' })).status).toBe(200);
    expect((await t.ctx.treatmentTypes.get(p.projectId, b.treatmentTypeId))?.treatmentTypeName).toBe(b.treatmentTypeName);
  });

  it('surfaces: unset or empty keep them, non-empty replaces, clearSurfaces detaches, unknown is 400', async () => {
    const tt = await insertType({ surfaces: [{ surfaceName: 'home' }, { surfaceName: 'banner' }] });
    const upd = (extra: Record<string, unknown>) => mgmt('UpdateTreatmentType', { treatmentTypeId: tt.treatmentTypeId, contentFieldTypes: fields, lastModifiedBy: 'x', ...extra });
    const names = (r: { body: any }) => r.body.treatmentType.surfaces.map((s: { surfaceName: string }) => s.surfaceName);
    expect(names(await upd({}))).toEqual(['home', 'banner']);
    expect(names(await upd({ surfaces: [] }))).toEqual(['home', 'banner']);
    expect(names(await upd({ surfaces: [{ surfaceName: 'inbox' }] }))).toEqual(['inbox']);
    expectError(await upd({ surfaces: [{ surfaceName: 'inbox' }, { surfaceName: 'ghost' }] }), 400, 'INVALID_ARGUMENT', 'surfaces[1].surfaceName');
    expectError(await upd({ clearSurfaces: true, surfaces: [{ surfaceName: 'home' }] }), 400, 'INVALID_ARGUMENT', 'clearSurfaces');
    expect(names(await upd({ clearSurfaces: false }))).toEqual(['inbox']);
    expect(names(await upd({ clearSurfaces: true, surfaces: [] }))).toEqual([]);
    expect(names(await upd({ surfaces: [{ surfaceName: 'home' }] }))).toEqual(['home']);
    expect(names(await upd({ clearSurfaces: true }))).toEqual([]);
  });

  it('deliveryType changes only when given; content field types are validated like on insert', async () => {
    const tt = await insertType();
    const upd = (extra: Record<string, unknown>) => mgmt('UpdateTreatmentType', { treatmentTypeId: tt.treatmentTypeId, contentFieldTypes: fields, lastModifiedBy: 'x', ...extra });
    expect((await upd({ deliveryType: 'WEBHOOK' })).body.treatmentType.deliveryType).toBe('WEBHOOK');
    expect((await upd({})).body.treatmentType.deliveryType).toBe('WEBHOOK');
    expectError(await upd({ contentFieldTypes: [fields[0], fields[0]] }), 400, 'INVALID_ARGUMENT', 'contentFieldTypes[1].fieldName');
    expectError(await mgmt('UpdateTreatmentType', { treatmentTypeId: tt.treatmentTypeId, lastModifiedBy: 'x' }), 400, 'INVALID_ARGUMENT', 'contentFieldTypes');
    expectError(await upd({ treatmentTypeId: 'abc' }), 400, 'INVALID_ARGUMENT', 'treatmentTypeId');
  });

  it('404 for an unknown id, including a type of another project', async () => {
    const theirs = await call(t, 'InsertTreatmentType', other.management, { projectId: other.projectId, treatmentTypeName: 'Theirs', contentFieldTypes: fields, lastModifiedBy: 'a' });
    expect(theirs.status).toBe(200);
    for (const treatmentTypeId of [theirs.body.treatmentType.treatmentTypeId, '999999999999', 0]) {
      expectError(await mgmt('UpdateTreatmentType', { treatmentTypeId, contentFieldTypes: fields, lastModifiedBy: 'x' }), 404, 'NOT_FOUND');
    }
    const still = await t.ctx.treatmentTypes.get(other.projectId, theirs.body.treatmentType.treatmentTypeId);
    expect(still?.treatmentTypeName).toBe('Theirs');
  });

  it('GetAllTreatmentTypes returns the project’s types in ascending id order', async () => {
    const r = await mgmt('GetAllTreatmentTypes', {});
    expect(r.status).toBe(200);
    const ids: string[] = r.body.treatmentTypes.map((x: { treatmentTypeId: string }) => x.treatmentTypeId);
    expect(ids.length).toBeGreaterThan(5);
    expect(ids.map(BigInt)).toEqual([...ids.map(BigInt)].sort((a, b) => (a < b ? -1 : 1)));
    expect(r.body.treatmentTypes.every((x: { projectId: string }) => x.projectId === p.projectId)).toBe(true);
  });
});

describe('InsertDataField (D20)', () => {
  it('registers a field and is idempotent on name; another type is 409', async () => {
    const r = await mgmt('InsertDataField', { name: 'loyalty_tier', userProperty: { dataType: 'INTEGER' } });
    expect(r.status).toBe(200);
    expect(r.body.dataField).toEqual({ dataFieldId: expect.stringMatching(/^[1-9][0-9]*$/), projectId: p.projectId, name: 'loyalty_tier', userProperty: { dataType: 'INTEGER' } });
    const again = await call(t, 'InsertDataField', p.management, { project_id: p.projectId, name: 'loyalty_tier', user_property: { data_type: 'INTEGER' } });
    expect(again.status).toBe(200);
    expect(again.body.dataField.dataFieldId).toBe(r.body.dataField.dataFieldId);
    expectError(await mgmt('InsertDataField', { name: 'loyalty_tier', userProperty: { dataType: 'STRING' } }), 409, 'ALREADY_EXISTS');
    expect((await t.ctx.dataFields.getByName(p.projectId, 'loyalty_tier'))?.dataFieldType).toBe('INTEGER');
  });

  it('400 INVALID_ARGUMENT for a dataType other than BOOLEAN, STRING, INTEGER, and for bad names', async () => {
    for (const dataType of ['DOUBLE', 'TIMESTAMP_SECONDS', 'STRING_LIST', 'bool', '']) {
      expectError(await mgmt('InsertDataField', { name: 'f', userProperty: { dataType } }), 400, 'INVALID_ARGUMENT', 'userProperty.dataType');
    }
    for (const name of ['Bad', '1abc', 'ends_', 'has-dash', '', 'a'.repeat(257)]) {
      expectError(await mgmt('InsertDataField', { name, userProperty: { dataType: 'STRING' } }), 400, 'INVALID_ARGUMENT', 'name');
    }
    expect((await mgmt('InsertDataField', { name: 'a'.repeat(256), userProperty: { dataType: 'BOOLEAN' } })).status).toBe(200);
    expectError(await mgmt('InsertDataField', { name: 'f' }), 400, 'INVALID_ARGUMENT', 'userProperty');
    expect(await t.ctx.dataFields.getByName(p.projectId, 'f')).toBeUndefined();
  });

  it('concurrent inserts of one name give one id', async () => {
    const rs = await Promise.all([1, 2, 3, 4].map(() => mgmt('InsertDataField', { name: 'raced', userProperty: { dataType: 'BOOLEAN' } })));
    expect(new Set(rs.map((r) => r.body.dataField.dataFieldId)).size).toBe(1);
  });
});

describe('GetDataFields (D20–D22)', () => {
  const purchases = {
    eventDataFieldParams: { eventSchemaName: 'purchase', propertyValueByPropertyName: { qty: { longValue: 5 }, sku: { stringValue: 'a1' } }, dailyCountAggregation: { windowName: 'LAST_14D' } },
  };
  const streamLength = () => t.ctx.redis.xlen(t.ctx.keys.dataFieldCreated());

  it('resolves params to stable ids, one per entry in order, with the result type of D21', async () => {
    const before = await streamLength();
    const r = await mgmt('GetDataFields', {
      dataFieldParams: [
        purchases,
        { treatmentDataFieldParams: { treatmentInteractionType: 'CLICKED', surfaceName: 'home', latestTimestampAggregation: {} } },
        { treatmentDataFieldParams: { treatmentInteractionType: 'VIEWED', treatmentId: 42, isDistinctInteraction: true, daysSinceFirstTimestampAggregation: {} } },
      ],
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const [a, b, c] = r.body.dataFields;
    expect(a).toEqual({ dataFieldId: expect.stringMatching(/^[1-9][0-9]*$/), dataFieldType: 'INTEGER', dataFieldParams: { eventDataFieldParams: { ...purchases.eventDataFieldParams, propertyValueByPropertyName: { qty: { longValue: '5' }, sku: { stringValue: 'a1' } } } } });
    expect(b.dataFieldType).toBe('TIMESTAMP_SECONDS');
    expect(c.dataFieldType).toBe('INTEGER');
    expect(c.dataFieldParams.treatmentDataFieldParams.treatmentId).toBe('42');
    expect(new Set([a.dataFieldId, b.dataFieldId, c.dataFieldId]).size).toBe(3);
    // Each new aggregation is announced once to the backfill worker.
    expect((await streamLength()) - before).toBe(3);
    const stored = await t.ctx.dataFields.get(p.projectId, a.dataFieldId);
    expect(stored).toMatchObject({ dataFieldType: 'INTEGER', params: { eventDataFieldParams: { eventSchemaName: 'purchase' } } });
  });

  it('is idempotent across key order, snake_case and int64 forms, and announces nothing twice', async () => {
    const first = await mgmt('GetDataFields', { dataFieldParams: [purchases] });
    const before = await streamLength();
    const snake = await call(t, 'GetDataFields', p.management, {
      project_id: p.projectId,
      data_field_params: [
        {
          event_data_field_params: {
            daily_count_aggregation: { window_name: 'LAST_14D' },
            property_value_by_property_name: { sku: { string_value: 'a1' }, qty: { long_value: '5' } },
            event_schema_name: 'purchase',
          },
        },
        purchases,
      ],
    });
    expect(snake.status, JSON.stringify(snake.body)).toBe(200);
    expect(snake.body.dataFields.map((f: { dataFieldId: string }) => f.dataFieldId)).toEqual([first.body.dataFields[0].dataFieldId, first.body.dataFields[0].dataFieldId]);
    expect(snake.body.dataFields[0].dataFieldParams.eventDataFieldParams.propertyValueByPropertyName.qty).toEqual({ longValue: '5' });
    expect(await streamLength()).toBe(before);
  });

  it('different params get different ids; a new one created inside a batch is reused by a later entry', async () => {
    const w = (windowName: string) => ({ eventDataFieldParams: { eventSchemaName: 'open', dailyCountAggregation: { windowName } } });
    const before = await streamLength();
    const r = await mgmt('GetDataFields', { dataFieldParams: [w('LAST_1D'), w('LAST_2D'), w('LAST_1D')] });
    const ids = r.body.dataFields.map((f: { dataFieldId: string }) => f.dataFieldId);
    expect(ids[0]).not.toBe(ids[1]);
    expect(ids[2]).toBe(ids[0]);
    const announced = await t.ctx.redis.xrange(t.ctx.keys.dataFieldCreated(), '-', '+');
    expect(announced.length - before).toBe(2);
    expect(announced.slice(-2).map(([, f]) => f)).toEqual([
      ['projectId', p.projectId, 'dataFieldId', ids[0]],
      ['projectId', p.projectId, 'dataFieldId', ids[1]],
    ]);
  });

  it('the same params in another project get their own id', async () => {
    const mine = await mgmt('GetDataFields', { dataFieldParams: [purchases] });
    const theirs = await call(t, 'GetDataFields', other.management, { projectId: other.projectId, dataFieldParams: [purchases] });
    expect(theirs.status).toBe(200);
    expect(theirs.body.dataFields[0].dataFieldId).not.toBe(mine.body.dataFields[0].dataFieldId);
  });

  it('a user attribute resolves to the InsertDataField field; an unregistered one is registered as STRING', async () => {
    const reg = await mgmt('InsertDataField', { name: 'age', userProperty: { dataType: 'INTEGER' } });
    const before = await streamLength();
    const r = await mgmt('GetDataFields', { dataFieldParams: [{ userAttributeDataFieldParams: { propertyName: 'age' } }, { userAttributeDataFieldParams: { propertyName: 'country' } }] });
    expect(r.status).toBe(200);
    expect(r.body.dataFields[0]).toEqual({ dataFieldId: reg.body.dataField.dataFieldId, dataFieldType: 'INTEGER', dataFieldParams: { userAttributeDataFieldParams: { propertyName: 'age' } } });
    expect(r.body.dataFields[1].dataFieldType).toBe('STRING');
    expect(await streamLength()).toBe(before);
    // Now registered: InsertDataField behaves as if it had been called.
    const same = await mgmt('InsertDataField', { name: 'country', userProperty: { dataType: 'STRING' } });
    expect(same.body.dataField.dataFieldId).toBe(r.body.dataFields[1].dataFieldId);
    expectError(await mgmt('InsertDataField', { name: 'country', userProperty: { dataType: 'BOOLEAN' } }), 409, 'ALREADY_EXISTS');
  });

  it('400 for a bad windowName, two aggregations, no aggregation, two members, unknown fields, bad list sizes', async () => {
    const bad = async (entry: unknown, field: string) => expectError(await mgmt('GetDataFields', { dataFieldParams: [purchases, entry] }), 400, 'INVALID_ARGUMENT', field);
    for (const windowName of ['LAST_0D', 'LAST_366D', 'LAST_7', 'WEEK']) {
      await bad({ eventDataFieldParams: { eventSchemaName: 'e', dailyCountAggregation: { windowName } } }, 'dataFieldParams[1].eventDataFieldParams.dailyCountAggregation.windowName');
    }
    await bad({ eventDataFieldParams: { eventSchemaName: 'e', firstTimestampAggregation: {}, latestTimestampAggregation: {} } }, 'dataFieldParams[1].eventDataFieldParams');
    await bad({ treatmentDataFieldParams: { treatmentInteractionType: 'VIEWED' } }, 'dataFieldParams[1].treatmentDataFieldParams');
    await bad({ treatmentDataFieldParams: { treatmentInteractionType: 'VIEWED', treatmentId: '1', surfaceName: 'home', firstTimestampAggregation: {} } }, 'dataFieldParams[1].treatmentDataFieldParams');
    await bad({ userAttributeDataFieldParams: { propertyName: 'a' }, eventDataFieldParams: { eventSchemaName: 'e', firstTimestampAggregation: {} } }, 'dataFieldParams[1]');
    await bad({}, 'dataFieldParams[1]');
    await bad({ eventDataFieldParams: { eventSchemaName: 'e', firstTimestampAggregation: {}, color: 'red' } }, 'dataFieldParams[1].eventDataFieldParams.color');
    await bad({ eventDataFieldParams: { eventSchemaName: 'e', latestTimestampAggregation: { windowName: 'LAST_1D' } } }, 'dataFieldParams[1].eventDataFieldParams.latestTimestampAggregation.windowName');
    await bad({ eventDataFieldParams: { eventSchemaName: 'e', propertyValueByPropertyName: { p: { stringValue: 'x', booleanValue: true } }, firstTimestampAggregation: {} } }, 'dataFieldParams[1].eventDataFieldParams.propertyValueByPropertyName.p');
    await bad({ userAttributeDataFieldParams: { propertyName: 'Country' } }, 'dataFieldParams[1].userAttributeDataFieldParams.propertyName');
    expectError(await mgmt('GetDataFields', { dataFieldParams: [] }), 400, 'INVALID_ARGUMENT', 'dataFieldParams');
    expectError(await mgmt('GetDataFields', { dataFieldParams: Array.from({ length: 101 }, () => purchases) }), 400, 'INVALID_ARGUMENT', 'dataFieldParams');
    expect((await mgmt('GetDataFields', { dataFieldParams: Array.from({ length: 100 }, () => purchases) })).status).toBe(200);
  });

  it('a rejected batch creates nothing', async () => {
    const before = (await t.ctx.dataFields.list(p.projectId)).length;
    const r = await mgmt('GetDataFields', { dataFieldParams: [{ eventDataFieldParams: { eventSchemaName: 'fresh', firstTimestampAggregation: {} } }, { eventDataFieldParams: { eventSchemaName: 'e' } }] });
    expect(r.status).toBe(400);
    expect((await t.ctx.dataFields.list(p.projectId)).length).toBe(before);
  });

  it('ids are unique across named and params-resolved fields', async () => {
    const all = await t.ctx.dataFields.list(p.projectId);
    const ids = all.map((f) => f.dataFieldId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.map(BigInt)).toEqual([...ids.map(BigInt)].sort((a, b) => (a < b ? -1 : 1)));
  });
});

describe('change log, catalogue version and invalidation', () => {
  it('every change is recorded with actor, before and after, bumps the version and publishes', async () => {
    const seen: Invalidation[] = [];
    const off = t.ctx.bus.on((m) => seen.push(m));
    const version = Number((await t.ctx.redis.get(t.ctx.keys.catalogVersion(p.projectId))) ?? 0);
    const tt = await insertType({ lastModifiedBy: 'dora' });
    const upd = await mgmt('UpdateTreatmentType', { treatmentTypeId: tt.treatmentTypeId, treatmentTypeName: 'audited', contentFieldTypes: fields, lastModifiedBy: 'erin' });
    expect(upd.status).toBe(200);
    await mgmt('InsertSurface', { name: 'audited-surface' });
    await mgmt('InsertSurface', { name: 'audited-surface' });
    await mgmt('InsertDataField', { name: 'audited_field', userProperty: { dataType: 'BOOLEAN' } });
    await mgmt('GetDataFields', { dataFieldParams: [{ eventDataFieldParams: { eventSchemaName: 'audited', daysSinceLastTimestampAggregation: {} } }] });

    // Idempotent repeats change nothing: 14 changes (the surface brings its 9 data fields, D47), not 24.
    expect(Number(await t.ctx.redis.get(t.ctx.keys.catalogVersion(p.projectId)))).toBe(version + 14);
    await waitUntil(() => seen.filter((m) => m.kind === 'catalog' && m.projectId === p.projectId).length >= 14, 2000);
    off();

    const r = await admin(t, 'ListChanges', { projectId: p.projectId, pageSize: 15 });
    expect(r.status).toBe(200);
    // GetDataFields' eventSchemaName also registers the event name (D35): its own entry
    const schemas = r.body.changes.filter((c: { operation: string }) => c.operation === 'InsertEventSchema');
    expect(schemas).toHaveLength(1);
    expect(schemas[0]).toMatchObject({ resourceKind: 'eventSchema', after: { eventName: 'audited' } });
    const [field, named, ...rest] = r.body.changes.filter((c: { operation: string }) => c.operation !== 'InsertEventSchema');
    const [update, insert] = rest.slice(-2);
    const surface = rest[rest.length - 3];
    for (const provisioned of rest.slice(0, 9)) expect(provisioned).toMatchObject({ operation: 'InsertSurface', actor: 'api', resourceKind: 'dataField', before: null, after: { params: { treatmentDataFieldParams: { surfaceName: 'audited-surface' } } } });
    expect(insert).toMatchObject({ operation: 'InsertTreatmentType', actor: 'dora', resourceKind: 'treatmentType', resourceId: tt.treatmentTypeId, before: null, after: { treatmentTypeName: tt.treatmentTypeName } });
    expect(update).toMatchObject({ operation: 'UpdateTreatmentType', actor: 'erin', before: { treatmentTypeName: tt.treatmentTypeName, lastModifiedBy: 'dora' }, after: { treatmentTypeName: 'audited', lastModifiedBy: 'erin' } });
    expect(surface).toMatchObject({ operation: 'InsertSurface', actor: 'api', resourceKind: 'surface', resourceId: 'audited-surface', before: null, after: { name: 'audited-surface' } });
    expect(named).toMatchObject({ operation: 'InsertDataField', resourceKind: 'dataField', after: { name: 'audited_field', dataFieldType: 'BOOLEAN' } });
    expect(field).toMatchObject({ operation: 'GetDataFields', resourceKind: 'dataField', after: { dataFieldType: 'INTEGER', params: { eventDataFieldParams: { eventSchemaName: 'audited' } } } });
  });

  it('rejected changes leave no trace', async () => {
    const before = await t.ctx.redis.xlen(t.ctx.keys.changes(p.projectId));
    await mgmt('InsertTreatmentType', { treatmentTypeName: 'audited', contentFieldTypes: fields, lastModifiedBy: 'a' });
    await mgmt('InsertDataField', { name: 'audited_field', userProperty: { dataType: 'STRING' } });
    await mgmt('UpdateTreatmentType', { treatmentTypeId: '123456789012', contentFieldTypes: fields, lastModifiedBy: 'a' });
    expect(await t.ctx.redis.xlen(t.ctx.keys.changes(p.projectId))).toBe(before);
  });
});
