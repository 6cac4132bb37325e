import { describe, expect, it } from 'vitest';
import { call } from '../helpers/context.js';
import { expectError, fields, useCatalogApp } from '../helpers/catalog-app.js';

/** Catalogue management: permissions, surfaces and treatment types. */
const cat = useCatalogApp();

describe('authentication and permissions', () => {
  it.each(['InsertSurface', 'InsertDataField', 'GetDataFields', 'InsertTreatmentType', 'GetAllSurfaces'])(
    '%s: 403 with a DELIVERY key and with a LOG_EVENTS key',
    async (op) => {
      for (const key of [cat.p.delivery, cat.p.logEvents]) {
        const r = await call(cat.t, op, key, { projectId: cat.p.projectId, name: 'x_y', userProperty: { dataType: 'STRING' } });
        expectError(r, 403, 'PERMISSION_DENIED');
      }
    },
  );

  it('401 with a management key of another project, or none', async () => {
    expectError(await call(cat.t, 'InsertSurface', cat.other.management, { projectId: cat.p.projectId, name: 'stolen' }), 401, 'UNAUTHENTICATED');
    expectError(
      await call(cat.t, 'InsertDataField', cat.other.management, { projectId: cat.p.projectId, name: 'x', userProperty: { dataType: 'STRING' } }),
      401,
      'UNAUTHENTICATED',
    );
    expectError(await call(cat.t, 'GetAllTreatmentTypes', undefined, { projectId: cat.p.projectId }), 401, 'UNAUTHENTICATED');
    expect((await cat.mgmt('GetAllSurfaces', {})).body.surfaces.map((s: { name: string }) => s.name)).not.toContain('stolen');
  });
});

describe('InsertSurface / GetAllSurfaces', () => {
  it('creates a surface and returns it', async () => {
    const r = await cat.mgmt('InsertSurface', { name: 'app:checkout/v2.top-bar_1', description: 'checkout banner' });
    expect(r.status).toBe(200);
    expect(r.body.surface).toEqual({
      projectId: cat.p.projectId,
      name: 'app:checkout/v2.top-bar_1',
      description: 'checkout banner',
      createTime: expect.stringMatching(/Z$/),
    });
  });

  it('is idempotent: an existing name returns the stored surface', async () => {
    const first = await cat.mgmt('InsertSurface', { name: 'idem' });
    const again = await cat.mgmt('InsertSurface', { name: 'idem', description: 'changed' });
    expect(again.status).toBe(200);
    expect(again.body.surface).toEqual(first.body.surface);
    expect(first.body.surface.description).toBe('');
  });

  it('names are case-sensitive, 1..128 allowed characters', async () => {
    expect((await cat.mgmt('InsertSurface', { name: 'Idem' })).status).toBe(200);
    expect((await cat.mgmt('InsertSurface', { name: 'a'.repeat(128) })).status).toBe(200);
    for (const name of ['', 'a b', 'a'.repeat(129), 'naïve', 'a?b']) expectError(await cat.mgmt('InsertSurface', { name }), 400, 'INVALID_ARGUMENT', 'name');
    expectError(await cat.mgmt('InsertSurface', { name: 'ok', color: 'red' }), 400, 'INVALID_ARGUMENT', 'color');
  });

  it('GetAllSurfaces lists every surface sorted by name, only of the project', async () => {
    const r = await cat.mgmt('GetAllSurfaces', {});
    const names: string[] = r.body.surfaces.map((s: { name: string }) => s.name);
    expect(names).toEqual([...names].sort());
    expect(names).toEqual(expect.arrayContaining(['Idem', 'banner', 'home', 'idem', 'inbox']));
    expect(names.indexOf('Idem')).toBeLessThan(names.indexOf('idem'));
    const o = await call(cat.t, 'GetAllSurfaces', cat.other.management, { projectId: cat.other.projectId });
    expect(o.body.surfaces).toEqual([]);
  });
});

describe('InsertTreatmentType', () => {
  it('creates a type with defaults filled in', async () => {
    const r = await cat.mgmt('InsertTreatmentType', {
      treatmentTypeName: 'Banner',
      surfaces: [{ surfaceName: 'home' }, { surfaceName: 'banner' }],
      contentFieldTypes: fields,
      lastModifiedBy: 'alice',
    });
    expect(r.status).toBe(200);
    const tt = r.body.treatmentType;
    expect(tt).toEqual({
      treatmentTypeId: expect.stringMatching(/^[1-9][0-9]*$/),
      projectId: cat.p.projectId,
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
    const stored = await cat.t.ctx.catalog.treatmentTypes.getByName(cat.p.projectId, 'Banner');
    expect(stored?.treatmentTypeId).toBe(tt.treatmentTypeId);
  });

  it('accepts snake_case, an explicit deliveryType and dataType, and zero surfaces', async () => {
    const r = await call(cat.t, 'InsertTreatmentType', cat.p.management, {
      project_id: cat.p.projectId,
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
    const r = await cat.mgmt('InsertTreatmentType', {
      treatmentTypeName: 'Nope',
      surfaces: [{ surfaceName: 'home' }, { surfaceName: 'nowhere' }],
      contentFieldTypes: fields,
      lastModifiedBy: 'a',
    });
    expectError(r, 400, 'INVALID_ARGUMENT', 'surfaces[1].surfaceName');
    expect(await cat.t.ctx.catalog.treatmentTypes.getByName(cat.p.projectId, 'Nope')).toBeUndefined();
  });

  it('400 for a surface of another project', async () => {
    await call(cat.t, 'InsertSurface', cat.other.management, { projectId: cat.other.projectId, name: 'theirs' });
    expectError(
      await cat.mgmt('InsertTreatmentType', { treatmentTypeName: 'X', surfaces: [{ surfaceName: 'theirs' }], contentFieldTypes: fields, lastModifiedBy: 'a' }),
      400,
      'INVALID_ARGUMENT',
      'surfaces[0].surfaceName',
    );
  });

  it('400 for duplicate surfaces, duplicate field names, bad lengths, empty name, missing fields', async () => {
    const base = { treatmentTypeName: 'Bad', contentFieldTypes: fields, lastModifiedBy: 'a' };
    expectError(
      await cat.mgmt('InsertTreatmentType', { ...base, surfaces: [{ surfaceName: 'home' }, { surfaceName: 'home' }] }),
      400,
      'INVALID_ARGUMENT',
      'surfaces[1].surfaceName',
    );
    expectError(
      await cat.mgmt('InsertTreatmentType', { ...base, contentFieldTypes: [fields[0], { ...fields[1], fieldName: 'title' }] }),
      400,
      'INVALID_ARGUMENT',
      'contentFieldTypes[1].fieldName',
    );
    for (const maximumLengthAllowed of [0, 1_000_001, 1.5, '5']) {
      expectError(
        await cat.mgmt('InsertTreatmentType', { ...base, contentFieldTypes: [{ fieldName: 'f', maximumLengthAllowed }] }),
        400,
        'INVALID_ARGUMENT',
        'contentFieldTypes[0].maximumLengthAllowed',
      );
    }
    expectError(await cat.mgmt('InsertTreatmentType', { ...base, treatmentTypeName: '' }), 400, 'INVALID_ARGUMENT', 'treatmentTypeName');
    expectError(await cat.mgmt('InsertTreatmentType', { ...base, deliveryType: 'SMS' }), 400, 'INVALID_ARGUMENT', 'deliveryType');
    expectError(await cat.mgmt('InsertTreatmentType', { treatmentTypeName: 'Bad', contentFieldTypes: fields }), 400, 'INVALID_ARGUMENT', 'lastModifiedBy');
    expectError(
      await cat.mgmt('InsertTreatmentType', { ...base, contentFieldTypes: [{ fieldName: 'f', maximumLengthAllowed: 5, size: 1 }] }),
      400,
      'INVALID_ARGUMENT',
      'contentFieldTypes[0].size',
    );
    expect(await cat.t.ctx.catalog.treatmentTypes.getByName(cat.p.projectId, 'Bad')).toBeUndefined();
  });

  it('409 ALREADY_EXISTS for a name taken in the project; the same name in another project is fine', async () => {
    await cat.insertType({ treatmentTypeName: 'Dup' });
    expectError(await cat.mgmt('InsertTreatmentType', { treatmentTypeName: 'Dup', contentFieldTypes: fields, lastModifiedBy: 'a' }), 409, 'ALREADY_EXISTS');
    const o = await call(cat.t, 'InsertTreatmentType', cat.other.management, {
      projectId: cat.other.projectId,
      treatmentTypeName: 'Dup',
      contentFieldTypes: fields,
      lastModifiedBy: 'a',
    });
    expect(o.status).toBe(200);
  });

  it('concurrent inserts of one name: exactly one wins', async () => {
    const rs = await Promise.all(
      [1, 2, 3, 4].map(() => cat.mgmt('InsertTreatmentType', { treatmentTypeName: 'Race', contentFieldTypes: fields, lastModifiedBy: 'a' })),
    );
    expect(rs.map((r) => r.status).sort()).toEqual([200, 409, 409, 409]);
  });
});

describe('UpdateTreatmentType', () => {
  it('renames, replaces content field types and keeps unset parts unchanged', async () => {
    const tt = await cat.insertType({ surfaces: [{ surfaceName: 'home' }], deliveryType: 'NOTIFICATION' });
    const r = await cat.mgmt('UpdateTreatmentType', {
      treatmentTypeId: Number(tt.treatmentTypeId),
      treatmentTypeName: `${tt.treatmentTypeName}-renamed`,
      contentFieldTypes: [{ fieldName: 'only', maximumLengthAllowed: 9 }],
      lastModifiedBy: 'carol',
    });
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
    expect((await cat.t.ctx.catalog.treatmentTypes.getByName(cat.p.projectId, `${tt.treatmentTypeName}-renamed`))?.treatmentTypeId).toBe(tt.treatmentTypeId);
    expect(await cat.t.ctx.catalog.treatmentTypes.getByName(cat.p.projectId, tt.treatmentTypeName)).toBeUndefined();
    expect((await cat.mgmt('InsertTreatmentType', { treatmentTypeName: tt.treatmentTypeName, contentFieldTypes: fields, lastModifiedBy: 'a' })).status).toBe(
      200,
    );
  });

  it('unset name keeps it; empty name is 400; a name of another type is 409; its own name is fine', async () => {
    const a = await cat.insertType();
    const b = await cat.insertType();
    const id = a.treatmentTypeId;
    const kept = await cat.mgmt('UpdateTreatmentType', { treatmentTypeId: id, contentFieldTypes: fields, lastModifiedBy: 'x' });
    expect(kept.body.treatmentType.treatmentTypeName).toBe(a.treatmentTypeName);
    expectError(
      await cat.mgmt('UpdateTreatmentType', { treatmentTypeId: id, treatmentTypeName: '', contentFieldTypes: fields, lastModifiedBy: 'x' }),
      400,
      'INVALID_ARGUMENT',
      'treatmentTypeName',
    );
    expectError(
      await cat.mgmt('UpdateTreatmentType', { treatmentTypeId: id, treatmentTypeName: b.treatmentTypeName, contentFieldTypes: fields, lastModifiedBy: 'x' }),
      409,
      'ALREADY_EXISTS',
    );
    expect(
      (await cat.mgmt('UpdateTreatmentType', { treatmentTypeId: id, treatmentTypeName: a.treatmentTypeName, contentFieldTypes: fields, lastModifiedBy: 'x' }))
        .status,
    ).toBe(200);
    expect((await cat.t.ctx.catalog.treatmentTypes.get(cat.p.projectId, b.treatmentTypeId))?.treatmentTypeName).toBe(b.treatmentTypeName);
  });

  it('surfaces: unset or empty keep them, non-empty replaces, clearSurfaces detaches, unknown is 400', async () => {
    const tt = await cat.insertType({ surfaces: [{ surfaceName: 'home' }, { surfaceName: 'banner' }] });
    const upd = (extra: Record<string, unknown>) =>
      cat.mgmt('UpdateTreatmentType', { treatmentTypeId: tt.treatmentTypeId, contentFieldTypes: fields, lastModifiedBy: 'x', ...extra });
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
    const tt = await cat.insertType();
    const upd = (extra: Record<string, unknown>) =>
      cat.mgmt('UpdateTreatmentType', { treatmentTypeId: tt.treatmentTypeId, contentFieldTypes: fields, lastModifiedBy: 'x', ...extra });
    expect((await upd({ deliveryType: 'WEBHOOK' })).body.treatmentType.deliveryType).toBe('WEBHOOK');
    expect((await upd({})).body.treatmentType.deliveryType).toBe('WEBHOOK');
    expectError(await upd({ contentFieldTypes: [fields[0], fields[0]] }), 400, 'INVALID_ARGUMENT', 'contentFieldTypes[1].fieldName');
    expectError(
      await cat.mgmt('UpdateTreatmentType', { treatmentTypeId: tt.treatmentTypeId, lastModifiedBy: 'x' }),
      400,
      'INVALID_ARGUMENT',
      'contentFieldTypes',
    );
    expectError(await upd({ treatmentTypeId: 'abc' }), 400, 'INVALID_ARGUMENT', 'treatmentTypeId');
  });

  it('404 for an unknown id, including a type of another project', async () => {
    const theirs = await call(cat.t, 'InsertTreatmentType', cat.other.management, {
      projectId: cat.other.projectId,
      treatmentTypeName: 'Theirs',
      contentFieldTypes: fields,
      lastModifiedBy: 'a',
    });
    expect(theirs.status).toBe(200);
    for (const treatmentTypeId of [theirs.body.treatmentType.treatmentTypeId, '999999999999', 0]) {
      expectError(await cat.mgmt('UpdateTreatmentType', { treatmentTypeId, contentFieldTypes: fields, lastModifiedBy: 'x' }), 404, 'NOT_FOUND');
    }
    const still = await cat.t.ctx.catalog.treatmentTypes.get(cat.other.projectId, theirs.body.treatmentType.treatmentTypeId);
    expect(still?.treatmentTypeName).toBe('Theirs');
  });

  it('GetAllTreatmentTypes returns the project’s types in ascending id order', async () => {
    const r = await cat.mgmt('GetAllTreatmentTypes', {});
    expect(r.status).toBe(200);
    const ids: string[] = r.body.treatmentTypes.map((x: { treatmentTypeId: string }) => x.treatmentTypeId);
    expect(ids.length).toBeGreaterThan(5);
    expect(ids.map(BigInt)).toEqual([...ids.map(BigInt)].sort((a, b) => (a < b ? -1 : 1)));
    expect(r.body.treatmentTypes.every((x: { projectId: string }) => x.projectId === cat.p.projectId)).toBe(true);
  });
});
