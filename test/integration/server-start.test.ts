import { freePort, portAnswers } from '../helpers/child-service.js';
import { deletePrefix } from '../helpers/redis-cleanup.js';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { startService, type RunningService } from '../../api/server.js';
import { loadConfig } from '../../shared/platform/config.js';
import { createLogger } from '../../shared/platform/logger.js';
import { ADMIN_TOKEN, uniquePrefix, waitUntil } from '../helpers/context.js';

const ROOT = resolve(import.meta.dirname, '../..');
// chDB binds one data directory per process, so every service started here shares this one.
const DATA_DIR = mkdtempSync(join(tmpdir(), 'tds-start-'));

/** Prefixes used on the shared test Redis; removed once every service here has stopped. */
const prefixes: string[] = [];

afterAll(async () => {
  rmSync(DATA_DIR, { recursive: true, force: true });
  const redis = new Redis(loadConfig({}).redisUrl);
  try {
    for (const prefix of prefixes) await deletePrefix(redis, prefix);
  } finally {
    redis.disconnect();
  }
});

async function start(env: Record<string, string>): Promise<{ service: RunningService; port: number; altPort: number }> {
  const port = env.PORT ? Number(env.PORT) : await freePort();
  const altPort = await freePort();
  const prefix = uniquePrefix('start');
  prefixes.push(prefix);
  const config = loadConfig({
    ROLE: 'api',
    ALT_PORT: String(altPort),
    REDIS_PREFIX: prefix,
    DATA_DIR,
    ADMIN_TOKEN,
    LOG_LEVEL: 'silent',
    AUTO_START_REDIS: 'false',
    OPS_PORT: '0',
    ...env,
    PORT: String(port),
  });
  return { service: await startService(config, createLogger('silent')), port, altPort };
}

describe('startService with ROLE=api', { timeout: 60_000 }, () => {
  it('serves health, readiness and the API on real sockets; stop() turns readiness off, closes the ports and is idempotent', async () => {
    const { service, port, altPort } = await start({});
    try {
      const health = await fetch(`http://127.0.0.1:${port}/healthz`);
      expect(health.status).toBe(200);
      expect(await health.json()).toEqual({ status: 'ok' });
      const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
      expect(ready.status).toBe(200);
      expect((await fetch(`http://127.0.0.1:${altPort}/readyz`)).status).toBe(200);

      const created = await fetch(`http://127.0.0.1:${port}/admin/v1/CreateProject`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_TOKEN}` },
        body: JSON.stringify({ projectId: 'started' }),
      });
      expect(created.status).toBe(200);
      const onAlt = await fetch(`http://127.0.0.1:${altPort}/admin/v1/ListProjects`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
      expect(onAlt.status).toBe(404);
      expect(service.apps).toHaveLength(2);
    } finally {
      const first = service.stop();
      // Readiness goes 503 before anything else closes.
      expect(service.platform.lifecycle.ready).toBe(false);
      const second = service.stop();
      expect(second).toBe(first);
      await first;
      await service.stop();
    }
    expect(await portAnswers(port)).toBe(false);
    expect(await portAnswers(altPort)).toBe(false);
  });

  it('/readyz answers 503 UNAVAILABLE once shutdown began', async () => {
    const { service } = await start({});
    const base = service.apps[0];
    expect((await base.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    const stopping = service.stop();
    const res = await base.inject({ method: 'GET', url: '/readyz' });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toMatchObject({ error: { code: 503, status: 'UNAVAILABLE' } });
    await stopping;
  });

  it('with nothing at a local REDIS_URL, starts redis-server with an append-only file under DATA_DIR/redis and stops it on stop()', async () => {
    const redisPort = await freePort();
    const url = `redis://127.0.0.1:${redisPort}`;
    expect(await portAnswers(redisPort)).toBe(false);
    const { service, port } = await start({ REDIS_URL: url, AUTO_START_REDIS: 'true' });
    try {
      expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
      const probe = new Redis(url, { lazyConnect: true });
      await probe.connect();
      try {
        expect(await probe.config('GET', 'appendonly')).toEqual(['appendonly', 'yes']);
        expect(await probe.config('GET', 'dir')).toEqual(['dir', resolve(DATA_DIR, 'redis')]);
        expect(await probe.config('GET', 'maxmemory-policy')).toEqual(['maxmemory-policy', 'noeviction']);
      } finally {
        probe.disconnect();
      }
      expect(existsSync(join(DATA_DIR, 'redis'))).toBe(true);
    } finally {
      await service.stop();
    }
    await waitUntil(async () => !(await portAnswers(redisPort)), 10_000, 100);
    expect(await portAnswers(redisPort)).toBe(false);
  });
});

describe('startService failing part-way', { timeout: 60_000 }, () => {
  it('stops the redis-server it started when a listener cannot be opened', async () => {
    const redisPort = await freePort();
    const busy = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', () => r()));
    const busyPort = (busy.address() as { port: number }).port;
    try {
      await expect(start({ REDIS_URL: `redis://127.0.0.1:${redisPort}`, AUTO_START_REDIS: 'true', PORT: String(busyPort) })).rejects.toThrow(/EADDRINUSE/);
      await waitUntil(async () => !(await portAnswers(redisPort)), 10_000, 100);
    } finally {
      busy.close();
    }
  });
});

describe('npx tsx api/server.ts', () => {
  it('exits non-zero naming the variable when the configuration is bad', async () => {
    const env = { ...process.env, PORT: 'abc' };
    const r = await new Promise<{ code: number; stderr: string }>((done) => {
      execFile(resolve(ROOT, 'node_modules/.bin/tsx'), ['api/server.ts'], { cwd: ROOT, env, timeout: 45_000 }, (err, _out, stderr) => {
        done({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stderr });
      });
    });
    expect(r.code).not.toBe(0);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/PORT/);
    expect(r.stderr).toContain('abc');
  }, 60_000);
});
