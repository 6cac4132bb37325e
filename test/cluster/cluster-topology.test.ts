import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClickhouse } from '../../shared/platform/warehouse/clickhouse.js';
import { createRedis, type Redis } from '../../shared/platform/redis/redis.js';
import { bullPrefix, QUEUE } from '../../shared/platform/queues.js';
import { freePort, spawnService, type ChildService } from '../helpers/child-service.js';
import { ADMIN_TOKEN, retryUnavailable, uniquePrefix, waitUntil } from '../helpers/context.js';
import { deletePrefix } from '../helpers/redis-cleanup.js';
import { startRedisCluster, type TestRedisCluster } from '../helpers/redis-cluster.js';
import { overlappingRequests } from '../helpers/events-crash-scenario.js';

/**
 * The production topology of the issue, every role its own process: a three-primary Redis
 * Cluster, `ROLE=api` ×2, `ROLE=workers`, `ROLE=scheduler`. Events go in through both API
 * processes; the workers are SIGKILLed mid-ingestion and restarted; every event is stored once,
 * every counter is right (incrementally and after RunAggregations, which reaches the workers over
 * the request/reply queue), and delivery with a rule on the counter answers the same through
 * either API process.
 */
const USERS = 16;
const REQUESTS_PER_USER = 10;
const EVENTS_PER_REQUEST = 20;
const PER_USER = EVENTS_PER_REQUEST + (REQUESTS_PER_USER - 1) * (EVENTS_PER_REQUEST - 1);

const prefix = uniquePrefix('topo');
const workersDir = mkdtempSync(join(tmpdir(), 'tds-topo-workers-'));
const schedulerDir = mkdtempSync(join(tmpdir(), 'tds-topo-scheduler-'));
const apiDirs: string[] = [];
let cluster: TestRedisCluster;
let redis: Redis;
let queue: Queue;
const apis: { child: ChildService; url: string }[] = [];
let workers: ChildService | undefined;
let scheduler: ChildService | undefined;
let common: Record<string, string>;

async function post(url: string, path: string, body: unknown, headers: Record<string, string>): Promise<{ status: number; body: any }> {
  const res = await fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}
const adminAt = (i: number, op: string, body: unknown) => post(apis[i].url, `/admin/v1/${op}`, body, { authorization: `Bearer ${ADMIN_TOKEN}` });
const callAt = (i: number, op: string, key: string, body: unknown) => post(apis[i].url, `/v1/${op}`, body, { 'x-api-key': key });
async function ok(res: Promise<{ status: number; body: any }>): Promise<any> {
  const r = await res;
  if (r.status !== 200) throw new Error(`${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

const spawnWorkers = () => spawnService({ ...common, ROLE: 'workers', DATA_DIR: workersDir, WORKER_LOCK_MS: '2000', WORKER_CONCURRENCY: '16' });

async function pending(): Promise<number> {
  const c = await queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
  return Object.values(c).reduce((a, b) => a + b, 0);
}

beforeAll(async () => {
  cluster = await startRedisCluster();
  common = { REDIS_CLUSTER_NODES: cluster.nodes, REDIS_PREFIX: prefix, ADMIN_TOKEN, AUTO_START_REDIS: 'false', LOG_LEVEL: 'warn' };
  redis = createRedis({ redisUrl: 'redis://unused', redisClusterNodes: cluster.ports.map((port) => ({ host: '127.0.0.1', port })) }, 'worker', 'topology-test');
  queue = new Queue(QUEUE.events, { connection: redis, prefix: bullPrefix(prefix, redis), skipVersionCheck: true });
  for (let i = 0; i < 2; i++) {
    const port = await freePort();
    const child = spawnService({
      ...common,
      ROLE: 'api',
      PORT: String(port),
      ALT_PORT: String(await freePort()),
      DATA_DIR: apiDirs[apiDirs.push(mkdtempSync(join(tmpdir(), 'tds-topo-api-'))) - 1],
    });
    apis.push({ child, url: `http://127.0.0.1:${port}` });
  }
  scheduler = spawnService({ ...common, ROLE: 'scheduler', DATA_DIR: schedulerDir });
  for (let i = 0; i < 2; i++) {
    await waitUntil(async () => (await adminAt(i, 'ListProjects', {}).catch(() => ({ status: 0 }))).status === 200, 90_000, 250).catch((err: unknown) => {
      throw new Error(`API process ${i} did not start: ${String(err)}\n${apis[i].child.output()}`);
    });
  }
}, 180_000);

afterAll(async () => {
  for (const c of [workers, scheduler, ...apis.map((a) => a.child)]) {
    if (!c) continue;
    c.proc.kill('SIGKILL');
    await c.exited;
  }
  try {
    await queue?.close();
    if (redis) {
      await deletePrefix(redis, prefix);
      redis.disconnect();
    }
  } finally {
    await cluster?.stop();
    for (const d of [workersDir, schedulerDir, ...apiDirs]) rmSync(d, { recursive: true, force: true });
  }
}, 60_000);

describe('Redis Cluster + ROLE=api ×2 + ROLE=workers + ROLE=scheduler', () => {
  it('keeps exactly-once through a SIGKILL of the workers and delivers the same through either API process', async () => {
    const projectId = 'topo';
    await ok(adminAt(0, 'CreateProject', { projectId }));
    const key = async (i: number, permissions: string[]) => (await ok(adminAt(i, 'CreateApiKey', { projectId, permissions }))).key as string;
    const management = await key(1, ['TREATMENT_MANAGEMENT']);
    const delivery = await key(0, ['DELIVERY']);
    const logEvents = await key(1, ['LOG_EVENTS']);
    const [countField] = (
      await ok(
        callAt(0, 'GetDataFields', management, {
          projectId,
          dataFieldParams: [{ eventDataFieldParams: { eventSchemaName: 'purchase', dailyCountAggregation: { windowName: 'LAST_365D' } } }],
        }),
      )
    ).dataFields.map((f: { dataFieldId: string }) => f.dataFieldId);
    await ok(callAt(1, 'InsertSurface', management, { projectId, name: 'home' }));
    await ok(
      callAt(0, 'InsertTreatmentType', management, {
        projectId,
        treatmentTypeName: 'card',
        lastModifiedBy: 's',
        surfaces: [{ surfaceName: 'home' }],
        contentFieldTypes: [{ fieldName: 'title', maximumLengthAllowed: 100 }],
      }),
    );
    const treatment = async (i: number, name: string, extra: Record<string, unknown> = {}) =>
      (
        await ok(
          callAt(i, 'InsertTreatment', management, {
            projectId,
            name,
            description: 'd',
            treatmentTypeName: 'card',
            lastModifiedBy: 'alice',
            startTimestamp: new Date(Date.now() - 60_000).toISOString(),
            shouldPublish: true,
            content: { languageAgnosticContentFields: [{ fieldName: 'title', stringValue: name }] },
            ...extra,
          }),
        )
      ).treatment.treatmentId as string;
    const everyone = await treatment(0, 'everyone');
    // eligible only when the counter holds exactly every distinct event (a lost or doubled one shows)
    const exact = await treatment(1, 'exact', {
      eligibilityRules: {
        rules: [
          { dataFieldId: countField, condition: 'GREATER_THAN_OR_EQUALS', rhsValue: String(PER_USER) },
          { dataFieldId: countField, condition: 'LESS_THAN_OR_EQUALS', rhsValue: String(PER_USER) },
        ],
      },
    });

    // ingestion through both API processes while no worker runs, so the backlog is there to crash into
    const base = Date.now() - 30 * 86_400_000;
    const sends = [...overlappingRequests(USERS, REQUESTS_PER_USER, EVENTS_PER_REQUEST, base)].map(({ u, r, userId, events }) =>
      retryUnavailable(() => callAt((u + r) % 2, 'LogEvents', logEvents, { projectId, userId, events })),
    );
    const answers = await Promise.all(sends);
    expect(answers.map((a) => a.status).filter((s) => s !== 200)).toEqual([]);
    const total = await pending();
    expect(total).toBeGreaterThan(0);

    workers = spawnWorkers();
    const step = Math.max(1, Math.floor(total / 10));
    await waitUntil(async () => (await pending()) < total - step, 90_000, 10);
    workers.proc.kill('SIGKILL');
    await workers.exited;
    expect(await pending()).toBeGreaterThan(0);
    workers = spawnWorkers();
    await waitUntil(async () => (await pending()) === 0, 120_000, 100);

    const ids = async (i: number, userId: string) =>
      ((await ok(callAt(i, 'GetTreatments', delivery, { projectId, userId, surfaces: [{ surface: 'home', maximumTreatmentCount: 5 }] }))).userTreatments ?? [])
        .map((t: { treatmentId: string }) => t.treatmentId)
        .sort();
    const checkProfilesAndDelivery = async () => {
      for (let u = 0; u < USERS; u++) {
        const userId = `user-${u}`;
        const profile = (await ok(adminAt(u % 2, 'GetUserProfile', { projectId, userId }))).profile;
        expect(profile.dataFields[countField]).toBe(String(PER_USER));
        expect(profile.userProperties.last).toBe(String(REQUESTS_PER_USER - 1));
        for (const i of [0, 1]) expect(await ids(i, userId)).toEqual([everyone, exact].sort());
      }
      for (const i of [0, 1]) expect(await ids(i, 'nobody')).toEqual([everyone]);
    };
    await checkProfilesAndDelivery();

    // the recompute (one script call per user on a cluster) reaches the workers from an API process
    const run = await ok(adminAt(1, 'RunAggregations', { projectId }));
    expect(run.usersUpdated).toBe(USERS);
    await checkProfilesAndDelivery();

    workers.proc.kill('SIGTERM');
    expect(await workers.exited).toBe(0);
    workers = undefined;
    const ch = createClickhouse({ dataDir: workersDir });
    try {
      const rs = await ch.query({
        query: 'SELECT count() AS n, uniqExact(user_id, dedup_key) AS u FROM events FINAL WHERE project_id = {p:String}',
        query_params: { p: projectId },
        format: 'JSONEachRow',
      });
      const [row] = await rs.json<{ n: string; u: string }>();
      expect(Number(row.n)).toBe(USERS * PER_USER);
      expect(Number(row.u)).toBe(USERS * PER_USER);
    } finally {
      await ch.close();
    }
  }, 400_000);
});
