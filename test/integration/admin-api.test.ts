import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminOperations } from '../../api/admin.routes.js';
import { ADMIN_TOKEN, admin, createTestApp, type TestApp } from '../helpers/context.js';

const RFC3339_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

function expectD4(body: any, code: number, status: string): void {
  expect(body).toEqual({ error: { code, status, message: expect.any(String), details: expect.any(Array) } });
}

let t: TestApp;
let seq = 0;
const newId = () => `proj_${++seq}-${Date.now().toString(36)}`;

beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t.close();
});

describe('CreateProject', () => {
  it('returns exactly {project:{projectId, displayName, deliveryEndpoint, createTime}} with defaults', async () => {
    const projectId = newId();
    const r = await admin(t, 'CreateProject', { projectId });
    expect(r.status).toBe(200);
    expect(Object.keys(r.body)).toEqual(['project']);
    expect(Object.keys(r.body.project).sort()).toEqual(['createTime', 'deliveryEndpoint', 'displayName', 'globalHoldoutPercentage', 'projectId']);
    expect(r.body.project).toMatchObject({ projectId, displayName: projectId, deliveryEndpoint: 'BASE' });
    expect(r.body.project.createTime).toMatch(RFC3339_UTC);
  });

  it('keeps the given display name and delivery address, and accepts snake_case input', async () => {
    const projectId = newId();
    const r = await admin(t, 'CreateProject', { project_id: projectId, display_name: 'Shop', delivery_endpoint: 'ALT' });
    expect(r.status).toBe(200);
    expect(r.body.project).toMatchObject({ projectId, displayName: 'Shop', deliveryEndpoint: 'ALT' });
  });

  it('answers 409 ALREADY_EXISTS for an existing project and leaves it unchanged', async () => {
    const projectId = newId();
    await admin(t, 'CreateProject', { projectId, displayName: 'first' });
    const r = await admin(t, 'CreateProject', { projectId, displayName: 'second' });
    expect(r.status).toBe(409);
    expectD4(r.body, 409, 'ALREADY_EXISTS');
    expect((await admin(t, 'GetProject', { projectId })).body.project.displayName).toBe('first');
  });

  it.each(['', 'a'.repeat(65), 'has space', 'dot.ted', 'slash/x', 'ünï'])('rejects projectId %j with 400', async (projectId) => {
    const r = await admin(t, 'CreateProject', { projectId });
    expect(r.status).toBe(400);
    expectD4(r.body, 400, 'INVALID_ARGUMENT');
    expect(r.body.error.details[0].field).toBe('projectId');
  });

  it('accepts 64 letters, digits, _ and -', async () => {
    const projectId = `A_b-9${'x'.repeat(59)}`;
    expect(projectId).toHaveLength(64);
    expect((await admin(t, 'CreateProject', { projectId })).status).toBe(200);
  });

  it('rejects unknown fields', async () => {
    const r = await admin(t, 'CreateProject', { projectId: newId(), colour: 'red' });
    expect(r.status).toBe(400);
    expect(r.body.error.details).toContainEqual({ field: 'colour', description: 'unknown field' });
  });
});

describe('UpdateProject, GetProject, ListProjects', () => {
  it('updates only the fields given', async () => {
    const projectId = newId();
    const created = (await admin(t, 'CreateProject', { projectId, displayName: 'old' })).body.project;
    const r = await admin(t, 'UpdateProject', { projectId, deliveryEndpoint: 'ALT' });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ project: { ...created, deliveryEndpoint: 'ALT' } });
    const r2 = await admin(t, 'UpdateProject', { projectId, displayName: 'new' });
    expect(r2.body.project).toEqual({ ...created, deliveryEndpoint: 'ALT', displayName: 'new' });
    expect((await admin(t, 'GetProject', { projectId })).body).toEqual(r2.body);
  });

  it('UpdateProject and GetProject of an unknown project: 404 NOT_FOUND', async () => {
    const u = await admin(t, 'UpdateProject', { projectId: 'nope-unknown', displayName: 'x' });
    expect(u.status).toBe(404);
    expectD4(u.body, 404, 'NOT_FOUND');
    const g = await admin(t, 'GetProject', { projectId: 'nope-unknown' });
    expect(g.status).toBe(404);
    expectD4(g.body, 404, 'NOT_FOUND');
  });

  it('ListProjects lists every project in projectId order', async () => {
    const a = `a-${newId()}`;
    const b = `b-${newId()}`;
    await admin(t, 'CreateProject', { projectId: b });
    await admin(t, 'CreateProject', { projectId: a });
    const r = await admin(t, 'ListProjects', {});
    expect(r.status).toBe(200);
    const ids = r.body.projects.map((p: any) => p.projectId);
    expect(ids).toEqual([...ids].sort());
    expect(ids).toEqual(expect.arrayContaining([a, b]));
    expect(r.body.projects.find((p: any) => p.projectId === a)).toEqual({
      projectId: a,
      displayName: a,
      deliveryEndpoint: 'BASE',
      createTime: expect.stringMatching(RFC3339_UTC),
      globalHoldoutPercentage: 0,
    });
  });
});

describe('API keys', () => {
  let projectId: string;
  beforeAll(async () => {
    projectId = newId();
    await admin(t, 'CreateProject', { projectId });
  });

  it('CreateApiKey returns {apiKey:{keyId, projectId, permissions, description, createTime}, key} with a ≥128-bit secret', async () => {
    const r = await admin(t, 'CreateApiKey', { projectId, permissions: ['DELIVERY', 'TREATMENT_MANAGEMENT'], description: 'web shop' });
    expect(r.status).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(['apiKey', 'key']);
    expect(Object.keys(r.body.apiKey).sort()).toEqual(['createTime', 'description', 'keyId', 'permissions', 'projectId']);
    expect(r.body.apiKey).toMatchObject({ projectId, permissions: ['DELIVERY', 'TREATMENT_MANAGEMENT'], description: 'web shop' });
    expect(r.body.apiKey.createTime).toMatch(RFC3339_UTC);
    const secret = (r.body.key as string).split('_').slice(2).join('_');
    expect(r.body.key).toContain(r.body.apiKey.keyId);
    expect(Buffer.from(secret, 'base64url').length).toBeGreaterThanOrEqual(16);
  });

  it('issues a different key every time', async () => {
    const a = await admin(t, 'CreateApiKey', { projectId, permissions: ['DELIVERY'] });
    const b = await admin(t, 'CreateApiKey', { projectId, permissions: ['DELIVERY'] });
    expect(a.body.key).not.toBe(b.body.key);
    expect(a.body.apiKey.keyId).not.toBe(b.body.apiKey.keyId);
    expect(a.body.apiKey.description).toBe('');
  });

  it.each([
    ['LOG_EVENTS', 'DELIVERY'],
    ['TREATMENT_MANAGEMENT', 'LOG_EVENTS'],
    ['DELIVERY', 'LOG_EVENTS', 'TREATMENT_MANAGEMENT'],
  ])('refuses LOG_EVENTS combined with another permission: %j → 400 on permissions', async (...permissions) => {
    const r = await admin(t, 'CreateApiKey', { projectId, permissions });
    expect(r.status).toBe(400);
    expectD4(r.body, 400, 'INVALID_ARGUMENT');
    expect(r.body.error.details[0].field).toBe('permissions');
  });

  it.each([[[]], [['ADMIN']], [['DELIVERY', 'DELIVERY']]])('refuses permissions %j with 400', async (permissions) => {
    const r = await admin(t, 'CreateApiKey', { projectId, permissions });
    expect(r.status).toBe(400);
    expectD4(r.body, 400, 'INVALID_ARGUMENT');
  });

  it('CreateApiKey for an unknown project: 404', async () => {
    const r = await admin(t, 'CreateApiKey', { projectId: 'nope-unknown', permissions: ['DELIVERY'] });
    expect(r.status).toBe(404);
    expectD4(r.body, 404, 'NOT_FOUND');
  });

  it('ListApiKeys never shows the secret or its hash', async () => {
    const p = newId();
    await admin(t, 'CreateProject', { projectId: p });
    const created = await admin(t, 'CreateApiKey', { projectId: p, permissions: ['LOG_EVENTS'], description: 'events' });
    const secret = (created.body.key as string).split('_').slice(2).join('_');
    const r = await admin(t, 'ListApiKeys', { projectId: p });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ apiKeys: [created.body.apiKey] });
    const raw = JSON.stringify(r.body);
    expect(raw).not.toContain(secret);
    expect(raw).not.toMatch(/secret|hash|"key"/i);
  });

  it('ListApiKeys of an unknown project: 404', async () => {
    expect((await admin(t, 'ListApiKeys', { projectId: 'nope-unknown' })).status).toBe(404);
  });

  it('RevokeApiKey sets revokeTime, shows in ListApiKeys, and is idempotent', async () => {
    const p = newId();
    await admin(t, 'CreateProject', { projectId: p });
    const keep = (await admin(t, 'CreateApiKey', { projectId: p, permissions: ['DELIVERY'] })).body.apiKey;
    const gone = (await admin(t, 'CreateApiKey', { projectId: p, permissions: ['DELIVERY'] })).body.apiKey;
    const r = await admin(t, 'RevokeApiKey', { projectId: p, keyId: gone.keyId });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ apiKey: { ...gone, revokeTime: expect.stringMatching(RFC3339_UTC) } });
    expect(Date.parse(r.body.apiKey.revokeTime)).toBeGreaterThanOrEqual(Date.parse(gone.createTime));
    const again = await admin(t, 'RevokeApiKey', { projectId: p, keyId: gone.keyId });
    expect(again.body).toEqual(r.body);
    const list = await admin(t, 'ListApiKeys', { projectId: p });
    expect(list.body.apiKeys).toEqual(expect.arrayContaining([keep, r.body.apiKey]));
    expect(list.body.apiKeys).toHaveLength(2);
  });

  it('RevokeApiKey of an unknown key, or of a key named under another project: 404', async () => {
    const other = newId();
    await admin(t, 'CreateProject', { projectId: other });
    const k = (await admin(t, 'CreateApiKey', { projectId, permissions: ['DELIVERY'] })).body.apiKey;
    const wrong = await admin(t, 'RevokeApiKey', { projectId: other, keyId: k.keyId });
    expect(wrong.status).toBe(404);
    expectD4(wrong.body, 404, 'NOT_FOUND');
    expect((await admin(t, 'RevokeApiKey', { projectId, keyId: '0123456789abcdef' })).status).toBe(404);
    const still = (await admin(t, 'ListApiKeys', { projectId })).body.apiKeys.find((x: any) => x.keyId === k.keyId);
    expect(still.revokeTime).toBeUndefined();
  });
});

describe('ListChanges', () => {
  let projectId: string;
  let keyId: string;
  beforeAll(async () => {
    projectId = newId();
    await admin(t, 'CreateProject', { projectId, displayName: 'v0' });
    for (const v of ['v1', 'v2', 'v3']) await admin(t, 'UpdateProject', { projectId, displayName: v });
    keyId = (await admin(t, 'CreateApiKey', { projectId, permissions: ['DELIVERY'] })).body.apiKey.keyId;
    await admin(t, 'RevokeApiKey', { projectId, keyId });
  });

  it('lists the audit trail newest first with actor, before and after', async () => {
    const r = await admin(t, 'ListChanges', { projectId });
    expect(r.status).toBe(200);
    expect(r.body.nextPageToken).toBeUndefined();
    const ops = r.body.changes.map((c: any) => c.operation);
    expect(ops).toEqual(['RevokeApiKey', 'CreateApiKey', 'UpdateProject', 'UpdateProject', 'UpdateProject', 'CreateProject']);
    const [revoke, create, upd3, , , created] = r.body.changes;
    expect(upd3).toMatchObject({
      actor: 'admin-api',
      resourceKind: 'project',
      resourceId: projectId,
      before: { displayName: 'v2' },
      after: { displayName: 'v3' },
    });
    expect(created.before).toBeNull();
    expect(created.after).toMatchObject({ projectId, displayName: 'v0' });
    expect(create).toMatchObject({ resourceKind: 'apiKey', resourceId: keyId, before: null });
    expect(revoke.before.revokeTime).toBeUndefined();
    expect(revoke.after.revokeTime).toMatch(RFC3339_UTC);
    expect(JSON.stringify(r.body)).not.toMatch(/secretHash/);
    for (const c of r.body.changes) expect(c.time).toMatch(RFC3339_UTC);
  });

  it('pages with pageSize and pageToken, each change exactly once, the last page without a token', async () => {
    const all = (await admin(t, 'ListChanges', { projectId })).body.changes.map((c: any) => c.changeId);
    const seen: string[] = [];
    let pageToken: string | undefined;
    let pages = 0;
    do {
      const r = await admin(t, 'ListChanges', { projectId, pageSize: 4, ...(pageToken ? { pageToken } : {}) });
      expect(r.status).toBe(200);
      expect(r.body.changes.length).toBeLessThanOrEqual(4);
      seen.push(...r.body.changes.map((c: any) => c.changeId));
      pageToken = r.body.nextPageToken;
      pages++;
    } while (pageToken);
    expect(pages).toBe(2);
    expect(seen).toEqual(all);
  });

  it('rejects a bad pageSize or pageToken with 400, an unknown project with 404', async () => {
    expect((await admin(t, 'ListChanges', { projectId, pageSize: 0 })).status).toBe(400);
    expect((await admin(t, 'ListChanges', { projectId, pageSize: 1001 })).status).toBe(400);
    expect((await admin(t, 'ListChanges', { projectId, pageToken: 'abc' })).status).toBe(400);
    expect((await admin(t, 'ListChanges', { projectId: 'nope-unknown' })).status).toBe(404);
  });

  it('keeps each project’s trail apart', async () => {
    const other = newId();
    await admin(t, 'CreateProject', { projectId: other });
    const r = await admin(t, 'ListChanges', { projectId: other });
    expect(r.body.changes.map((c: any) => c.resourceId)).toEqual([other]);
  });
});

describe('admin token', () => {
  const ops = adminOperations.map((o) => o.operation);

  it.each(ops)('%s answers 401 UNAUTHENTICATED without a token or with a wrong one', async (op) => {
    for (const authorization of [undefined, 'Bearer wrong-token-0123456789', `Basic ${ADMIN_TOKEN}`, ADMIN_TOKEN, `Bearer ${ADMIN_TOKEN}x`]) {
      const res = await t.app.inject({ method: 'POST', url: `/admin/v1/${op}`, headers: authorization ? { authorization } : {}, payload: { projectId: 'x' } });
      expect(res.statusCode, String(authorization)).toBe(401);
      expectD4(res.json(), 401, 'UNAUTHENTICATED');
    }
  });

  it('is checked before the body: an invalid body without a token is 401, not 400', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/admin/v1/CreateProject', payload: { projectId: 'bad id', junk: 1 } });
    expect(res.statusCode).toBe(401);
  });

  it('admin routes do not exist on the alternate listener', async () => {
    const res = await t.alt.inject({ method: 'POST', url: '/admin/v1/ListProjects', headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: {} });
    expect(res.statusCode).toBe(404);
  });

  describe('without ADMIN_TOKEN configured', () => {
    let bare: TestApp;
    beforeAll(async () => {
      bare = await createTestApp({ ADMIN_TOKEN: '' });
    });
    afterAll(async () => {
      await bare.close();
    });

    it.each(ops)('%s answers 404 NOT_FOUND, with or without a token', async (op) => {
      expect(bare.ctx.config.adminToken).toBeUndefined();
      for (const headers of [{}, { authorization: `Bearer ${ADMIN_TOKEN}` }]) {
        const res = await bare.app.inject({ method: 'POST', url: `/admin/v1/${op}`, headers, payload: {} });
        expect(res.statusCode).toBe(404);
        expectD4(res.json(), 404, 'NOT_FOUND');
      }
    });
  });
});
