import { describe, expect, it } from 'vitest';
import type { Invalidation } from '../../shared/platform/redis/invalidation-bus.js';
import { call, admin, waitUntil } from '../helpers/context.js';
import { expectError, fields, useCatalogApp } from '../helpers/catalog-app.js';

/** Catalogue management: data fields, and the change log, version and invalidation of every change. */
const cat = useCatalogApp();

describe('InsertDataField', () => {
  it('registers a field and is idempotent on name; another type is 409', async () => {
    const r = await cat.mgmt('InsertDataField', { name: 'loyalty_tier', userProperty: { dataType: 'INTEGER' } });
    expect(r.status).toBe(200);
    expect(r.body.dataField).toEqual({
      dataFieldId: expect.stringMatching(/^[1-9][0-9]*$/),
      projectId: cat.p.projectId,
      name: 'loyalty_tier',
      userProperty: { dataType: 'INTEGER' },
    });
    const again = await call(cat.t, 'InsertDataField', cat.p.management, {
      project_id: cat.p.projectId,
      name: 'loyalty_tier',
      user_property: { data_type: 'INTEGER' },
    });
    expect(again.status).toBe(200);
    expect(again.body.dataField.dataFieldId).toBe(r.body.dataField.dataFieldId);
    expectError(await cat.mgmt('InsertDataField', { name: 'loyalty_tier', userProperty: { dataType: 'STRING' } }), 409, 'ALREADY_EXISTS');
    expect((await cat.t.ctx.aggregation.dataFields.getByName(cat.p.projectId, 'loyalty_tier'))?.dataFieldType).toBe('INTEGER');
  });

  it('400 INVALID_ARGUMENT for a dataType other than BOOLEAN, STRING, INTEGER, and for bad names', async () => {
    for (const dataType of ['DOUBLE', 'TIMESTAMP_SECONDS', 'STRING_LIST', 'bool', '']) {
      expectError(await cat.mgmt('InsertDataField', { name: 'f', userProperty: { dataType } }), 400, 'INVALID_ARGUMENT', 'userProperty.dataType');
    }
    for (const name of ['Bad', '1abc', 'ends_', 'has-dash', '', 'a'.repeat(257)]) {
      expectError(await cat.mgmt('InsertDataField', { name, userProperty: { dataType: 'STRING' } }), 400, 'INVALID_ARGUMENT', 'name');
    }
    expect((await cat.mgmt('InsertDataField', { name: 'a'.repeat(256), userProperty: { dataType: 'BOOLEAN' } })).status).toBe(200);
    expectError(await cat.mgmt('InsertDataField', { name: 'f' }), 400, 'INVALID_ARGUMENT', 'userProperty');
    expect(await cat.t.ctx.aggregation.dataFields.getByName(cat.p.projectId, 'f')).toBeUndefined();
  });

  it('concurrent inserts of one name give one id', async () => {
    const rs = await Promise.all([1, 2, 3, 4].map(() => cat.mgmt('InsertDataField', { name: 'raced', userProperty: { dataType: 'BOOLEAN' } })));
    expect(new Set(rs.map((r) => r.body.dataField.dataFieldId)).size).toBe(1);
  });
});

describe('GetDataFields', () => {
  const purchases = {
    eventDataFieldParams: {
      eventSchemaName: 'purchase',
      propertyValueByPropertyName: { qty: { longValue: 5 }, sku: { stringValue: 'a1' } },
      dailyCountAggregation: { windowName: 'LAST_14D' },
    },
  };
  const streamLength = () => cat.t.ctx.redis.xlen(cat.t.ctx.keys.dataFieldCreated());

  it('resolves params to stable ids, one per entry in order, with the result type of each aggregation', async () => {
    const before = await streamLength();
    const r = await cat.mgmt('GetDataFields', {
      dataFieldParams: [
        purchases,
        { treatmentDataFieldParams: { treatmentInteractionType: 'CLICKED', surfaceName: 'home', latestTimestampAggregation: {} } },
        {
          treatmentDataFieldParams: {
            treatmentInteractionType: 'VIEWED',
            treatmentId: 42,
            isDistinctInteraction: true,
            daysSinceFirstTimestampAggregation: {},
          },
        },
      ],
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const [a, b, c] = r.body.dataFields;
    expect(a).toEqual({
      dataFieldId: expect.stringMatching(/^[1-9][0-9]*$/),
      dataFieldType: 'INTEGER',
      dataFieldParams: {
        eventDataFieldParams: { ...purchases.eventDataFieldParams, propertyValueByPropertyName: { qty: { longValue: '5' }, sku: { stringValue: 'a1' } } },
      },
    });
    expect(b.dataFieldType).toBe('TIMESTAMP_SECONDS');
    expect(c.dataFieldType).toBe('INTEGER');
    expect(c.dataFieldParams.treatmentDataFieldParams.treatmentId).toBe('42');
    expect(new Set([a.dataFieldId, b.dataFieldId, c.dataFieldId]).size).toBe(3);
    // Each new aggregation is announced once to the backfill worker.
    expect((await streamLength()) - before).toBe(3);
    const stored = await cat.t.ctx.aggregation.dataFields.get(cat.p.projectId, a.dataFieldId);
    expect(stored).toMatchObject({ dataFieldType: 'INTEGER', params: { eventDataFieldParams: { eventSchemaName: 'purchase' } } });
  });

  it('is idempotent across key order, snake_case and int64 forms, and announces nothing twice', async () => {
    const first = await cat.mgmt('GetDataFields', { dataFieldParams: [purchases] });
    const before = await streamLength();
    const snake = await call(cat.t, 'GetDataFields', cat.p.management, {
      project_id: cat.p.projectId,
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
    expect(snake.body.dataFields.map((f: { dataFieldId: string }) => f.dataFieldId)).toEqual([
      first.body.dataFields[0].dataFieldId,
      first.body.dataFields[0].dataFieldId,
    ]);
    expect(snake.body.dataFields[0].dataFieldParams.eventDataFieldParams.propertyValueByPropertyName.qty).toEqual({ longValue: '5' });
    expect(await streamLength()).toBe(before);
  });

  it('different params get different ids; a new one created inside a batch is reused by a later entry', async () => {
    const w = (windowName: string) => ({ eventDataFieldParams: { eventSchemaName: 'open', dailyCountAggregation: { windowName } } });
    const before = await streamLength();
    const r = await cat.mgmt('GetDataFields', { dataFieldParams: [w('LAST_1D'), w('LAST_2D'), w('LAST_1D')] });
    const ids = r.body.dataFields.map((f: { dataFieldId: string }) => f.dataFieldId);
    expect(ids[0]).not.toBe(ids[1]);
    expect(ids[2]).toBe(ids[0]);
    const announced = await cat.t.ctx.redis.xrange(cat.t.ctx.keys.dataFieldCreated(), '-', '+');
    expect(announced.length - before).toBe(2);
    expect(announced.slice(-2).map(([, f]) => f)).toEqual([
      ['projectId', cat.p.projectId, 'dataFieldId', ids[0]],
      ['projectId', cat.p.projectId, 'dataFieldId', ids[1]],
    ]);
  });

  it('the same params in another project get their own id', async () => {
    const mine = await cat.mgmt('GetDataFields', { dataFieldParams: [purchases] });
    const theirs = await call(cat.t, 'GetDataFields', cat.other.management, { projectId: cat.other.projectId, dataFieldParams: [purchases] });
    expect(theirs.status).toBe(200);
    expect(theirs.body.dataFields[0].dataFieldId).not.toBe(mine.body.dataFields[0].dataFieldId);
  });

  it('a user attribute resolves to the InsertDataField field; an unregistered one is registered as STRING', async () => {
    const reg = await cat.mgmt('InsertDataField', { name: 'age', userProperty: { dataType: 'INTEGER' } });
    const before = await streamLength();
    const r = await cat.mgmt('GetDataFields', {
      dataFieldParams: [{ userAttributeDataFieldParams: { propertyName: 'age' } }, { userAttributeDataFieldParams: { propertyName: 'country' } }],
    });
    expect(r.status).toBe(200);
    expect(r.body.dataFields[0]).toEqual({
      dataFieldId: reg.body.dataField.dataFieldId,
      dataFieldType: 'INTEGER',
      dataFieldParams: { userAttributeDataFieldParams: { propertyName: 'age' } },
    });
    expect(r.body.dataFields[1].dataFieldType).toBe('STRING');
    expect(await streamLength()).toBe(before);
    // Now registered: InsertDataField behaves as if it had been called.
    const same = await cat.mgmt('InsertDataField', { name: 'country', userProperty: { dataType: 'STRING' } });
    expect(same.body.dataField.dataFieldId).toBe(r.body.dataFields[1].dataFieldId);
    expectError(await cat.mgmt('InsertDataField', { name: 'country', userProperty: { dataType: 'BOOLEAN' } }), 409, 'ALREADY_EXISTS');
  });

  it('400 for a bad windowName, two aggregations, no aggregation, two members, unknown fields, bad list sizes', async () => {
    const bad = async (entry: unknown, field: string) =>
      expectError(await cat.mgmt('GetDataFields', { dataFieldParams: [purchases, entry] }), 400, 'INVALID_ARGUMENT', field);
    for (const windowName of ['LAST_0D', 'LAST_366D', 'LAST_7', 'WEEK']) {
      await bad(
        { eventDataFieldParams: { eventSchemaName: 'e', dailyCountAggregation: { windowName } } },
        'dataFieldParams[1].eventDataFieldParams.dailyCountAggregation.windowName',
      );
    }
    await bad(
      { eventDataFieldParams: { eventSchemaName: 'e', firstTimestampAggregation: {}, latestTimestampAggregation: {} } },
      'dataFieldParams[1].eventDataFieldParams',
    );
    await bad({ treatmentDataFieldParams: { treatmentInteractionType: 'VIEWED' } }, 'dataFieldParams[1].treatmentDataFieldParams');
    await bad(
      { treatmentDataFieldParams: { treatmentInteractionType: 'VIEWED', treatmentId: '1', surfaceName: 'home', firstTimestampAggregation: {} } },
      'dataFieldParams[1].treatmentDataFieldParams',
    );
    await bad(
      { userAttributeDataFieldParams: { propertyName: 'a' }, eventDataFieldParams: { eventSchemaName: 'e', firstTimestampAggregation: {} } },
      'dataFieldParams[1]',
    );
    await bad({}, 'dataFieldParams[1]');
    await bad({ eventDataFieldParams: { eventSchemaName: 'e', firstTimestampAggregation: {}, color: 'red' } }, 'dataFieldParams[1].eventDataFieldParams.color');
    await bad(
      { eventDataFieldParams: { eventSchemaName: 'e', latestTimestampAggregation: { windowName: 'LAST_1D' } } },
      'dataFieldParams[1].eventDataFieldParams.latestTimestampAggregation.windowName',
    );
    await bad(
      {
        eventDataFieldParams: {
          eventSchemaName: 'e',
          propertyValueByPropertyName: { p: { stringValue: 'x', booleanValue: true } },
          firstTimestampAggregation: {},
        },
      },
      'dataFieldParams[1].eventDataFieldParams.propertyValueByPropertyName.p',
    );
    await bad({ userAttributeDataFieldParams: { propertyName: 'Country' } }, 'dataFieldParams[1].userAttributeDataFieldParams.propertyName');
    expectError(await cat.mgmt('GetDataFields', { dataFieldParams: [] }), 400, 'INVALID_ARGUMENT', 'dataFieldParams');
    expectError(await cat.mgmt('GetDataFields', { dataFieldParams: Array.from({ length: 101 }, () => purchases) }), 400, 'INVALID_ARGUMENT', 'dataFieldParams');
    expect((await cat.mgmt('GetDataFields', { dataFieldParams: Array.from({ length: 100 }, () => purchases) })).status).toBe(200);
  });

  it('a rejected batch creates nothing', async () => {
    const before = (await cat.t.ctx.aggregation.dataFields.list(cat.p.projectId)).length;
    const r = await cat.mgmt('GetDataFields', {
      dataFieldParams: [
        { eventDataFieldParams: { eventSchemaName: 'fresh', firstTimestampAggregation: {} } },
        { eventDataFieldParams: { eventSchemaName: 'e' } },
      ],
    });
    expect(r.status).toBe(400);
    expect((await cat.t.ctx.aggregation.dataFields.list(cat.p.projectId)).length).toBe(before);
  });

  it('ids are unique across named and params-resolved fields', async () => {
    const all = await cat.t.ctx.aggregation.dataFields.list(cat.p.projectId);
    const ids = all.map((f) => f.dataFieldId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.map(BigInt)).toEqual([...ids.map(BigInt)].sort((a, b) => (a < b ? -1 : 1)));
  });
});

describe('change log, catalogue version and invalidation', () => {
  it('every change is recorded with actor, before and after, bumps the version and publishes', async () => {
    const seen: Invalidation[] = [];
    const off = cat.t.ctx.bus.on((m) => seen.push(m));
    const version = Number((await cat.t.ctx.redis.get(cat.t.ctx.keys.catalogVersion(cat.p.projectId))) ?? 0);
    const tt = await cat.insertType({ lastModifiedBy: 'dora' });
    const upd = await cat.mgmt('UpdateTreatmentType', {
      treatmentTypeId: tt.treatmentTypeId,
      treatmentTypeName: 'audited',
      contentFieldTypes: fields,
      lastModifiedBy: 'erin',
    });
    expect(upd.status).toBe(200);
    await cat.mgmt('InsertSurface', { name: 'audited-surface' });
    await cat.mgmt('InsertSurface', { name: 'audited-surface' });
    await cat.mgmt('InsertDataField', { name: 'audited_field', userProperty: { dataType: 'BOOLEAN' } });
    await cat.mgmt('GetDataFields', { dataFieldParams: [{ eventDataFieldParams: { eventSchemaName: 'audited', daysSinceLastTimestampAggregation: {} } }] });

    // Idempotent repeats change nothing: 14 changes (a new surface brings its 9 data fields), not 24.
    expect(Number(await cat.t.ctx.redis.get(cat.t.ctx.keys.catalogVersion(cat.p.projectId)))).toBe(version + 14);
    await waitUntil(() => seen.filter((m) => m.kind === 'catalog' && m.projectId === cat.p.projectId).length >= 14, 15_000);
    off();

    const r = await admin(cat.t, 'ListChanges', { projectId: cat.p.projectId, pageSize: 15 });
    expect(r.status).toBe(200);
    // GetDataFields' eventSchemaName also registers the event name as an event schema: its own entry
    const schemas = r.body.changes.filter((c: { operation: string }) => c.operation === 'InsertEventSchema');
    expect(schemas).toHaveLength(1);
    expect(schemas[0]).toMatchObject({ resourceKind: 'eventSchema', after: { eventName: 'audited' } });
    const [field, named, ...rest] = r.body.changes.filter((c: { operation: string }) => c.operation !== 'InsertEventSchema');
    const [update, insert] = rest.slice(-2);
    const surface = rest[rest.length - 3];
    for (const provisioned of rest.slice(0, 9))
      expect(provisioned).toMatchObject({
        operation: 'InsertSurface',
        actor: 'api',
        resourceKind: 'dataField',
        before: null,
        after: { params: { treatmentDataFieldParams: { surfaceName: 'audited-surface' } } },
      });
    expect(insert).toMatchObject({
      operation: 'InsertTreatmentType',
      actor: 'dora',
      resourceKind: 'treatmentType',
      resourceId: tt.treatmentTypeId,
      before: null,
      after: { treatmentTypeName: tt.treatmentTypeName },
    });
    expect(update).toMatchObject({
      operation: 'UpdateTreatmentType',
      actor: 'erin',
      before: { treatmentTypeName: tt.treatmentTypeName, lastModifiedBy: 'dora' },
      after: { treatmentTypeName: 'audited', lastModifiedBy: 'erin' },
    });
    expect(surface).toMatchObject({
      operation: 'InsertSurface',
      actor: 'api',
      resourceKind: 'surface',
      resourceId: 'audited-surface',
      before: null,
      after: { name: 'audited-surface' },
    });
    expect(named).toMatchObject({ operation: 'InsertDataField', resourceKind: 'dataField', after: { name: 'audited_field', dataFieldType: 'BOOLEAN' } });
    expect(field).toMatchObject({
      operation: 'GetDataFields',
      resourceKind: 'dataField',
      after: { dataFieldType: 'INTEGER', params: { eventDataFieldParams: { eventSchemaName: 'audited' } } },
    });
  });

  it('rejected changes leave no trace', async () => {
    const before = await cat.t.ctx.redis.xlen(cat.t.ctx.keys.changes(cat.p.projectId));
    await cat.mgmt('InsertTreatmentType', { treatmentTypeName: 'audited', contentFieldTypes: fields, lastModifiedBy: 'a' });
    await cat.mgmt('InsertDataField', { name: 'audited_field', userProperty: { dataType: 'STRING' } });
    await cat.mgmt('UpdateTreatmentType', { treatmentTypeId: '123456789012', contentFieldTypes: fields, lastModifiedBy: 'a' });
    expect(await cat.t.ctx.redis.xlen(cat.t.ctx.keys.changes(cat.p.projectId))).toBe(before);
  });
});
