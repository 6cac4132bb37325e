import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createProjectWithKeys, createTestApp, type ProjectKeys, type TestApp } from '../helpers/context.js';

/** LogTreatmentInteraction validation and queueing; storage is covered end to end elsewhere. */
let t: TestApp;
let p: ProjectKeys;
let inApp: string;
let email: string;

async function ok(op: string, body: Record<string, unknown>, app = t, keys = p) {
  const r = await call(app, op, keys.management, { projectId: keys.projectId, ...body });
  if (r.status !== 200) throw new Error(JSON.stringify(r.body));
  return r.body;
}

/** A published treatment of a new type on surface `s` (of `app`'s project `keys`, by default the file's). */
async function treatmentOfType(typeName: string, deliveryType: string, app = t, keys = p): Promise<string> {
  await ok(
    'InsertTreatmentType',
    {
      treatmentTypeName: typeName,
      deliveryType,
      lastModifiedBy: 't',
      surfaces: [{ surfaceName: 's' }],
      contentFieldTypes: [{ fieldName: 'body', maximumLengthAllowed: 100 }],
    },
    app,
    keys,
  );
  const r = await ok(
    'InsertTreatment',
    {
      name: typeName,
      description: 'd',
      treatmentTypeName: typeName,
      lastModifiedBy: 't',
      startTimestamp: '2026-01-01T00:00:00Z',
      shouldPublish: true,
      content: { languageAgnosticContentFields: [{ fieldName: 'body', stringValue: 'x' }] },
    },
    app,
    keys,
  );
  return r.treatment.treatmentId;
}

beforeAll(async () => {
  t = await createTestApp();
  p = await createProjectWithKeys(t);
  await ok('InsertSurface', { name: 's' });
  inApp = await treatmentOfType('card', 'IN_APP');
  email = await treatmentOfType('mail', 'EMAIL');
});
afterAll(async () => {
  await t?.close();
});

/** An hour ago in epoch micros: the service accepts interaction times within [now − RETENTION_DAYS, now + 24 h] of the real clock. */
const hourAgoMicros = () => (Date.now() - 3_600_000) * 1000;
const body = (over: Record<string, unknown> = {}) => ({
  projectId: p.projectId,
  userId: 'u1',
  treatmentId: inApp,
  treatmentTrackingId: `${inApp}_r1`,
  surface: 's',
  interactionType: 'CLICKED',
  interactionTimeMicros: String(hourAgoMicros()),
  ...over,
});

describe('LogTreatmentInteraction', () => {
  it('merges concurrent interactions into few jobs, each interaction its own item; the backlog counts the interactions', async () => {
    // a fresh deployment (its own queues and job mix), so the backlog's first reading is exact
    const fresh = await createTestApp();
    try {
      const q = await createProjectWithKeys(fresh);
      await ok('InsertSurface', { name: 's' }, fresh, q);
      const id = await treatmentOfType('card', 'IN_APP', fresh, q);
      const answers = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          call(fresh, 'LogTreatmentInteraction', q.delivery, {
            ...body(),
            projectId: q.projectId,
            userId: `u${i}`,
            treatmentId: id,
            treatmentTrackingId: `${id}_r${i}`,
          }),
        ),
      );
      expect(answers.every((a) => a.status === 200)).toBe(true);
      const jobs = await fresh.ctx.ingestion.ingest.interactionsQueue.getWaiting();
      expect(jobs.length).toBeGreaterThanOrEqual(1);
      expect(jobs.length).toBeLessThan(40);
      const items = jobs.flatMap((j) => (j.data.kind === 'interactionsBatch' ? j.data.interactions : [j.data]));
      expect(items.map((d: { userId: string }) => d.userId).sort()).toEqual(Array.from({ length: 40 }, (_, i) => `u${i}`).sort());
      await fresh.ctx.ingestion.ingestBacklog.poll();
      expect(fresh.ctx.ingestion.ingestBacklog.backlog).toBe(40);
    } finally {
      await fresh.close();
    }
  });

  it('queues a valid interaction and answers {} (int64 as number or string, optional actionName)', async () => {
    const before = (await t.ctx.ingestion.ingest.interactionsQueue.getJobCounts('waiting')).waiting;
    expect(await call(t, 'LogTreatmentInteraction', p.delivery, body())).toEqual({ status: 200, body: {} });
    expect((await call(t, 'LogTreatmentInteraction', p.delivery, body({ interactionTimeMicros: hourAgoMicros(), actionName: 'buy' }))).status).toBe(200);
    expect(
      (await call(t, 'LogTreatmentInteraction', p.delivery, body({ treatmentId: email, treatmentTrackingId: `${email}_r2`, interactionType: 'DELIVERED' })))
        .status,
    ).toBe(200);
    expect((await t.ctx.ingestion.ingest.interactionsQueue.getJobCounts('waiting')).waiting).toBe(before + 3);
  });

  const bad: [string, Record<string, unknown>, string][] = [
    ['an unknown interactionType', { interactionType: 'LIKED' }, 'interactionType'],
    ['an email type on an IN_APP treatment', { interactionType: 'BOUNCED' }, 'interactionType'],
    ['a treatmentId that does not exist', { treatmentId: '999999', treatmentTrackingId: '999999_r' }, 'treatmentId'],
    ['a tracking id of another treatment', { treatmentTrackingId: `${Number(inApp) + 100}_r1` }, 'treatmentTrackingId'],
    ['a tracking id without a response id', { treatmentTrackingId: `${'x'}` }, 'treatmentTrackingId'],
    ['a fractional interactionTimeMicros', { interactionTimeMicros: 1.5 }, 'interactionTimeMicros'],
    ['a negative interactionTimeMicros', { interactionTimeMicros: '-5' }, 'interactionTimeMicros'],
    ['an empty surface (an omitted one is read from the decision log)', { surface: '' }, 'surface'],
    ['an unregistered surface', { surface: 'nowhere' }, 'surface'],
    ['a tracking id naming no treatment, treatmentId omitted', { treatmentId: undefined, treatmentTrackingId: '999999_r' }, 'treatmentTrackingId'],
  ];
  for (const [name, over, field] of bad) {
    it(`400 INVALID_ARGUMENT for ${name}`, async () => {
      const b = JSON.parse(JSON.stringify(body(over)));
      const r = await call(t, 'LogTreatmentInteraction', p.delivery, b);
      expect(r.status).toBe(400);
      expect(r.body.error.status).toBe('INVALID_ARGUMENT');
      expect(r.body.error.details.some((d: { field: string }) => d.field.startsWith(field))).toBe(true);
    });
  }

  it('accepts an interaction for a treatment created a moment ago, before the compiled catalogue has it', async () => {
    expect((await call(t, 'LogTreatmentInteraction', p.delivery, body())).status).toBe(200); // the catalogue is compiled now
    const r = await ok('InsertTreatment', {
      name: 'fresh',
      description: 'd',
      treatmentTypeName: 'mail',
      lastModifiedBy: 't',
      startTimestamp: '2026-01-01T00:00:00Z',
      shouldPublish: true,
      content: { languageAgnosticContentFields: [{ fieldName: 'body', stringValue: 'x' }] },
    });
    const id = r.treatment.treatmentId;
    const res = await call(t, 'LogTreatmentInteraction', p.delivery, body({ treatmentId: id, treatmentTrackingId: `${id}_r9`, interactionType: 'DELIVERED' }));
    expect(res).toEqual({ status: 200, body: {} });
  });

  it('needs the DELIVERY permission and accepts the api-key query parameter', async () => {
    expect((await call(t, 'LogTreatmentInteraction', p.logEvents, body())).status).toBe(403);
    const r = await t.app.inject({ method: 'POST', url: `/v1/LogTreatmentInteraction?api-key=${p.delivery}`, payload: body() });
    expect(r.statusCode).toBe(200);
  });
});
