import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { v1Operations } from '../../api/v1.routes.js';
import { adminOperations } from '../../api/admin.routes.js';
import { ADMIN_TOKEN, createProjectWithKeys, createTestApp, type ProjectKeys, type TestApp } from '../helpers/context.js';

/**
 * Quality bar: whatever a client sends, the answer is a 4xx in the error body format, never a 500, a
 * crash or a hang. Every operation gets the same battery of hostile bodies with a valid key.
 */
let t: TestApp;
let p: ProjectKeys;

beforeAll(async () => {
  t = await createTestApp();
  p = await createProjectWithKeys(t);
});
afterAll(async () => {
  await t?.close();
});

const deep = (n: number): unknown => (n === 0 ? {} : { a: deep(n - 1) });
const hostile = (projectId: string): unknown[] => [
  null,
  [],
  'text',
  42,
  { projectId },
  { projectId, userId: null, events: null, surfaces: null, treatmentId: null },
  { projectId, userId: 'u', events: [{}], surfaces: [{}], treatmentId: {}, dataFieldParams: [{}], name: 7 },
  { projectId, userId: 'u'.repeat(10_000), events: 'x', surfaces: 'x', treatmentTypeId: '99999999999999999999999', name: '' },
  { projectId, treatmentId: '-1', treatmentTypeId: -1, contentFieldTypes: [{ fieldName: 'a', maximumLengthAllowed: 1e30 }], lastModifiedBy: 'x' },
  { projectId, __proto__: { polluted: true }, constructor: { prototype: { x: 1 } } },
  { projectId, nested: deep(200) },
  { projectId, userId: 'u', surfaces: [{ surface: 's', maximumTreatmentCount: '1e400' }], contextualAttributes: [{ key: 'k' }] },
  {
    projectId,
    userId: 'u',
    events: [{ eventName: 'e', clientEventTimestamp: '2026-02-30T00:00:00Z', eventProperties: { a: { longValue: '99999999999999999999' } } }],
  },
];

function expectClientError(status: number, body: any, what: string): void {
  expect(status, what).toBeGreaterThanOrEqual(400);
  expect(status, what).toBeLessThan(500);
  expect(body?.error?.code, what).toBe(status);
  expect(typeof body?.error?.status, what).toBe('string');
  expect(typeof body?.error?.message, what).toBe('string');
}

describe('hostile input never yields a 5xx', () => {
  it.each(v1Operations.map((o) => o.operation))('/v1/%s', async (op) => {
    const key = op === 'LogEvents' ? p.logEvents : ['GetTreatments', 'LogTreatmentInteraction'].includes(op) ? p.delivery : p.management;
    for (const body of hostile(p.projectId)) {
      const res = await t.app.inject({
        method: 'POST',
        url: `/v1/${op}`,
        headers: { 'x-api-key': key, 'content-type': 'application/json' },
        payload: JSON.stringify(body),
      });
      const json = res.json();
      if (res.statusCode === 200) continue; // a hostile body can still be a valid request (e.g. GetAllSurfaces {projectId})
      expectClientError(res.statusCode, json, `${op} ${JSON.stringify(body).slice(0, 80)}`);
    }
    for (const raw of ['{', '{"projectId":', '\u0000', '[1,2', '"unterminated']) {
      const res = await t.app.inject({ method: 'POST', url: `/v1/${op}`, headers: { 'x-api-key': key, 'content-type': 'application/json' }, payload: raw });
      expectClientError(res.statusCode, res.json(), `${op} raw ${JSON.stringify(raw)}`);
    }
  });

  it.each(adminOperations.map((o) => o.operation))('/admin/v1/%s', async (op) => {
    for (const body of hostile(p.projectId)) {
      const res = await t.app.inject({
        method: 'POST',
        url: `/admin/v1/${op}`,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        payload: JSON.stringify(body),
      });
      if (res.statusCode === 200) continue;
      // 503 is allowed only for operations that need ClickHouse, absent from this Redis-only app.
      if (res.statusCode === 503) {
        expect(res.json().error.status).toBe('UNAVAILABLE');
        continue;
      }
      expectClientError(res.statusCode, res.json(), `${op} ${JSON.stringify(body).slice(0, 80)}`);
    }
  });

  it('a wrong content type and an empty body are 400, not 500', async () => {
    const form = await t.app.inject({
      method: 'POST',
      url: '/v1/GetAllSurfaces',
      headers: { 'x-api-key': p.management, 'content-type': 'text/plain' },
      payload: 'projectId=x',
    });
    expectClientError(form.statusCode, form.json(), 'text/plain');
    const empty = await t.app.inject({
      method: 'POST',
      url: '/v1/GetAllSurfaces',
      headers: { 'x-api-key': p.management, 'content-type': 'application/json' },
      payload: '',
    });
    expectClientError(empty.statusCode, empty.json(), 'empty');
    const get = await t.app.inject({ method: 'GET', url: '/v1/GetAllSurfaces' });
    expectClientError(get.statusCode, get.json(), 'GET');
  });
});
