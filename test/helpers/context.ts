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
 * 127.0.0.1), so the request-rate limits are lifted unless a test sets them
 * (test/security/rate-limits.test.ts does). Load shedding is off too: a test process runs the
 * API beside the workers and the embedded ClickHouse on one event loop, on a machine shared with
 * other test files, so its lag says nothing about overload (test/integration/overload.test.ts
 * turns it on).
 */
export const UNLIMITED = { RATE_LIMIT_PER_KEY: '10000000', RATE_LIMIT_UNAUTHENTICATED: '1000000', OVERLOAD_MAX_LAG_MS: '0', OVERLOAD_MAX_IN_FLIGHT: '0' };

export function testConfig(overrides: Record<string, string> = {}): Readonly<Config> {
  return loadConfig({
    REDIS_PREFIX: uniquePrefix(),
    ADMIN_TOKEN,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    AUTO_START_REDIS: 'false',
    OPS_PORT: '0',
    ...UNLIMITED,
    ...overrides,
  });
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
  const clock = {
    now: opts.fixedNow ?? Date.now(),
    set(ms: number) {
      this.now = ms;
    },
  };
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

/**
 * `promise`, or a failure naming `what` if it has not settled within `timeoutMs`: a generous
 * deadline that says the thing happens at all, never how fast (the machine is shared).
 */
export async function within<T>(promise: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Sends again, a second apart, while the answer is 503: the service answers so when Redis is
 * slower than its enqueue timeout (a loaded machine) and asks clients to retry. Dropped or
 * doubled events still show: the retried requests carry the same insertIds.
 */
export async function retryUnavailable<T extends { status: number }>(send: () => Promise<T>, attempts = 30): Promise<T> {
  let res = await send();
  for (let i = 1; i < attempts && res.status === 503; i++) {
    await new Promise((r) => setTimeout(r, 1000));
    res = await send();
  }
  return res;
}

/** The body of a 200 answer; any other answer fails the test, showing `what` and the answer. */
export async function okBody(answer: Promise<{ status: number; body: any }>, what: string): Promise<any> {
  const res = await answer;
  if (res.status !== 200) throw new Error(`${what} failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** `call` whose answer must be 200: its body. */
export function callOk(t: TestApp, operation: string, key: string | undefined, body: unknown): Promise<any> {
  return okBody(call(t, operation, key, body), operation);
}

export async function admin(t: TestApp, operation: string, body: unknown): Promise<{ status: number; body: any }> {
  const res = await t.app.inject({
    method: 'POST',
    url: `/admin/v1/${operation}`,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    payload: body as object,
  });
  return { status: res.statusCode, body: res.json() };
}

/** POST /v1/<operation> with `x-api-key`; `app` defaults to the base listener. */
export async function call(
  t: TestApp,
  operation: string,
  key: string | undefined,
  body: unknown,
  app?: FastifyInstance,
): Promise<{ status: number; body: any }> {
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
export async function createProjectWithKeys(
  t: TestApp,
  projectId = `p${randomBytes(3).toString('hex')}`,
  deliveryEndpoint: 'BASE' | 'ALT' = 'BASE',
): Promise<ProjectKeys> {
  const p = await admin(t, 'CreateProject', { projectId, deliveryEndpoint });
  if (p.status !== 200) throw new Error(`CreateProject failed: ${JSON.stringify(p.body)}`);
  const key = async (permissions: Permission[]) => {
    const r = await admin(t, 'CreateApiKey', { projectId, permissions });
    if (r.status !== 200) throw new Error(`CreateApiKey failed: ${JSON.stringify(r.body)}`);
    return r.body.key as string;
  };
  return { projectId, management: await key(['TREATMENT_MANAGEMENT']), delivery: await key(['DELIVERY']), logEvents: await key(['LOG_EVENTS']) };
}
