import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { ADMIN_TOKEN, callOk, createProjectWithKeys, createTestApp, type ProjectKeys, type TestApp } from '../helpers/context.js';
import { v1Operations } from '../../api/v1.routes.js';

/**
 * Browser access: with CORS_ORIGINS set, the operations a client key may call answer the listed
 * origins (preflight and actual requests, on both listeners); every other operation never does.
 */
const SHOP = 'https://shop.example';
const CLIENT_KEY_OPERATIONS = ['GetTreatments', 'GetTreatment', 'LogEvents', 'LogTreatmentInteraction'];
const ALT_OPERATIONS = ['GetTreatments', 'GetTreatment'];

let listed: TestApp;
let anyOrigin: TestApp;
let none: TestApp;
let k: ProjectKeys;

beforeAll(async () => {
  [listed, anyOrigin, none] = await Promise.all([
    createTestApp({ CORS_ORIGINS: `${SHOP}, http://localhost:5173` }),
    createTestApp({ CORS_ORIGINS: '*' }),
    createTestApp(),
  ]);
  k = await createProjectWithKeys(listed);
  await callOk(listed, 'InsertSurface', k.management, { projectId: k.projectId, name: 'home' });
});

afterAll(async () => {
  await Promise.all([listed?.close(), anyOrigin?.close(), none?.close()]);
});

const preflight = (app: FastifyInstance, url: string, origin: string | undefined, method = 'POST') =>
  app.inject({
    method: 'OPTIONS',
    url,
    headers: { ...(origin ? { origin } : {}), 'access-control-request-method': method, 'access-control-request-headers': 'content-type,x-api-key' },
  });

const post = (app: FastifyInstance, url: string, headers: Record<string, string>, payload: object) => app.inject({ method: 'POST', url, headers, payload });

describe('preflight', () => {
  it('answers 204 for the client-key operations on the base listener, with the origin, POST and the client headers', async () => {
    for (const op of CLIENT_KEY_OPERATIONS) {
      const r = await preflight(listed.app, `/v1/${op}`, SHOP);
      expect(r.statusCode, op).toBe(204);
      expect(r.headers['access-control-allow-origin']).toBe(SHOP);
      expect(r.headers['access-control-allow-methods']).toBe('POST');
      expect(String(r.headers['access-control-allow-headers']).split(/,\s*/).sort()).toEqual(['content-type', 'x-api-key', 'x-request-id']);
      expect(r.headers.vary).toMatch(/origin/i);
      expect(Number(r.headers['access-control-max-age'])).toBeGreaterThan(0);
      expect(r.body).toBe('');
    }
    expect((await preflight(listed.app, '/v1/GetTreatments', 'http://localhost:5173')).headers['access-control-allow-origin']).toBe('http://localhost:5173');
  });

  it('answers on the alternate listener for the operations it serves, and only those', async () => {
    for (const op of ALT_OPERATIONS) {
      const r = await preflight(listed.alt, `/v1/${op}`, SHOP);
      expect(r.statusCode, op).toBe(204);
      expect(r.headers['access-control-allow-origin']).toBe(SHOP);
    }
    for (const op of ['LogEvents', 'LogTreatmentInteraction', 'InsertSurface']) {
      const r = await preflight(listed.alt, `/v1/${op}`, SHOP);
      expect(r.statusCode, op).toBe(404);
      expect(r.headers['access-control-allow-origin']).toBeUndefined();
    }
  });

  it('refuses every management and admin operation (404, no CORS headers)', async () => {
    const management = v1Operations.map((o) => o.operation).filter((op) => !CLIENT_KEY_OPERATIONS.includes(op));
    expect(management.length).toBeGreaterThan(15);
    for (const url of [...management.map((op) => `/v1/${op}`), '/admin/v1/CreateProject', '/admin/v1/CreateApiKey', '/openapi.json']) {
      const r = await preflight(listed.app, url, SHOP);
      expect(r.statusCode, url).toBe(404);
      expect(r.headers['access-control-allow-origin'], url).toBeUndefined();
      expect(r.json().error.status).toBe('NOT_FOUND');
    }
  });

  it('refuses an origin that is not listed, a missing origin and a method other than POST (403)', async () => {
    for (const [origin, method] of [
      ['https://evil.example', 'POST'],
      ['https://shop.example.evil.example', 'POST'],
      ['null', 'POST'],
      [undefined, 'POST'],
      [SHOP, 'PUT'],
    ] as const) {
      const r = await preflight(listed.app, '/v1/GetTreatments', origin, method);
      expect(r.statusCode, `${origin} ${method}`).toBe(403);
      expect(r.headers['access-control-allow-origin']).toBeUndefined();
      expect(r.json().error.status).toBe('PERMISSION_DENIED');
    }
  });

  it('CORS_ORIGINS=* allows any origin (no credentials are ever involved: the key is a header)', async () => {
    const r = await preflight(anyOrigin.app, '/v1/LogEvents', 'https://anything.example');
    expect(r.statusCode).toBe(204);
    expect(r.headers['access-control-allow-origin']).toBe('*');
    expect(r.headers['access-control-allow-credentials']).toBeUndefined();
    expect((await preflight(anyOrigin.app, '/v1/InsertSurface', 'https://anything.example')).statusCode).toBe(404);
  });

  it('without CORS_ORIGINS nothing answers cross-origin', async () => {
    for (const app of [none.app, none.alt]) {
      const r = await preflight(app, '/v1/GetTreatments', SHOP);
      expect(r.statusCode).toBe(404);
      expect(r.headers['access-control-allow-origin']).toBeUndefined();
    }
  });
});

describe('actual requests', () => {
  const getTreatments = () => ({ projectId: k.projectId, userId: 'u', surfaces: [{ surface: 'home' }] });

  it('an allowed origin gets the origin, Vary and the exposed headers on success and on every error', async () => {
    const ok = await post(listed.app, '/v1/GetTreatments', { origin: SHOP, 'x-api-key': k.delivery }, getTreatments());
    expect(ok.statusCode).toBe(200);
    expect(ok.headers['access-control-allow-origin']).toBe(SHOP);
    expect(ok.headers.vary).toMatch(/origin/i);
    expect(String(ok.headers['access-control-expose-headers']).split(/,\s*/).sort()).toEqual(['retry-after', 'x-request-id']);
    const unauthenticated = await post(listed.app, '/v1/LogEvents', { origin: SHOP, 'x-api-key': 'nope' }, { projectId: k.projectId, userId: 'u', events: [] });
    expect(unauthenticated.statusCode).toBe(401);
    expect(unauthenticated.headers['access-control-allow-origin']).toBe(SHOP);
    const invalid = await post(listed.app, '/v1/LogEvents', { origin: SHOP, 'x-api-key': k.logEvents }, { projectId: k.projectId, userId: 'u', events: [] });
    expect(invalid.statusCode).toBe(400);
    expect(invalid.headers['access-control-allow-origin']).toBe(SHOP);
    const alt = await post(listed.alt, '/v1/GetTreatments', { origin: SHOP, 'x-api-key': k.delivery }, getTreatments());
    expect(alt.statusCode).toBe(401); // the project is assigned to the base address
    expect(alt.headers['access-control-allow-origin']).toBe(SHOP);
  });

  it('a management or admin call never carries CORS headers, whatever the origin', async () => {
    const mgmt = await post(listed.app, '/v1/GetAllSurfaces', { origin: SHOP, 'x-api-key': k.management }, { projectId: k.projectId });
    expect(mgmt.statusCode).toBe(200);
    expect(mgmt.headers['access-control-allow-origin']).toBeUndefined();
    const adm = await post(listed.app, '/admin/v1/ListProjects', { origin: SHOP, authorization: `Bearer ${ADMIN_TOKEN}` }, {});
    expect(adm.statusCode).toBe(200);
    expect(adm.headers['access-control-allow-origin']).toBeUndefined();
    const star = await post(anyOrigin.app, '/v1/GetAllSurfaces', { origin: SHOP, 'x-api-key': 'x' }, { projectId: k.projectId });
    expect(star.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('an origin that is not listed, or none (a server), gets no CORS headers', async () => {
    for (const headers of [{ origin: 'https://evil.example' }, {}] as Record<string, string>[]) {
      const r = await post(listed.app, '/v1/GetTreatments', { ...headers, 'x-api-key': k.delivery }, getTreatments());
      expect(r.statusCode).toBe(200);
      expect(r.headers['access-control-allow-origin']).toBeUndefined();
      expect(r.headers['access-control-expose-headers']).toBeUndefined();
    }
  });
});
