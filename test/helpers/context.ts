import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { loadConfig, type Config } from '../../shared/platform/config.js';
import { createLogger } from '../../shared/platform/logger.js';
import { waitForRedis } from '../../shared/platform/redis/redis.js';
import type { Permission } from '../../shared/projects/index.js';
import { buildApp } from '../../api/app.js';
import { openApiServices, type ApiServices } from '../../api/compose-api.js';
import { deletePrefix } from './redis-cleanup.js';

export const ADMIN_TOKEN = 'test-admin-token-0123456789';

/** A unique Redis key prefix per test file, so tests never see each other's state. */
export function uniquePrefix(label = 't'): string {
  return `test-${label}-${randomBytes(4).toString('hex')}`;
}

/**
 * Tests send hundreds of deliberately failed authentications from one address (inject's
 * 127.0.0.1), so the request-rate limits of D45 are lifted unless a test sets them
 * (test/security/rate-limits.test.ts does).
 */
const UNLIMITED = { RATE_LIMIT_PER_KEY: '10000000', RATE_LIMIT_UNAUTHENTICATED: '1000000' };

export function testConfig(overrides: Record<string, string> = {}): Readonly<Config> {
  return loadConfig({ REDIS_PREFIX: uniquePrefix(), ADMIN_TOKEN, LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent', AUTO_START_REDIS: 'false', OPS_PORT: '0', ...UNLIMITED, ...overrides });
}

export interface TestApp {
  ctx: ApiServices;
  app: FastifyInstance;
  alt: FastifyInstance;
  /** Mutable clock: tests move time with `clock.set(ms)`. */
  clock: { now: number; set(ms: number): void };
  close(): Promise<void>;
}

/** Builds both listeners' apps (inject-only, no sockets) against the real Redis. */
export async function createTestApp(overrides: Record<string, string> = {}, opts: { fixedNow?: number } = {}): Promise<TestApp> {
  const config = testConfig(overrides);
  const clock = { now: opts.fixedNow ?? Date.now(), set(ms: number) { this.now = ms; } };
  const useReal = opts.fixedNow === undefined;
  const api = openApiServices(config, createLogger(config.logLevel), { now: () => (useReal ? Date.now() : clock.now) });
  const ctx = api.services;
  await waitForRedis(ctx.redis, 5000);
  ctx.lifecycle.ready = true;
  const app = await buildApp(ctx, { listener: 'base' });
  const alt = await buildApp(ctx, { listener: 'alt' });
  await waitUntil(() => ctx.bus.isListening, 5000);
  return {
    ctx,
    app,
    alt,
    clock,
    async close() {
      await app.close();
      await alt.close();
      await deletePrefix(ctx.redis, config.redisPrefix);
      await api.close();
    },
  };
}

export async function waitUntil(cond: () => boolean | Promise<boolean>, timeoutMs: number, stepMs = 20): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, stepMs));
  }
  throw new Error(`condition not met within ${timeoutMs} ms`);
}

export async function admin(t: TestApp, operation: string, body: unknown): Promise<{ status: number; body: any }> {
  const res = await t.app.inject({ method: 'POST', url: `/admin/v1/${operation}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: body as object });
  return { status: res.statusCode, body: res.json() };
}

/** POST /v1/<operation> with `x-api-key`; `app` defaults to the base listener. */
export async function call(t: TestApp, operation: string, key: string | undefined, body: unknown, app?: FastifyInstance): Promise<{ status: number; body: any }> {
  const res = await (app ?? t.app).inject({ method: 'POST', url: `/v1/${operation}`, headers: key ? { 'x-api-key': key } : {}, payload: body as object });
  return { status: res.statusCode, body: res.json() };
}

export interface ProjectKeys {
  projectId: string;
  management: string;
  delivery: string;
  logEvents: string;
}

/** Creates a project with one key per permission. */
export async function createProjectWithKeys(t: TestApp, projectId = `p${randomBytes(3).toString('hex')}`, deliveryEndpoint: 'BASE' | 'ALT' = 'BASE'): Promise<ProjectKeys> {
  const p = await admin(t, 'CreateProject', { projectId, deliveryEndpoint });
  if (p.status !== 200) throw new Error(`CreateProject failed: ${JSON.stringify(p.body)}`);
  const key = async (permissions: Permission[]) => {
    const r = await admin(t, 'CreateApiKey', { projectId, permissions });
    if (r.status !== 200) throw new Error(`CreateApiKey failed: ${JSON.stringify(r.body)}`);
    return r.body.key as string;
  };
  return { projectId, management: await key(['TREATMENT_MANAGEMENT']), delivery: await key(['DELIVERY']), logEvents: await key(['LOG_EVENTS']) };
}
