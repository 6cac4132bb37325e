import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ClickHouseClient } from '@clickhouse/client';
import { afterAll, describe, expect, it } from 'vitest';
import { createClickhouse } from '../../shared/platform/warehouse/clickhouse.js';
import { ClickhouseWarehouse } from '../../shared/platform/warehouse/clickhouse-warehouse.js';
import { runMigrations } from '../../shared/platform/warehouse/migrations.js';
import { createRedis } from '../../shared/platform/redis/redis.js';
import { ProfileStore } from '../../shared/profiles/profile.store.js';
import { startIngestWorkers } from '../../workers/ingestion/ingest-workers.js';
import { createLogger } from '../../shared/platform/logger.js';
import { call, createProjectWithKeys, createTestApp, waitUntil } from '../helpers/context.js';
import { freePort, portAnswers } from '../helpers/child-service.js';

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

function startRedis(port: number, dir: string): ChildProcess {
  return spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--appendonly', 'yes', '--appendfsync', 'always', '--save', ''], {
    stdio: 'ignore',
  });
}

describe('Redis unavailable', () => {
  it('LogEvents answers 503 UNAVAILABLE promptly, and 200 again once Redis is back', async () => {
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), 'tds-redis-'));
    let redis = startRedis(port, dir);
    cleanups.push(async () => void redis.kill('SIGKILL'));
    await waitUntil(() => portAnswers(port), 10_000);
    const t = await createTestApp({ REDIS_URL: `redis://127.0.0.1:${port}` });
    cleanups.push(() => t.close());
    const keys = await createProjectWithKeys(t);
    const body = { projectId: keys.projectId, userId: 'u', events: [{ eventName: 'e', clientEventTimestamp: new Date().toISOString() }] };
    expect((await call(t, 'LogEvents', keys.logEvents, body)).status).toBe(200);

    redis.kill('SIGKILL');
    await waitUntil(async () => !(await portAnswers(port)), 5000);
    // Redis stays down until the answer: a request that waited for it would never answer, and
    // the test's timeout would fail it; the answer's promptness itself is not timed (shared machine).
    const down = await call(t, 'LogEvents', keys.logEvents, body);
    expect(down.status).toBe(503);
    expect(down.body.error.status).toBe('UNAVAILABLE');
    // one outage, however many 503s: the process logs it when it begins and ends, /metrics counts them
    expect((await call(t, 'LogEvents', keys.logEvents, body)).status).toBe(503);
    expect(t.ctx.redisHealth.isDown).toBe(true);
    const during = await t.ctx.metrics.render();
    expect(during).toContain('tds_unavailable_responses_total{dependency="redis"} 2');
    expect(during).toContain('tds_dependency_outages_total{dependency="redis"} 1');

    redis = startRedis(port, dir);
    await waitUntil(async () => (await call(t, 'LogEvents', keys.logEvents, body)).status === 200, 15_000, 200);
    await waitUntil(() => !t.ctx.redisHealth.isDown, 10_000, 100);
    expect(await t.ctx.metrics.render()).toContain('tds_dependency_outages_total{dependency="redis"} 1');
    // Only the accepted requests are queued: the 503 left nothing half-written.
    const counts = await t.ctx.ingestion.ingest.eventsQueue.getJobCounts('waiting');
    expect(counts.waiting).toBeGreaterThanOrEqual(2);
  }, 60_000);
});

/**
 * ClickHouse unavailable: inserts fail as a refused connection would, through a wrapper around
 * the real embedded engine (chDB has no server to stop). Jobs retry with backoff and every row
 * lands once it is back.
 */
function flakyClickhouse(real: ClickHouseClient, state: { down: boolean; failures: number }): ClickHouseClient {
  return new Proxy(real, {
    get(target, prop, receiver) {
      if (prop === 'insert' || prop === 'exec') {
        return async (args: { query?: string }) => {
          if (state.down && (prop === 'insert' || /^\s*INSERT/i.test(args.query ?? ''))) {
            state.failures++;
            const err = new Error('connect ECONNREFUSED 127.0.0.1:8123') as Error & { code: string };
            err.code = 'ECONNREFUSED';
            throw err;
          }
          return (target[prop] as (a: unknown) => Promise<unknown>).call(target, args);
        };
      }
      return Reflect.get(target, prop, receiver);
    },
  });
}

describe('ClickHouse unavailable', () => {
  it('retries jobs with backoff and stores every row once ClickHouse returns', async () => {
    const t = await createTestApp();
    cleanups.push(() => t.close());
    const keys = await createProjectWithKeys(t);
    const real = createClickhouse({ dataDir: mkdtempSync(join(tmpdir(), 'tds-chdown-')) });
    cleanups.push(() => real.close());
    await runMigrations(real);
    const state = { down: true, failures: 0 };
    const connection = createRedis(t.ctx.config.redisUrl, 'worker');
    cleanups.push(async () => void connection.disconnect());
    const workers = startIngestWorkers({
      connection,
      redisPrefix: t.ctx.config.redisPrefix,
      warehouse: new ClickhouseWarehouse(flakyClickhouse(real, state)),
      profiles: new ProfileStore(connection, t.ctx.keys),
      log: createLogger('silent'),
      now: Date.now,
      concurrency: 8,
    });
    cleanups.push(() => workers.close());

    for (let i = 0; i < 10; i++) {
      const events = Array.from({ length: 5 }, (_, e) => ({ eventName: 'e', clientEventTimestamp: new Date().toISOString(), insertId: `r${i}-${e}` }));
      expect((await call(t, 'LogEvents', keys.logEvents, { projectId: keys.projectId, userId: `u${i % 3}`, events })).status).toBe(200);
    }
    // Several rounds of failed inserts: the jobs are retried with backoff, none fails for good.
    await waitUntil(
      async () => {
        const delayed = await t.ctx.ingestion.ingest.eventsQueue.getDelayed();
        return state.failures >= 3 && delayed.some((j) => j.attemptsMade >= 2);
      },
      30_000,
      100,
    );
    expect((await t.ctx.ingestion.ingest.eventsQueue.getJobCounts('failed')).failed).toBe(0);
    state.down = false;
    await waitUntil(
      async () => {
        const c = await t.ctx.ingestion.ingest.eventsQueue.getJobCounts('waiting', 'active', 'delayed');
        return c.waiting + c.active + c.delayed === 0;
      },
      30_000,
      100,
    );
    const rs = await real.query({
      query: 'SELECT count() AS n FROM events FINAL WHERE project_id = {p:String}',
      query_params: { p: keys.projectId },
      format: 'JSONEachRow',
    });
    expect(Number((await rs.json<{ n: string }>())[0].n)).toBe(50);
    expect((await t.ctx.ingestion.ingest.eventsQueue.getJobCounts('failed')).failed).toBe(0);
  }, 90_000);
});
