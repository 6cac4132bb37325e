import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../api/app.js';
import { waitForRedis } from '../../shared/platform/redis/redis.js';
import { createLogger } from '../../shared/platform/logger.js';
import { openApiServices, type ApiRole, type ApiServices } from '../../api/compose-api.js';
import { ADMIN_TOKEN, testConfig, waitUntil } from '../helpers/context.js';
import { deletePrefix } from '../helpers/redis-cleanup.js';

/**
 * Log lines of failed requests never carry command arguments (key names with user ids, script
 * arguments with whole records) or secrets (key records' secretHash, keys in headers or query
 * strings, the admin token), whatever the shape of the error. The service logs at debug into a
 * captured stream; Redis errors are provoked for real (keys of the wrong type).
 */
const lines: string[] = [];
const sink = new Writable({
  write(chunk, _enc, done) {
    lines.push(String(chunk));
    done();
  },
});
const logs = (): string => lines.join('');

let api: ApiRole;
let ctx: ApiServices;
let app: FastifyInstance;
const projectId = 'loghygiene';
const USER = 'user-PRIVATE-4711';
let deliveryKey: string;

const adminCall = (operation: string, body: unknown) =>
  app.inject({ method: 'POST', url: `/admin/v1/${operation}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: body as object });

beforeAll(async () => {
  const config = testConfig({ LOG_LEVEL: 'debug' });
  api = openApiServices(config, createLogger('debug', 'tds', { destination: sink }));
  ctx = api.services;
  await waitForRedis(ctx.redis, 5000);
  ctx.lifecycle.ready = true;
  app = await buildApp(ctx, { listener: 'base' });
  await waitUntil(() => ctx.bus.isListening, 5000);
  expect((await adminCall('CreateProject', { projectId })).statusCode).toBe(200);
  deliveryKey = (await adminCall('CreateApiKey', { projectId, permissions: ['DELIVERY'] })).json().key;
});

afterAll(async () => {
  await app?.close();
  await deletePrefix(ctx.redis, ctx.config.redisPrefix);
  await api.close();
});

function expectClean(extra: string[] = []): void {
  const text = logs();
  for (const secret of [deliveryKey, deliveryKey.split('_').slice(2).join('_'), ADMIN_TOKEN, USER, ...extra]) expect(text).not.toContain(secret);
  // a field named secretHash may appear, censored, never with a value
  expect(text).not.toMatch(/"secretHash\\?"\s*:\s*\\?"(?!\[redacted\])/i);
  // no SHA-256 in hex (a secret hash) anywhere
  expect(text).not.toMatch(/[0-9a-f]{64}/);
}

describe('log hygiene', () => {
  it('a Redis error while reading a profile (key of the wrong type) logs no key name, no user id', async () => {
    await ctx.redis.set(ctx.keys.profile(projectId, USER), 'not a hash');
    lines.length = 0;
    const res = await adminCall('GetUserProfile', { projectId, userId: USER });
    expect(res.statusCode).toBeGreaterThanOrEqual(400);
    await waitUntil(() => /request failed|request rejected/.test(logs()), 5000);
    expect(logs()).toMatch(/WRONGTYPE/);
    expectClean();
  });

  it('a Redis error inside a write script (CreateApiKey) logs neither its arguments nor the record with its secretHash', async () => {
    await ctx.redis.set(ctx.keys.projectApiKeys(projectId), 'not a hash');
    lines.length = 0;
    const res = await adminCall('CreateApiKey', { projectId, permissions: ['DELIVERY'] });
    expect(res.statusCode).toBeGreaterThanOrEqual(400);
    await waitUntil(() => /request failed|request rejected/.test(logs()), 5000);
    expect(logs()).toMatch(/WRONGTYPE|wrong kind/i);
    expect(logs()).toMatch(/"command":\{"name":"\w+"\}/);
    expectClean();
    await ctx.redis.del(ctx.keys.projectApiKeys(projectId));
  });

  it('keys in a query string, in the header and a bearer token never reach a line, on success or failure', async () => {
    lines.length = 0;
    for (const param of ['api_key', 'api-key']) {
      const ok = await app.inject({
        method: 'POST',
        url: `/v1/GetTreatments?${param}=${encodeURIComponent(deliveryKey)}`,
        payload: { projectId, userId: 'u', surfaces: [{ surface: 'nowhere' }] },
      });
      expect(ok.statusCode).toBeLessThan(500);
      const bad = await app.inject({
        method: 'POST',
        url: `/v1/GetTreatments?${param}=${encodeURIComponent(deliveryKey)}`,
        payload: '{"projectId": ' + JSON.stringify(deliveryKey),
        headers: { 'content-type': 'application/json' },
      });
      expect(bad.statusCode).toBeGreaterThanOrEqual(400);
      expect(bad.statusCode).toBeLessThan(500);
    }
    const wrongProject = await app.inject({
      method: 'POST',
      url: '/v1/GetTreatments',
      headers: { 'x-api-key': deliveryKey },
      payload: { projectId: 'other', userId: 'u', surfaces: [{ surface: 's' }] },
    });
    expect(wrongProject.statusCode).toBe(401);
    const badAdmin = await app.inject({ method: 'POST', url: '/admin/v1/ListProjects', headers: { authorization: `Bearer ${ADMIN_TOKEN}x` }, payload: {} });
    expect(badAdmin.statusCode).toBe(401);
    expect(logs()).toMatch(/request rejected|request completed/);
    expectClean([`${ADMIN_TOKEN}x`]);
  });

  it('any error shape: command.args, args, nested causes, aggregated errors, secrets as fields or in messages', () => {
    const secret = 'tds_0123456789abcdef_' + 'S'.repeat(43);
    const reply = Object.assign(new Error('WRONGTYPE Operation against a key holding the wrong kind of value'), {
      command: { name: 'evalsha', args: ['sha', '1', `tds:u:{p:${USER}}:profile`, '{"secretHash":"' + 'a'.repeat(64) + '"}'] },
    });
    const nested = new Error(`outer failure for ?api_key=${secret}`, { cause: new Error('middle', { cause: reply }) });
    const aggregate = new AggregateError([reply, Object.assign(new Error('x'), { args: [USER] })], 'many');
    const plain = { args: [USER], secretHash: 'b'.repeat(64), headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, apiKey: secret };
    lines.length = 0;
    ctx.log.error({ err: nested }, 'nested');
    ctx.log.error({ err: aggregate }, 'aggregate');
    ctx.log.error({ err: plain }, 'plain object');
    ctx.log.error({ error: reply }, 'under error');
    ctx.log.error(reply, 'as the first argument');
    ctx.log.warn({ err: new Error(`authorization: Bearer ${ADMIN_TOKEN}`) }, 'bearer in a message');
    ctx.log.warn({ err: new Error('cannot reach redis://default:hunter2-password@10.0.0.5:6379/0') }, 'credentials in a URL');
    expect(lines).toHaveLength(7);
    expect(logs()).toContain('WRONGTYPE');
    expectClean([secret, secret.slice(-43), 'hunter2-password']);
  });
});
