import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { v1Operations } from '../../api/v1.routes.js';
import type { Permission } from '../../shared/projects/index.js';
import { ADMIN_TOKEN, admin, createProjectWithKeys, createTestApp, uniquePrefix, type ProjectKeys, type TestApp } from '../helpers/context.js';

/** Which permission admits which operation, and its query-parameter key form. */
const ACCESS: Record<string, { permissions: Permission[]; keyParam?: 'api_key' | 'api-key'; alt?: boolean }> = {
  GetTreatments: { permissions: ['DELIVERY'], keyParam: 'api_key', alt: true },
  GetTreatment: { permissions: ['DELIVERY', 'TREATMENT_MANAGEMENT'], keyParam: 'api_key', alt: true },
  LogTreatmentInteraction: { permissions: ['DELIVERY'], keyParam: 'api-key' },
  LogEvents: { permissions: ['LOG_EVENTS'], keyParam: 'api-key' },
  ...Object.fromEntries(
    [
      'InsertTreatment',
      'UpdateTreatment',
      'GetAllTreatments',
      'InsertTreatmentType',
      'UpdateTreatmentType',
      'GetAllTreatmentTypes',
      'InsertSurface',
      'GetAllSurfaces',
      'InsertDataField',
      'GetDataFields',
      'GetAllDataFields',
      'PreviewTreatment',
      'ExplainTreatments',
      'InsertEventSchema',
      'GetEventSchemas',
      'ListDecisions',
      'GetTreatmentReport',
      'DeleteUserData',
      'GetMutualExclusionGroups',
    ].map((op) => [op, { permissions: ['TREATMENT_MANAGEMENT'] as Permission[] }]),
  ),
};

/** Bodies that succeed for a fresh project, where the operation needs nothing else to exist. */
const VALID_BODY: Record<string, (projectId: string) => object> = {
  GetAllSurfaces: (projectId) => ({ projectId }),
  GetAllTreatmentTypes: (projectId) => ({ projectId }),
  GetAllDataFields: (projectId) => ({ projectId }),
  GetMutualExclusionGroups: (projectId) => ({ projectId }),
  GetAllTreatments: (projectId) => ({ projectId }),
  InsertSurface: (projectId) => ({ projectId, name: 'home' }),
  InsertDataField: (projectId) => ({ projectId, name: 'age', userProperty: { dataType: 'INTEGER' } }),
};

const registered = v1Operations.map((o) => o.operation);
const present = (names: string[]) => names.filter((n) => registered.includes(n));
/** The representative management operation used for the key checks. */
const MGMT = 'GetAllSurfaces';

interface Res {
  status: number;
  body: any;
}

async function post(app: FastifyInstance, operation: string, opts: { key?: string; query?: Record<string, string>; body?: unknown } = {}): Promise<Res> {
  const res = await app.inject({
    method: 'POST',
    url: `/v1/${operation}`,
    query: opts.query,
    headers: opts.key ? { 'x-api-key': opts.key } : {},
    payload: (opts.body ?? {}) as object,
  });
  return { status: res.statusCode, body: res.json() };
}

function expectD4(res: Res, code: number, status: string): void {
  expect(res.status, JSON.stringify(res.body)).toBe(code);
  expect(res.body).toEqual({ error: { code, status, message: expect.any(String), details: expect.any(Array) } });
}

/** Authenticated: whatever the outcome, it was not an authentication or permission failure. */
function expectAdmitted(res: Res): void {
  expect([401, 403], JSON.stringify(res.body)).not.toContain(res.status);
}

async function newKey(t: TestApp, projectId: string, permissions: Permission[]): Promise<{ key: string; keyId: string }> {
  const r = await admin(t, 'CreateApiKey', { projectId, permissions });
  expect(r.status).toBe(200);
  return { key: r.body.key, keyId: r.body.apiKey.keyId };
}

let t: TestApp;
let p: ProjectKeys;
let other: ProjectKeys;

beforeAll(async () => {
  t = await createTestApp();
  p = await createProjectWithKeys(t);
  other = await createProjectWithKeys(t);
});
afterAll(async () => {
  await t?.close();
});

describe('declarations', () => {
  it('the operations this file relies on are registered', () => {
    expect(registered).toEqual(expect.arrayContaining([MGMT, 'InsertSurface', 'GetTreatment']));
  });

  it.each(registered)('%s declares the permissions, key parameter and listener it must have', (name) => {
    const op = v1Operations.find((o) => o.operation === name)!;
    const want = ACCESS[name];
    expect(want, `${name} is not an operation of the spec or decisions`).toBeDefined();
    expect([...op.permissions].sort()).toEqual([...want.permissions].sort());
    expect(op.keyParam).toBe(want.keyParam);
    expect(Boolean(op.alt)).toBe(Boolean(want.alt));
  });
});

describe('missing, malformed, unknown and revoked keys: 401', () => {
  it('no key', async () => {
    const r = await post(t.app, MGMT, { body: { projectId: p.projectId } });
    expectD4(r, 401, 'UNAUTHENTICATED');
    expect(r.body.error.message).toMatch(/x-api-key/);
  });

  it.each(['abc', 'tds_', `tds_${'g'.repeat(16)}_${'a'.repeat(43)}`, `${'a'.repeat(100)}`, ' '])('malformed key %j', async (key) => {
    expectD4(await post(t.app, MGMT, { key, body: { projectId: p.projectId } }), 401, 'UNAUTHENTICATED');
  });

  it('a well-formed key nobody issued', async () => {
    const key = `tds_${randomBytes(8).toString('hex')}_${randomBytes(32).toString('base64url')}`;
    expectD4(await post(t.app, MGMT, { key, body: { projectId: p.projectId } }), 401, 'UNAUTHENTICATED');
  });

  it('an issued key id with a wrong secret', async () => {
    const keyId = p.management.split('_')[1];
    const key = `tds_${keyId}_${randomBytes(32).toString('base64url')}`;
    expectD4(await post(t.app, MGMT, { key, body: { projectId: p.projectId } }), 401, 'UNAUTHENTICATED');
  });

  it('a revoked key stops working on the next call', async () => {
    const k = await newKey(t, p.projectId, ['TREATMENT_MANAGEMENT']);
    expect((await post(t.app, MGMT, { key: k.key, body: { projectId: p.projectId } })).status).toBe(200);
    await admin(t, 'RevokeApiKey', { projectId: p.projectId, keyId: k.keyId });
    expectD4(await post(t.app, MGMT, { key: k.key, body: { projectId: p.projectId } }), 401, 'UNAUTHENTICATED');
  });

  describe('revocation on another process', () => {
    let a: TestApp;
    let b: TestApp;
    let projectId: string;
    beforeAll(async () => {
      const prefix = uniquePrefix('rev');
      a = await createTestApp({ REDIS_PREFIX: prefix });
      b = await createTestApp({ REDIS_PREFIX: prefix });
      projectId = (await createProjectWithKeys(a)).projectId;
    });
    afterAll(async () => {
      // Each close() deletes the shared prefix's keys; b goes first so a's close finds nothing of b's left.
      await b?.close();
      await a?.close();
    });

    it('a key cached by app B is refused by B right after app A revoked it', async () => {
      for (let i = 0; i < 20; i++) {
        const k = await newKey(a, projectId, ['TREATMENT_MANAGEMENT']);
        for (let j = 0; j < 2; j++) expect((await post(b.app, MGMT, { key: k.key, body: { projectId } })).status).toBe(200);
        expect((await admin(a, 'RevokeApiKey', { projectId, keyId: k.keyId })).status).toBe(200);
        // A request reaching another process always passes through its event loop's I/O phase
        // (the network); in-process inject would skip it, so yield one turn as the network would.
        await new Promise((r) => setImmediate(r));
        expectD4(await post(b.app, MGMT, { key: k.key, body: { projectId } }), 401, 'UNAUTHENTICATED');
      }
    });
  });
});

describe('project binding', () => {
  it('a key of another project: 401, with the same answer whether or not the named project exists', async () => {
    const named = await post(t.app, MGMT, { key: other.management, body: { projectId: p.projectId } });
    expectD4(named, 401, 'UNAUTHENTICATED');
    const unknown = await post(t.app, MGMT, { key: other.management, body: { projectId: 'no-such-project' } });
    expectD4(unknown, 401, 'UNAUTHENTICATED');
    expect(unknown.body.error.message).toBe(named.body.error.message);
    expect(named.body.error.message).not.toContain(p.projectId);
  });

  it.each(present(Object.keys(ACCESS)))('%s: a key of another project is 401 even with an invalid body', async (op) => {
    const key = ACCESS[op].permissions.includes('LOG_EVENTS')
      ? other.logEvents
      : ACCESS[op].permissions.includes('DELIVERY')
        ? other.delivery
        : other.management;
    expectD4(await post(t.app, op, { key, body: { projectId: p.projectId, notAField: true } }), 401, 'UNAUTHENTICATED');
  });

  it('a body without a projectId is 401 for a valid key', async () => {
    expectD4(await post(t.app, MGMT, { key: p.management, body: {} }), 401, 'UNAUTHENTICATED');
  });
});

describe('the key is checked before the body', () => {
  it.each(present(Object.keys(ACCESS)))('%s: an invalid body without a key is 401, not 400', async (op) => {
    expectD4(await post(t.app, op, { body: { projectId: 42, bogus: [1, 2] } }), 401, 'UNAUTHENTICATED');
  });

  it('a body that is not even JSON, without a key, is 401; with a valid key it is 400', async () => {
    const raw = (key?: string) =>
      t.app.inject({
        method: 'POST',
        url: '/v1/InsertSurface',
        headers: { 'content-type': 'application/json', ...(key ? { 'x-api-key': key } : {}) },
        payload: '{"projectId": ',
      });
    const without = await raw();
    expect(without.statusCode).toBe(401);
    expect(without.json().error.status).toBe('UNAUTHENTICATED');
    const withKey = await raw(p.management);
    expect(withKey.statusCode).toBe(400);
    expect(withKey.json().error.status).toBe('INVALID_ARGUMENT');
  });

  it('the same invalid body with a valid key is 400', async () => {
    const r = await post(t.app, MGMT, { key: p.management, body: { projectId: p.projectId, bogus: 1 } });
    expectD4(r, 400, 'INVALID_ARGUMENT');
    expect(r.body.error.details).toContainEqual({ field: 'bogus', description: 'unknown field' });
  });
});

describe('permission matrix', () => {
  const combos: Permission[][] = [['DELIVERY'], ['LOG_EVENTS'], ['TREATMENT_MANAGEMENT'], ['DELIVERY', 'TREATMENT_MANAGEMENT']];
  const keys = new Map<string, string>();
  let projectId: string;
  beforeAll(async () => {
    projectId = `matrix-${randomBytes(3).toString('hex')}`;
    await admin(t, 'CreateProject', { projectId });
    for (const c of combos) keys.set(c.join('+'), (await newKey(t, projectId, c)).key);
  });

  const cases = present(Object.keys(ACCESS)).flatMap((op) => combos.map((c) => [op, c.join('+'), ACCESS[op].permissions.some((x) => c.includes(x))] as const));

  it.each(cases)('%s with a {%s} key: admitted = %s', async (op, combo, admitted) => {
    const body = VALID_BODY[op]?.(projectId) ?? { projectId };
    const r = await post(t.app, op, { key: keys.get(combo), body });
    if (!admitted) {
      expectD4(r, 403, 'PERMISSION_DENIED');
      expect(r.body.error.message).toMatch(new RegExp(ACCESS[op].permissions.join('|')));
    } else if (VALID_BODY[op]) expect(r.status, JSON.stringify(r.body)).toBe(200);
    else expectAdmitted(r);
  });
});

describe('query-parameter keys', () => {
  const treatment = { projectId: '', treatmentId: '1' };
  const getTreatmentBody = () => ({ ...treatment, projectId: p.projectId });

  it('GetTreatment accepts ?api_key=', async () => {
    const r = await post(t.app, 'GetTreatment', { query: { api_key: p.delivery }, body: getTreatmentBody() });
    expectAdmitted(r);
    expectD4(r, 404, 'NOT_FOUND');
  });

  it('GetTreatment does not accept ?api-key=', async () => {
    expectD4(await post(t.app, 'GetTreatment', { query: { 'api-key': p.delivery }, body: getTreatmentBody() }), 401, 'UNAUTHENTICATED');
  });

  it('the header wins over the query parameter', async () => {
    expectD4(await post(t.app, 'GetTreatment', { key: other.delivery, query: { api_key: p.delivery }, body: getTreatmentBody() }), 401, 'UNAUTHENTICATED');
  });

  it.each(present(['GetTreatments']))('%s accepts ?api_key=', async (op) => {
    expectAdmitted(await post(t.app, op, { query: { api_key: p.delivery }, body: { projectId: p.projectId } }));
  });

  it.each(present(['LogEvents', 'LogTreatmentInteraction']))('%s accepts ?api-key= and not ?api_key=', async (op) => {
    const key = op === 'LogEvents' ? p.logEvents : p.delivery;
    expectAdmitted(await post(t.app, op, { query: { 'api-key': key }, body: { projectId: p.projectId } }));
    expectD4(await post(t.app, op, { query: { api_key: key }, body: { projectId: p.projectId } }), 401, 'UNAUTHENTICATED');
  });

  it.each(present(Object.keys(ACCESS).filter((op) => !ACCESS[op].keyParam)))('%s: neither query parameter authenticates a management operation', async (op) => {
    for (const param of ['api_key', 'api-key']) {
      expectD4(
        await post(t.app, op, { query: { [param]: p.management }, body: VALID_BODY[op]?.(p.projectId) ?? { projectId: p.projectId } }),
        401,
        'UNAUTHENTICATED',
      );
    }
  });
});

describe('delivery addresses', () => {
  let alt: ProjectKeys;
  let treatmentId: string;
  beforeAll(async () => {
    alt = await createProjectWithKeys(t, undefined, 'ALT');
    const m = alt.management;
    const ok = async (op: string, body: object) => {
      const r = await post(t.app, op, { key: m, body: { projectId: alt.projectId, ...body } });
      if (r.status !== 200) throw new Error(`${op}: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body;
    };
    await ok('InsertSurface', { name: 'home' });
    await ok('InsertTreatmentType', {
      treatmentTypeName: 'card',
      lastModifiedBy: 'auth-test',
      surfaces: [{ surfaceName: 'home' }],
      contentFieldTypes: [{ fieldName: 'title', maximumLengthAllowed: 50 }],
    });
    const inserted = await ok('InsertTreatment', {
      name: 'Welcome',
      description: 'd',
      treatmentTypeName: 'card',
      lastModifiedBy: 'auth-test',
      startTimestamp: new Date(Date.now() - 3_600_000).toISOString(),
      content: { languageAgnosticContentFields: [{ fieldName: 'title', stringValue: 'Hi' }] },
    });
    treatmentId = inserted.treatment.treatmentId;
  });

  it('management of an ALT project happens on the base address as usual', async () => {
    expect((await post(t.app, 'GetAllSurfaces', { key: alt.management, body: { projectId: alt.projectId } })).status).toBe(200);
  });

  it('GetTreatment of an ALT project on the base address: 401 naming the alternate address', async () => {
    const r = await post(t.app, 'GetTreatment', { key: alt.delivery, body: { projectId: alt.projectId, treatmentId } });
    expectD4(r, 401, 'UNAUTHENTICATED');
    expect(r.body.error.message).toMatch(/alternate/i);
    expect(r.body.error.message).toContain('GetTreatment');
  });

  it('GetTreatment of an ALT project on the alternate address works, with the header or ?api_key=', async () => {
    const byHeader = await post(t.alt, 'GetTreatment', { key: alt.delivery, body: { projectId: alt.projectId, treatmentId } });
    expect(byHeader.status, JSON.stringify(byHeader.body)).toBe(200);
    expect(byHeader.body.treatment.treatmentId).toBe(treatmentId);
    const byQuery = await post(t.alt, 'GetTreatment', { query: { api_key: alt.delivery }, body: { projectId: alt.projectId, treatmentId } });
    expect(byQuery.status).toBe(200);
  });

  it('GetTreatment of a BASE project on the alternate address: 401 naming the base address', async () => {
    const r = await post(t.alt, 'GetTreatment', { key: p.delivery, body: { projectId: p.projectId, treatmentId: '1' } });
    expectD4(r, 401, 'UNAUTHENTICATED');
    expect(r.body.error.message).toMatch(/base/i);
  });

  it.each(present(['GetTreatments']))('%s follows the same assignment', async (op) => {
    expectD4(
      await post(t.app, op, { key: alt.delivery, body: { projectId: alt.projectId, userId: 'u', surfaces: [{ surface: 'home' }] } }),
      401,
      'UNAUTHENTICATED',
    );
    expectAdmitted(await post(t.alt, op, { key: alt.delivery, body: { projectId: alt.projectId, userId: 'u', surfaces: [{ surface: 'home' }] } }));
  });

  it('moving a project to ALT takes effect on the next call', async () => {
    const moved = await createProjectWithKeys(t);
    const body = { projectId: moved.projectId, treatmentId: '1' };
    expectD4(await post(t.app, 'GetTreatment', { key: moved.delivery, body }), 404, 'NOT_FOUND');
    expect((await admin(t, 'UpdateProject', { projectId: moved.projectId, deliveryEndpoint: 'ALT' })).status).toBe(200);
    expectD4(await post(t.app, 'GetTreatment', { key: moved.delivery, body }), 401, 'UNAUTHENTICATED');
    expectD4(await post(t.alt, 'GetTreatment', { key: moved.delivery, body }), 404, 'NOT_FOUND');
  });

  const altOnly = Object.keys(ACCESS).filter((op) => ACCESS[op].alt);
  const notOnAlt = [...new Set([...Object.keys(ACCESS), ...registered])].filter((op) => !altOnly.includes(op)).map((op) => `/v1/${op}`);

  it.each([...notOnAlt, '/admin/v1/ListProjects', '/admin/v1/CreateProject', '/v1/NoSuchOperation'])(
    'the alternate listener answers 404 for %s',
    async (url) => {
      const res = await t.alt.inject({
        method: 'POST',
        url,
        headers: { 'x-api-key': alt.management, authorization: `Bearer ${ADMIN_TOKEN}` },
        payload: { projectId: alt.projectId },
      });
      expect(res.statusCode).toBe(404);
      expectD4({ status: res.statusCode, body: res.json() }, 404, 'NOT_FOUND');
    },
  );

  it('the alternate listener publishes no API document', async () => {
    expect((await t.alt.inject({ method: 'GET', url: '/openapi.json' })).statusCode).toBe(404);
    expect((await t.app.inject({ method: 'GET', url: '/openapi.json' })).statusCode).toBe(200);
  });
});
