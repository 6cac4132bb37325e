import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClickhouse } from '../../shared/platform/warehouse/clickhouse.js';
import { createTestApp, createProjectWithKeys, call, uniquePrefix, waitUntil, type TestApp } from '../helpers/context.js';
import { spawnService, type ChildService } from '../helpers/child-service.js';

/**
 * D34: a worker process killed with SIGKILL in the middle of batches, then restarted, leaves
 * every event stored exactly once and every profile correct. The API runs in this process; the
 * workers (which own the embedded ClickHouse) run in a child process that is killed twice.
 */
const USERS = 20;
const REQUESTS_PER_USER = 15;
const EVENTS_PER_REQUEST = 20;

let t: TestApp;
let projectId: string;
let logKey: string;
let countField: string;
let firstField: string;
const prefix = uniquePrefix('crash');
const dataDir = mkdtempSync(join(tmpdir(), 'tds-crash-'));
const childEnv = { REDIS_PREFIX: prefix, DATA_DIR: dataDir, ROLE: 'workers', WORKER_LOCK_MS: '2000', WORKER_CONCURRENCY: '16', AUTO_START_REDIS: 'false' };
let child: ChildService | undefined;

beforeAll(async () => {
  t = await createTestApp({ REDIS_PREFIX: prefix });
  const keys = await createProjectWithKeys(t);
  projectId = keys.projectId;
  logKey = keys.logEvents;
  // Counters applied incrementally by the workers: a job applied twice would show here.
  const fields = await call(t, 'GetDataFields', keys.management, {
    projectId,
    dataFieldParams: [
      { eventDataFieldParams: { eventSchemaName: 'purchase', dailyCountAggregation: { windowName: 'LAST_365D' } } },
      { eventDataFieldParams: { eventSchemaName: 'purchase', firstTimestampAggregation: {} } },
    ],
  });
  [countField, firstField] = fields.body.dataFields.map((f: { dataFieldId: string }) => f.dataFieldId);
}, 60_000);

afterAll(async () => {
  child?.proc.kill('SIGKILL');
  await t?.close();
});

async function pending(): Promise<number> {
  const c = await t.ctx.ingest.eventsQueue.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
  return Object.values(c).reduce((a, b) => a + b, 0);
}

describe('worker killed mid-batch', () => {
  it('stores every event exactly once and every profile correctly after two SIGKILLs', async () => {
    // Every request repeats one insertId-carrying event of the user's previous request: the
    // duplicates must collapse. Each request sets `last` to its own sequence number, sent out of
    // order, so last-write-wins must pick the highest timestamp whatever order jobs ran in.
    const base = Date.now() - 30 * 86_400_000;
    const expectedLast = new Map<string, number>();
    const sends: Promise<{ status: number }>[] = [];
    for (let u = 0; u < USERS; u++) {
      const userId = `user-${u}`;
      const order = Array.from({ length: REQUESTS_PER_USER }, (_, i) => i).reverse();
      for (const r of order) {
        const events = Array.from({ length: EVENTS_PER_REQUEST }, (_, e) => ({
          eventName: 'purchase',
          clientEventTimestamp: new Date(base + r * 60_000 + e).toISOString(),
          insertId: e === 0 && r > 0 ? `${userId}-${r - 1}-1` : `${userId}-${r}-${e}`,
          userProperties: e === EVENTS_PER_REQUEST - 1 ? { last: { longValue: String(r) } } : undefined,
        }));
        sends.push(call(t, 'LogEvents', logKey, { projectId, userId, events }));
      }
      expectedLast.set(userId, REQUESTS_PER_USER - 1);
    }
    const answers = await Promise.all(sends);
    expect(answers.every((a) => a.status === 200)).toBe(true);
    // Concurrent requests are merged into jobs of up to 100 events (5 requests of 20 here).
    const total = await pending();
    expect(total).toBeGreaterThanOrEqual((USERS * REQUESTS_PER_USER) / 5);
    expect(total).toBeLessThanOrEqual(USERS * REQUESTS_PER_USER);
    const step = Math.max(1, Math.floor(total / 20));

    for (let round = 0; round < 2; round++) {
      child = spawnService(childEnv);
      const before = await pending();
      await waitUntil(async () => (await pending()) < before - step, 60_000, 10);
      child.proc.kill('SIGKILL');
      await child.exited;
    }
    expect(await pending()).toBeGreaterThan(0);

    child = spawnService(childEnv);
    await waitUntil(async () => (await pending()) === 0, 90_000, 100);
    child.proc.kill('SIGTERM');
    expect(await child.exited).toBe(0);
    child = undefined;

    const ch = createClickhouse({ dataDir });
    try {
      const rs = await ch.query({ query: 'SELECT count() AS n, uniqExact(user_id, dedup_key) AS u FROM events FINAL WHERE project_id = {p:String}', query_params: { p: projectId }, format: 'JSONEachRow' });
      const [row] = await rs.json<{ n: string; u: string }>();
      // Distinct events: per user, the first request has 20 and each later one 19 new ones.
      const distinct = USERS * (EVENTS_PER_REQUEST + (REQUESTS_PER_USER - 1) * (EVENTS_PER_REQUEST - 1));
      expect(Number(row.n)).toBe(distinct);
      expect(Number(row.u)).toBe(distinct);
    } finally {
      await ch.close();
    }
    const perUser = EVENTS_PER_REQUEST + (REQUESTS_PER_USER - 1) * (EVENTS_PER_REQUEST - 1);
    for (const [userId, last] of expectedLast) {
      const p = await t.ctx.profiles.get(projectId, userId);
      expect(p.userProperties.last).toEqual({ longValue: String(last) });
      const values = await t.ctx.dataFieldValues(projectId, p);
      expect(values[countField]).toBe(String(perUser));
      expect(values[firstField]).toBe(new Date(base).toISOString());
    }
  }, 240_000);
});
