import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClickhouse } from '../../shared/platform/warehouse/clickhouse.js';
import { createTestApp, createProjectWithKeys, call, uniquePrefix, waitUntil, type TestApp } from '../helpers/context.js';
import { spawnService, type ChildService } from '../helpers/child-service.js';
import { startRedisCluster, type TestRedisCluster } from '../helpers/redis-cluster.js';

/**
 * The identity merge's SIGKILL test (test/integration/identity-merge-crash.test.ts) on a real
 * three-primary Redis Cluster: a pre-login id and its user usually live on different primaries,
 * so every merge step must stay in one slot (a cross-slot script fails with CROSSSLOT).
 *
 * D48 with D34: signed-out users' events, the signed-in events that carry both ids (on every
 * request, as clients do) and more signed-out activity after the sign-in, all queued at once, then
 * processed by a workers process that is SIGKILLed twice mid-way and restarted. Every user ends
 * with one profile holding the sum of both histories exactly (a merge or job applied twice, or a
 * pre-login event lost in the race with its merge, would show), both ids read it, and ClickHouse
 * holds every event under the user exactly once.
 */
const USERS = 10;
const REQUESTS = 6;
const EVENTS = 10;

let t: TestApp;
let projectId: string;
let logKey: string;
let countField: string;
const prefix = uniquePrefix('idcrash');
const dataDir = mkdtempSync(join(tmpdir(), 'tds-idcrash-'));
let childEnv: Record<string, string>;
let child: ChildService | undefined;
let cluster: TestRedisCluster;

beforeAll(async () => {
  cluster = await startRedisCluster();
  childEnv = { REDIS_CLUSTER_NODES: cluster.nodes, REDIS_PREFIX: prefix, DATA_DIR: dataDir, ROLE: 'workers', WORKER_LOCK_MS: '2000', WORKER_CONCURRENCY: '16', AUTO_START_REDIS: 'false' };
  t = await createTestApp({ REDIS_PREFIX: prefix, REDIS_CLUSTER_NODES: cluster.nodes });
  const keys = await createProjectWithKeys(t);
  projectId = keys.projectId;
  logKey = keys.logEvents;
  const fields = await call(t, 'GetDataFields', keys.management, { projectId, dataFieldParams: [{ eventDataFieldParams: { eventSchemaName: 'purchase', dailyCountAggregation: { windowName: 'LAST_365D' } } }] });
  countField = fields.body.dataFields[0].dataFieldId;
}, 120_000);

afterAll(async () => {
  child?.proc.kill('SIGKILL');
  try {
    await t?.close();
  } finally {
    await cluster?.stop();
  }
}, 60_000);

async function pending(): Promise<number> {
  const c = await t.ctx.ingest.eventsQueue.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
  return Object.values(c).reduce((a, b) => a + b, 0);
}

describe('identity merge on a Redis Cluster with workers killed mid-way', () => {
  it('merges every pre-login history exactly once after two SIGKILLs', async () => {
    const base = Date.now() - 2 * 86_400_000;
    const sends: Promise<{ status: number }>[] = [];
    const request = (userId: string, tag: string, r: number, temp?: string) => {
      const events = Array.from({ length: EVENTS }, (_, e) => ({
        eventName: 'purchase',
        // the pre-login id's events are older; the user's own are later
        clientEventTimestamp: new Date(base + (tag === 'u' ? 3_600_000 : 0) + r * 60_000 + e).toISOString(),
        insertId: `${userId}-${r}-${e}`,
        preLoginTempUserId: temp !== undefined && e === 0 ? temp : undefined,
        userProperties: e === EVENTS - 1 ? { [`${tag}_last`]: { longValue: String(r) }, shared: { stringValue: `${tag}${r}` } } : undefined,
      }));
      sends.push(call(t, 'LogEvents', logKey, { projectId, userId, events }));
    };
    for (let u = 0; u < USERS; u++) {
      // signed out, then signed in (every request carries the pre-login id), then the pre-login id again
      for (let r = 0; r < REQUESTS / 2; r++) request(`anon-${u}`, 't', r);
      for (let r = 0; r < REQUESTS; r++) request(`user-${u}`, 'u', r, `anon-${u}`);
      for (let r = REQUESTS / 2; r < REQUESTS; r++) request(`anon-${u}`, 't', r);
    }
    const answers = await Promise.all(sends);
    expect(answers.every((a) => a.status === 200)).toBe(true);
    const total = await pending();
    const step = Math.max(1, Math.floor(total / 10));

    for (let round = 0; round < 2; round++) {
      child = spawnService(childEnv);
      const before = await pending();
      await waitUntil(async () => (await pending()) < before - step, 120_000, 10);
      child.proc.kill('SIGKILL');
      await child.exited;
    }
    // the kills left work behind (merges among it: every user's requests carry the pre-login id)
    expect(await pending()).toBeGreaterThan(0);
    child = spawnService(childEnv);
    await waitUntil(async () => (await pending()) === 0, 180_000, 100);
    child.proc.kill('SIGTERM');
    expect(await child.exited).toBe(0);
    child = undefined;

    const perUser = 2 * REQUESTS * EVENTS;
    for (let u = 0; u < USERS; u++) {
      const p = await t.ctx.profiles.get(projectId, `user-${u}`);
      expect(p.mergedFrom).toEqual([`anon-${u}`]);
      const values = await t.ctx.dataFieldValues(projectId, p);
      expect(values[countField]).toBe(String(perUser));
      // last write wins by timestamp across both histories
      expect(p.userProperties).toMatchObject({ t_last: { longValue: String(REQUESTS - 1) }, u_last: { longValue: String(REQUESTS - 1) }, shared: { stringValue: `u${REQUESTS - 1}` } });
      const alias = await t.ctx.profiles.get(projectId, `anon-${u}`);
      expect(alias.mergedInto).toBe(`user-${u}`);
      expect(await t.ctx.dataFieldValues(projectId, alias)).toEqual(values);
    }
    const ch = createClickhouse({ dataDir });
    try {
      const rs = await ch.query({
        query: `SELECT user_id, count() AS n, uniqExact(dedup_key) AS u FROM events FINAL WHERE project_id = {p:String} AND startsWith(user_id, 'user-') GROUP BY user_id ORDER BY user_id`,
        query_params: { p: projectId },
        format: 'JSONEachRow',
      });
      const rows = await rs.json<{ user_id: string; n: string; u: string }>();
      expect(rows).toHaveLength(USERS);
      for (const row of rows) {
        expect(Number(row.n)).toBe(perUser);
        expect(Number(row.u)).toBe(perUser);
      }
    } finally {
      await ch.close();
    }
  }, 420_000);
});
