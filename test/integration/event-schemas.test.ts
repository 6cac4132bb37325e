import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, projectWithKeys, type TestService, v1Calls } from '../helpers/service.js';
import { waitUntil } from '../helpers/context.js';

/**
 * Event schemas through HTTP against the whole service: event names get stable int64 ids when first seen
 * (InsertEventSchema, GetDataFields' eventSchemaName, LogEvents through the workers), and
 * `targetAction.eventId` must name one of them.
 */
let s: TestService;
let k: Awaited<ReturnType<typeof projectWithKeys>>;
let other: Awaited<ReturnType<typeof projectWithKeys>>;
const DAY = 86_400_000;

const { v1, ok } = v1Calls(
  () => s,
  () => k.projectId,
);
const schemas = async (): Promise<{ eventId: string; eventName: string; createTime: string }[]> => (await ok('GetEventSchemas', k.management, {})).eventSchemas;

beforeAll(async () => {
  s = await startTestService();
  k = await projectWithKeys(s, 'evschema');
  other = await projectWithKeys(s, 'evschema2');
  await ok('InsertSurface', k.management, { name: 'home' });
  await ok('InsertTreatmentType', k.management, {
    treatmentTypeName: 'card',
    lastModifiedBy: 't',
    surfaces: [{ surfaceName: 'home' }],
    contentFieldTypes: [{ fieldName: 'title', maximumLengthAllowed: 100, isPerLanguage: true }],
  });
}, 120_000);

afterAll(async () => {
  await s?.stop();
});

const treatment = (extra: Record<string, unknown>) => ({
  name: 'x',
  description: 'x',
  treatmentTypeName: 'card',
  lastModifiedBy: 't',
  startTimestamp: new Date(Date.now() - DAY).toISOString(),
  shouldPublish: true,
  content: { contentByLanguage: [{ languageCode: { languageCode: 'en' }, contentFields: [{ fieldName: 'title', stringValue: 'x' }] }] },
  ...extra,
});

describe('event schemas', () => {
  it('InsertEventSchema assigns a stable int64 id, idempotently; GetEventSchemas lists ascending', async () => {
    const a = (await ok('InsertEventSchema', k.management, { eventName: 'purchase' })).eventSchema;
    expect(a).toMatchObject({ eventName: 'purchase' });
    expect(a.eventId).toMatch(/^[1-9][0-9]*$/);
    expect(a.createTime).toMatch(/Z$/);
    expect((await ok('InsertEventSchema', k.management, { event_name: 'purchase' })).eventSchema).toEqual(a);
    const b = (await ok('InsertEventSchema', k.management, { eventName: 'Purchase' })).eventSchema;
    expect(b.eventId).not.toBe(a.eventId);
    // concurrent first sights agree on one id
    const many = await Promise.all(Array.from({ length: 8 }, () => ok('InsertEventSchema', k.management, { eventName: 'signup' })));
    expect(new Set(many.map((r) => r.eventSchema.eventId)).size).toBe(1);
    const list = await schemas();
    expect(list.map((x) => x.eventName)).toEqual(['purchase', 'Purchase', 'signup']);
    const ids = list.map((x) => BigInt(x.eventId));
    expect([...ids].sort((x, y) => (x < y ? -1 : 1))).toEqual(ids);
    // another project has its own names
    expect((await v1('GetEventSchemas', other.management, {}, other.projectId)).body.eventSchemas).toEqual([]);
    // operators (and the CLI, same code) read them with the admin token
    expect((await s.admin('GetEventSchemas', { projectId: k.projectId })).body.eventSchemas).toEqual(list);
    expect((await s.admin('GetEventSchemas', { projectId: 'absent' })).status).toBe(404);
    // recorded in the change log
    const changes = await s.admin('ListChanges', { projectId: k.projectId, pageSize: 100 });
    const entries = changes.body.changes.filter((c: any) => c.operation === 'InsertEventSchema');
    expect(entries.map((c: any) => c.after.eventName).sort()).toEqual(['Purchase', 'purchase', 'signup']);
  });

  it('GetDataFields’ eventSchemaName and logged events register their names', async () => {
    await ok('GetDataFields', k.management, {
      dataFieldParams: [{ eventDataFieldParams: { eventSchemaName: 'add_to_cart', dailyCountAggregation: { windowName: 'LAST_7D' } } }],
    });
    expect((await schemas()).map((x) => x.eventName)).toContain('add_to_cart');
    await ok('LogEvents', k.logEvents, {
      userId: 'u1',
      events: [
        { eventName: 'page_view', clientEventTimestamp: new Date().toISOString() },
        { eventName: 'purchase', clientEventTimestamp: new Date().toISOString() },
      ],
    });
    await waitUntil(async () => (await schemas()).some((x) => x.eventName === 'page_view'), 30_000, 50);
    const list = await schemas();
    expect(list.filter((x) => x.eventName === 'purchase')).toHaveLength(1);
  });

  it('validates names: 1 to 256 characters, known fields only, TREATMENT_MANAGEMENT', async () => {
    for (const body of [{ eventName: '' }, { eventName: 'x'.repeat(257) }, {}, { eventName: 'a', extra: true }, { eventName: 5 }]) {
      const r = await v1('InsertEventSchema', k.management, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error.status).toBe('INVALID_ARGUMENT');
    }
    expect((await v1('InsertEventSchema', k.management, { eventName: 'x'.repeat(256) })).status).toBe(200);
    expect((await v1('InsertEventSchema', k.delivery, { eventName: 'a' })).status).toBe(403);
    expect((await v1('GetEventSchemas', k.logEvents, {})).status).toBe(403);
  });

  it('targetAction.eventId must name an event schema of the project', async () => {
    const purchase = (await ok('InsertEventSchema', k.management, { eventName: 'purchase' })).eventSchema.eventId;
    const foreign = (await v1('InsertEventSchema', other.management, { eventName: 'elsewhere' }, other.projectId)).body.eventSchema.eventId;
    const okT = await ok('InsertTreatment', k.management, treatment({ targetAction: { eventId: purchase } }));
    expect(okT.treatment.versions[0].targetAction).toEqual({ eventId: purchase });
    for (const eventId of ['999999999', foreign]) {
      const r = await v1('InsertTreatment', k.management, treatment({ targetAction: { eventId } }));
      expect(r.status).toBe(400);
      expect(r.body.error.details).toEqual([expect.objectContaining({ field: 'targetAction.eventId' })]);
    }
    const upd = await v1('UpdateTreatment', k.management, { treatmentId: okT.treatment.treatmentId, lastModifiedBy: 't', targetAction: { eventId: foreign } });
    expect(upd.status).toBe(400);
    expect(upd.body.error.details[0].field).toBe('targetAction.eventId');
    const signup = (await schemas()).find((x) => x.eventName === 'signup')!.eventId;
    const upd2 = await v1('UpdateTreatment', k.management, {
      treatmentId: okT.treatment.treatmentId,
      lastModifiedBy: 't',
      targetAction: { eventId: Number(signup) },
    });
    expect(upd2.status, JSON.stringify(upd2.body)).toBe(200);
    expect(upd2.body.treatment.versions[0].targetAction).toEqual({ eventId: signup });
  });
});
