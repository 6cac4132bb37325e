import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createProjectWithKeys, createTestApp, type ProjectKeys, type TestApp } from '../helpers/context.js';
import { MAX_CACHED_KEYS, MAX_UNKNOWN_KEYS } from '../../shared/projects/authenticator.service.js';
import { MAX_ADDRESS_BUCKETS, MAX_KEY_BUCKETS, RequestLimits } from '../../shared/platform/limits/request-limits.js';

/** No store grows without bound: the in-memory key caches under a flood of random key ids. */
let t: TestApp;
let p: ProjectKeys;

beforeAll(async () => {
  t = await createTestApp();
  p = await createProjectWithKeys(t);
});
afterAll(async () => {
  await t?.close();
});

const randomKey = () => `tds_${randomBytes(8).toString('hex')}_${randomBytes(32).toString('base64url')}`;

describe('key caches', () => {
  it('stay bounded after 100,000 random unknown key ids, and valid keys keep working', async () => {
    expect((await call(t, 'GetAllSurfaces', p.management, { projectId: p.projectId })).status).toBe(200);
    // through the HTTP route for a start, then straight at the authenticator (same code, less overhead)
    for (let i = 0; i < 500; i++) expect((await call(t, 'GetAllSurfaces', randomKey(), { projectId: p.projectId })).status).toBe(401);
    const total = 100_000;
    for (let done = 500; done < total; done += 1000) {
      const { auth } = t.ctx.projects;
      const batch = Array.from({ length: Math.min(1000, total - done) }, () =>
        auth.verifyKey(randomKey()).then(
          () => 'admitted',
          (e: Error) => e.name,
        ),
      );
      expect(new Set(await Promise.all(batch))).toEqual(new Set(['ApiError']));
    }
    const sizes = t.ctx.projects.auth.cacheSizes;
    expect(sizes.unknownKeys).toBeLessThanOrEqual(MAX_UNKNOWN_KEYS);
    expect(sizes.keys).toBeLessThanOrEqual(MAX_CACHED_KEYS);
    // only keys that verified are remembered as presented, and the flood evicted none of them
    expect(sizes.verified).toBe(1);
    expect(sizes.keys).toBe(1);
    expect((await call(t, 'GetAllSurfaces', p.management, { projectId: p.projectId })).status).toBe(200);
    expect((await call(t, 'GetAllSurfaces', p.delivery, { projectId: p.projectId })).status).toBe(403);
  }, 120_000);

  it('a revocation still empties the caches: the revoked key is refused at once', async () => {
    const keyId = p.logEvents.split('_')[1];
    const body = { projectId: p.projectId, userId: 'u', events: [{ eventName: 'e', clientEventTimestamp: new Date().toISOString() }] };
    expect((await call(t, 'LogEvents', p.logEvents, body)).status).toBe(200);
    const revoked = await t.app.inject({
      method: 'POST',
      url: '/admin/v1/RevokeApiKey',
      headers: { authorization: 'Bearer test-admin-token-0123456789' },
      payload: { projectId: p.projectId, keyId },
    });
    expect(revoked.statusCode, revoked.body).toBe(200);
    expect((await call(t, 'LogEvents', p.logEvents, body)).status).toBe(401);
  });

  it('the per-key and per-address buckets are bounded too', () => {
    const limits = new RequestLimits({ rateLimitPerKey: 5, rateLimitUnauthenticated: 5 });
    for (let i = 0; i < 150_000; i++) limits.authenticationAttempt(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
    for (let i = 0; i < 150_000; i++) limits.keyRequest({ keyId: `k${i}` });
    expect(limits.sizes.addresses).toBe(MAX_ADDRESS_BUCKETS);
    expect(limits.sizes.keys).toBeLessThanOrEqual(MAX_KEY_BUCKETS);
  });
});
