import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createProjectWithKeys, createTestApp, type ProjectKeys, type TestApp } from '../helpers/context.js';

/**
 * A management change is visible to the process that made it before it answers. The next
 * GetTreatments on the same process must never be served the plan compiled before the change,
 * even when a plan is already cached (other processes still take up to a second).
 */
let t: TestApp;
let keys: ProjectKeys;

beforeAll(async () => {
  t = await createTestApp();
  keys = await createProjectWithKeys(t);
  const m = (op: string, body: object) => call(t, op, keys.management, { projectId: keys.projectId, ...body });
  expect((await m('InsertSurface', { name: 'home' })).status).toBe(200);
  expect(
    (
      await m('InsertTreatmentType', {
        treatmentTypeName: 'banner',
        lastModifiedBy: 't',
        surfaces: [{ surfaceName: 'home' }],
        contentFieldTypes: [{ fieldName: 'title', maximumLengthAllowed: 80 }],
      })
    ).status,
  ).toBe(200);
});
afterAll(async () => {
  await t?.close();
});

const served = async (): Promise<string[]> => {
  const r = await call(t, 'GetTreatments', keys.delivery, {
    projectId: keys.projectId,
    userId: 'u1',
    surfaces: [{ surface: 'home', maximumTreatmentCount: 100 }],
  });
  expect(r.status).toBe(200);
  return (r.body.userTreatments ?? []).map((u: { treatmentId: string }) => u.treatmentId);
};

describe('read your own writes', () => {
  it('a treatment inserted, paused or resumed is seen by the very next GetTreatments of the same process, with a plan already cached', async () => {
    await served(); // a cached plan exists from here on
    const ids: string[] = [];
    for (let i = 0; i < 15; i++) {
      const ins = await call(t, 'InsertTreatment', keys.management, {
        projectId: keys.projectId,
        name: `t${i}`,
        description: 'd',
        treatmentTypeName: 'banner',
        lastModifiedBy: 't',
        startTimestamp: '2026-01-01T00:00:00Z',
        shouldPublish: true,
        content: { languageAgnosticContentFields: [{ fieldName: 'title', stringValue: `T${i}` }] },
      });
      expect(ins.status).toBe(200);
      ids.push(ins.body.treatment.treatmentId);
      expect(await served()).toContain(ins.body.treatment.treatmentId);
    }
    for (const id of ids.slice(0, 5)) {
      expect(
        (await call(t, 'UpdateTreatment', keys.management, { projectId: keys.projectId, treatmentId: id, lastModifiedBy: 't', shouldPause: true })).status,
      ).toBe(200);
      expect(await served()).not.toContain(id);
      expect(
        (await call(t, 'UpdateTreatment', keys.management, { projectId: keys.projectId, treatmentId: id, lastModifiedBy: 't', shouldPublish: true })).status,
      ).toBe(200);
      expect(await served()).toContain(id);
    }
  });
});
