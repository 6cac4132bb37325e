import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectWithKeys, startTestService, type TestService } from '../helpers/service.js';
import { waitUntil } from '../helpers/context.js';

/** InsertSurface provisions the surface's interaction data fields; GetAllDataFields lists every field. */

let s: TestService;
let k: Awaited<ReturnType<typeof projectWithKeys>>;

async function v1(op: string, key: string, body: Record<string, unknown>): Promise<{ status: number; body: any }> {
  return s.post(`/v1/${op}`, { projectId: k.projectId, ...body }, { 'x-api-key': key });
}

async function ok(op: string, body: Record<string, unknown>, key = k.management): Promise<any> {
  const r = await v1(op, key, body);
  if (r.status !== 200) throw new Error(`${op}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

const KINDS = [
  { dailyCountAggregation: { windowName: 'LAST_1D' } },
  { dailyCountAggregation: { windowName: 'LAST_7D' } },
  { daysSinceLastTimestampAggregation: {} },
];
const TYPES = ['VIEWED', 'CLICKED', 'DISMISSED'];
const expectedParams = (surfaceName: string) =>
  TYPES.flatMap((treatmentInteractionType) => KINDS.map((agg) => ({ treatmentDataFieldParams: { treatmentInteractionType, surfaceName, ...agg } })));

beforeAll(async () => {
  s = await startTestService();
  k = await projectWithKeys(s, 'prov1');
});

afterAll(async () => {
  await s?.stop();
});

describe('InsertSurface provisions the per-surface data fields', () => {
  it('creates the 9 interaction fields, answers them beside the surface, and records them in ListChanges', async () => {
    const r = await ok('InsertSurface', { name: 'home_banner' });
    expect(r.surface).toMatchObject({ projectId: k.projectId, name: 'home_banner', description: '' });
    expect(r.dataFields).toHaveLength(9);
    expect(r.dataFields.map((f: { dataFieldParams: unknown }) => f.dataFieldParams)).toEqual(expectedParams('home_banner'));
    expect(new Set(r.dataFields.map((f: { dataFieldId: string }) => f.dataFieldId)).size).toBe(9);
    expect(r.dataFields.map((f: { dataFieldType: string }) => f.dataFieldType)).toEqual(Array(9).fill('INTEGER'));
    const changes = (await s.admin('ListChanges', { projectId: k.projectId, pageSize: 100 })).body.changes;
    const provisioned = changes.filter((c: any) => c.operation === 'InsertSurface' && c.resourceKind === 'dataField');
    expect(provisioned.map((c: any) => c.resourceId).sort()).toEqual(r.dataFields.map((f: { dataFieldId: string }) => f.dataFieldId).sort());
    expect(changes.filter((c: any) => c.operation === 'InsertSurface' && c.resourceKind === 'surface')).toHaveLength(1);
  });

  it('GetDataFields with the same params (spelled differently) returns the same ids; a repeated InsertSurface creates nothing', async () => {
    const first = await ok('InsertSurface', { name: 'inbox' });
    const changesBefore = (await s.admin('ListChanges', { projectId: k.projectId, pageSize: 1000 })).body.changes.length;
    const again = await ok('InsertSurface', { name: 'inbox', description: 'ignored' });
    expect(again).toEqual(first);
    expect((await s.admin('ListChanges', { projectId: k.projectId, pageSize: 1000 })).body.changes.length).toBe(changesBefore);
    const params = expectedParams('inbox').map((p) => ({ treatmentDataFieldParams: { ...p.treatmentDataFieldParams, isDistinctInteraction: false } }));
    const resolved = await ok('GetDataFields', { dataFieldParams: params });
    expect(resolved.dataFields.map((f: { dataFieldId: string }) => f.dataFieldId)).toEqual(first.dataFields.map((f: { dataFieldId: string }) => f.dataFieldId));
  });

  it('a field a client resolved before the surface existed is reused, not duplicated', async () => {
    const early = await ok('GetDataFields', {
      dataFieldParams: [
        { treatmentDataFieldParams: { treatmentInteractionType: 'CLICKED', surfaceName: 'later', dailyCountAggregation: { windowName: 'LAST_7D' } } },
      ],
    });
    const r = await ok('InsertSurface', { name: 'later' });
    expect(r.dataFields[4].dataFieldId).toBe(early.dataFields[0].dataFieldId);
  });

  it('the provisioned fields count interactions on their surface from the first one on', async () => {
    const surface = await ok('InsertSurface', { name: 'fresh' });
    const [viewed1d, viewed7d, viewedDays, clicked1d, , , dismissed1d] = surface.dataFields.map((f: { dataFieldId: string }) => f.dataFieldId);
    await ok('InsertSurface', { name: 'elsewhere' });
    await ok('InsertTreatmentType', {
      treatmentTypeName: 'card',
      lastModifiedBy: 't',
      surfaces: [{ surfaceName: 'fresh' }, { surfaceName: 'elsewhere' }],
      contentFieldTypes: [{ fieldName: 'body', maximumLengthAllowed: 100 }],
    });
    const tr = await ok('InsertTreatment', {
      name: 'c',
      description: 'd',
      treatmentTypeName: 'card',
      lastModifiedBy: 't',
      startTimestamp: '2026-01-01T00:00:00Z',
      shouldPublish: true,
      content: { languageAgnosticContentFields: [{ fieldName: 'body', stringValue: 'x' }] },
    });
    const treatmentId = tr.treatment.treatmentId;
    const interact = (surfaceName: string, interactionType: string, n: number) =>
      ok(
        'LogTreatmentInteraction',
        {
          userId: 'u1',
          treatmentId,
          treatmentTrackingId: `${treatmentId}_r${n}`,
          surface: surfaceName,
          interactionType,
          interactionTimeMicros: String(Date.now() * 1000),
        },
        k.delivery,
      );
    await interact('fresh', 'VIEWED', 1);
    await interact('fresh', 'VIEWED', 2);
    await interact('fresh', 'CLICKED', 3);
    await interact('elsewhere', 'VIEWED', 4);
    let last: Record<string, unknown> = {};
    await waitUntil(
      async () => {
        last = (await s.admin('GetUserProfile', { projectId: k.projectId, userId: 'u1' })).body.profile.dataFields;
        return last[viewed1d] === '2' && last[clicked1d] === '1';
      },
      20_000,
      50,
    ).catch(() => undefined);
    expect(last).toMatchObject({ [viewed1d]: '2', [viewed7d]: '2', [viewedDays]: '0', [clicked1d]: '1' });
    expect(last[dismissed1d] ?? '0').toBe('0');
    // "Seen fewer than 3 things on this surface today" works without any set-up.
    await ok('InsertTreatment', {
      name: 'capped',
      description: 'd',
      treatmentTypeName: 'card',
      lastModifiedBy: 't',
      startTimestamp: '2026-01-01T00:00:00Z',
      shouldPublish: true,
      removedSurfaces: { surfaces: [{ name: 'elsewhere' }] },
      content: { languageAgnosticContentFields: [{ fieldName: 'body', stringValue: 'capped' }] },
      eligibilityRules: { rules: [{ dataFieldId: viewed1d, condition: 'LESS_THAN', rhsValue: '2' }] },
    });
    const got = await ok('GetTreatments', { userId: 'u1', surfaces: [{ surface: 'fresh', maximumTreatmentCount: 5 }] }, k.delivery);
    const contents = (got.userTreatments ?? []).map((u: { treatmentContent: string }) => JSON.parse(u.treatmentContent).body);
    expect(contents).not.toContain('capped');
    const other = await ok('GetTreatments', { userId: 'u2', surfaces: [{ surface: 'fresh', maximumTreatmentCount: 5 }] }, k.delivery);
    expect(other.userTreatments.map((u: { treatmentContent: string }) => JSON.parse(u.treatmentContent).body)).toContain('capped');
  });
});

describe('GetAllDataFields', () => {
  it('lists every field of the project in ascending id order, each in the shape it was made with', async () => {
    const named = (await ok('InsertDataField', { name: 'tier', userProperty: { dataType: 'INTEGER' } })).dataField;
    const resolved = await ok('GetDataFields', {
      dataFieldParams: [
        { userAttributeDataFieldParams: { propertyName: 'plan' } },
        { eventDataFieldParams: { eventSchemaName: 'purchase', propertyValueByPropertyName: { sku: { longValue: 5 } }, latestTimestampAggregation: {} } },
      ],
    });
    const all = (await ok('GetAllDataFields', {})).dataFields;
    const ids = all.map((f: { dataFieldId: string }) => f.dataFieldId);
    expect(ids).toEqual([...ids].sort((a: string, b: string) => Number(a) - Number(b)));
    expect(new Set(ids).size).toBe(ids.length);
    // every listed field carries its backfill status; user properties need none, aggregations
    // report where their backfill is (timing-dependent here), and are otherwise as made
    const statuses = new Map(all.map((f: { dataFieldId: string; backfillStatus: string }) => [f.dataFieldId, f.backfillStatus]));
    const byId = new Map(all.map(({ backfillStatus: _, ...f }: { dataFieldId: string; backfillStatus: string }) => [f.dataFieldId, f]));
    expect(statuses.get(named.dataFieldId)).toBe('NOT_APPLICABLE');
    expect(['PENDING', 'RUNNING', 'COMPLETE']).toContain(statuses.get(resolved.dataFields[1].dataFieldId));
    expect(byId.get(named.dataFieldId)).toEqual({
      dataFieldId: named.dataFieldId,
      projectId: k.projectId,
      name: 'tier',
      userProperty: { dataType: 'INTEGER' },
    });
    expect(byId.get(resolved.dataFields[0].dataFieldId)).toEqual({
      dataFieldId: resolved.dataFields[0].dataFieldId,
      projectId: k.projectId,
      name: 'plan',
      userProperty: { dataType: 'STRING' },
    });
    expect(byId.get(resolved.dataFields[1].dataFieldId)).toEqual({
      dataFieldId: resolved.dataFields[1].dataFieldId,
      dataFieldParams: {
        eventDataFieldParams: { eventSchemaName: 'purchase', propertyValueByPropertyName: { sku: { longValue: '5' } }, latestTimestampAggregation: {} },
      },
      dataFieldType: 'TIMESTAMP_SECONDS',
    });
    const home = (await ok('InsertSurface', { name: 'home_banner' })).dataFields;
    for (const f of home) expect(byId.get(f.dataFieldId)).toEqual(f);
  });

  it('needs a TREATMENT_MANAGEMENT key of the project and a strict body', async () => {
    for (const key of [k.delivery, k.logEvents]) expect((await v1('GetAllDataFields', key, {})).body.error.status).toBe('PERMISSION_DENIED');
    const other = await projectWithKeys(s, 'prov2');
    const stolen = await s.post('/v1/GetAllDataFields', { projectId: k.projectId }, { 'x-api-key': other.management });
    expect(stolen.status).toBe(401);
    const empty = await s.post('/v1/GetAllDataFields', { projectId: other.projectId }, { 'x-api-key': other.management });
    expect(empty).toEqual({ status: 200, body: { dataFields: [] } });
    const typo = await v1('GetAllDataFields', k.management, { pageSize: 5 });
    expect(typo.status).toBe(400);
    expect(typo.body.error.status).toBe('INVALID_ARGUMENT');
  });
});
