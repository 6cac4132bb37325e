import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { freePort, freePorts } from '../helpers/child-service.js';
import { ADMIN_TOKEN, uniquePrefix, waitUntil, within } from '../helpers/context.js';
import { startPrivateRedis, type PrivateRedis } from '../helpers/private-redis.js';
import { createClickhouse } from '../../shared/platform/warehouse/clickhouse.js';
import { bullPrefix, QUEUE } from '../../shared/platform/queues.js';

/**
 * Redis killed with SIGKILL in the middle of ingestion under `npm start` (the supervisor, an API
 * process and the background process), with a private redis-server (AOF, `appendfsync always`):
 * - a SIGTERM while Redis is down, and one within a second of its return, stop in order: npm
 *   exits 0 well within 30 s (a stop used to wait for Redis until its deadline, then exit 1);
 * - every request during the outage is answered 503 with Retry-After, promptly;
 * - nothing answered 200 is lost, and nothing is counted twice: once the service runs again on
 *   the same data, every acknowledged event is in ClickHouse and each user's profile counts
 *   exactly the events stored for it;
 * - each process logs the outage a bounded number of times (it used to log every 503 with its stack).
 */

const ROOT = new URL('../../', import.meta.url).pathname;
/** Lines a process may log from the crash of Redis to its exit (the outage, the ordered stop). */
const MAX_LINES_PER_PROCESS = 20;

interface Npm {
  proc: ChildProcess;
  port: number;
  /** Everything logged so far. */
  output(): string;
  exited: Promise<number | null>;
}

const cleanups: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

async function startNpm(env: Record<string, string>): Promise<Npm> {
  const port = await freePort();
  const opsPort = await freePorts(4);
  const proc = spawn('npm', ['start'], {
    cwd: ROOT,
    detached: true,
    env: {
      ...process.env,
      PORT: String(port),
      ALT_PORT: String(await freePort()),
      OPS_PORT: String(opsPort),
      ADMIN_TOKEN,
      LOG_LEVEL: 'info',
      AUTO_START_REDIS: 'false',
      RATE_LIMIT_PER_KEY: '1000000',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  cleanups.push(() => {
    try {
      process.kill(-proc.pid!, 'SIGKILL');
    } catch {
      // gone already
    }
  });
  const ready = async (url: string) => (await fetch(url).catch(() => undefined))?.status === 200;
  // the API process, then the background process (its ops listener: the workers consume)
  await waitUntil(() => ready(`http://127.0.0.1:${port}/readyz`), 90_000, 200);
  await waitUntil(() => ready(`http://127.0.0.1:${opsPort}/readyz`), 90_000, 200);
  return { proc, port, output: () => out, exited };
}

async function post(
  npm: Npm,
  path: string,
  body: unknown,
  headers: Record<string, string>,
): Promise<{ status: number; body: any; retryAfter: string | null; ms: number }> {
  const started = performance.now();
  const res = await fetch(`http://127.0.0.1:${npm.port}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, retryAfter: res.headers.get('retry-after'), ms: performance.now() - started };
}

const USERS = 20;

/** LogEvents from a few concurrent clients until `stop()`: the insertIds answered 200, the answers that were not. */
function ingest(npm: Npm, projectId: string, key: string, run: string) {
  const acked = new Map<string, string[]>();
  const refused: { status: number; retryAfter: string | null; ms: number; code?: string; at: number }[] = [];
  let stopped = false;
  let requests = 0;
  const clients = Array.from({ length: 4 }, async (_, c) => {
    for (let i = 0; !stopped; i++) {
      const userId = `u${(c * 7 + i) % USERS}`;
      const events = Array.from({ length: 20 }, (_, e) => ({
        eventName: 'e',
        clientEventTimestamp: new Date().toISOString(),
        insertId: `${run}-${c}-${i}-${e}`,
      }));
      try {
        const r = await post(npm, '/v1/LogEvents', { projectId, userId, events }, { 'x-api-key': key });
        requests++;
        if (r.status === 200) acked.set(userId, [...(acked.get(userId) ?? []), ...events.map((e) => e.insertId)]);
        else refused.push({ status: r.status, retryAfter: r.retryAfter, ms: r.ms, code: r.body?.error?.status, at: performance.now() });
      } catch {
        // the listener closed: the stop has begun
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  });
  return {
    acked,
    refused,
    requests: () => requests,
    stop: async () => {
      stopped = true;
      await Promise.all(clients);
    },
  };
}

/** JSON lines per process id logged after `from` (an offset in the output). */
function linesPerProcess(output: string, from: number): Map<number, string[]> {
  const byPid = new Map<number, string[]>();
  for (const line of output.slice(from).split('\n')) {
    if (!line.startsWith('{')) continue;
    const pid = (JSON.parse(line) as { pid: number }).pid;
    byPid.set(pid, [...(byPid.get(pid) ?? []), line]);
  }
  return byPid;
}

/** One run: `prepare`, ingestion, Redis SIGKILLed, then `beforeStop` (Redis stays down, or comes back), SIGTERM to npm. */
async function crashAndStop(
  redis: PrivateRedis,
  env: Record<string, string>,
  run: string,
  prepare: (npm: Npm) => Promise<{ projectId: string; key: string }>,
  beforeStop: () => Promise<void>,
) {
  const npm = await startNpm(env);
  const setup = await prepare(npm);
  const load = ingest(npm, setup.projectId, setup.key, run);
  await waitUntil(() => load.acked.size >= USERS / 2 && load.requests() >= 40, 60_000, 50);
  const from = npm.output().length;
  await redis.kill();
  await waitUntil(() => load.refused.length >= 5, 20_000, 20);
  await beforeStop();
  const signalled = performance.now();
  process.kill(npm.proc.pid!, 'SIGTERM');
  const code = await within(npm.exited, 30_000, `npm exit after SIGTERM (${run})`);
  const stopMs = performance.now() - signalled;
  await load.stop();
  return { code, stopMs, signalled, output: npm.output(), from, load };
}

function expectCleanStop(r: Awaited<ReturnType<typeof crashAndStop>>): void {
  expect(r.code, r.output.slice(-5000)).toBe(0);
  expect(r.output).not.toMatch(/deadline passed|did not stop cleanly|died unexpectedly/);
  // every refusal during the outage (before the stop, whose closing listener refuses on its own):
  // 503 UNAVAILABLE with Retry-After, answered promptly (a request that waited for Redis would
  // take as long as the outage)
  const outage = r.load.refused.filter((x) => x.at < r.signalled);
  expect(outage.length).toBeGreaterThanOrEqual(5);
  for (const x of outage) expect(x).toMatchObject({ status: 503, retryAfter: '1', code: 'UNAVAILABLE' });
  expect(Math.max(...outage.map((x) => x.ms))).toBeLessThan(5000);
  const lines = linesPerProcess(r.output, r.from);
  expect(lines.size).toBeGreaterThanOrEqual(3); // supervisor, API process, background process
  for (const [pid, ls] of lines) expect(ls.length, `process ${pid} logged:\n${ls.join('\n')}`).toBeLessThanOrEqual(MAX_LINES_PER_PROCESS);
  expect(r.output.slice(r.from)).toContain('Redis unreachable');
}

describe('Redis killed mid-ingestion under npm start', () => {
  it(
    'SIGTERM while Redis is down and within a second of its return: exit 0 within 30 s, nothing acknowledged lost or counted twice, a bounded log',
    { timeout: 300_000 },
    async () => {
      const redis = await startPrivateRedis({ appendfsync: 'always' });
      cleanups.push(() => redis.stop());
      const dataDir = mkdtempSync(join(tmpdir(), 'tds-faults-'));
      cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
      // a short job lock: jobs a stopped worker left active are retried within seconds
      const env = { REDIS_URL: redis.url, DATA_DIR: dataDir, REDIS_PREFIX: uniquePrefix('faults'), WORKER_LOCK_MS: '2000' };
      const projectId = 'faults';

      // The project, an ingestion key and a per-user event count (the profile side of exactly once).
      let key = '';
      let field = '';
      const prepare = async (npm: Npm) => {
        const admin = (op: string, body: unknown) => post(npm, `/admin/v1/${op}`, body, { authorization: `Bearer ${ADMIN_TOKEN}` });
        expect((await admin('CreateProject', { projectId })).status).toBe(200);
        key = (await admin('CreateApiKey', { projectId, permissions: ['LOG_EVENTS'] })).body.key as string;
        const management = (await admin('CreateApiKey', { projectId, permissions: ['TREATMENT_MANAGEMENT'] })).body.key as string;
        const fields = await post(
          npm,
          '/v1/GetDataFields',
          { projectId, dataFieldParams: [{ eventDataFieldParams: { eventSchemaName: 'e', dailyCountAggregation: { windowName: 'LAST_7D' } } }] },
          { 'x-api-key': management },
        );
        field = fields.body.dataFields[0].dataFieldId as string;
        return { projectId, key };
      };

      // 1. SIGTERM while Redis is down.
      const down = await crashAndStop(redis, env, 'down', prepare, async () => undefined);
      expectCleanStop(down);
      await redis.start();

      // 2. SIGTERM as soon as Redis answers again (its connections are still reconnecting). First the
      // service sees that Redis restarted and recomputes the profiles once the jobs the stop left are
      // done; ingestion starts after that recompute (a recompute racing with ingestion is another matter).
      const monitor = new Redis(redis.url, { maxRetriesPerRequest: null });
      cleanups.push(() => monitor.disconnect());
      const queue = (name: string) => new Queue(name, { connection: monitor, prefix: bullPrefix(env.REDIS_PREFIX) });
      const aggregations = queue(QUEUE.aggregations);
      const restartRecomputes = async () =>
        (await aggregations.getJobs(['completed'])).filter((j) => j.name === 'recompute' && j.data.reason === 'redis_restart' && j.data.projectId === projectId)
          .length;
      const back = await crashAndStop(
        redis,
        env,
        'back',
        async () => {
          await waitUntil(async () => (await restartRecomputes()) === 1, 60_000, 200);
          return { projectId, key };
        },
        () => redis.start(),
      );
      expectCleanStop(back);

      // 3. The service again on the same data: it takes over what the stopped workers left.
      const last = await startNpm(env);
      const queues = [QUEUE.events, QUEUE.isolated].map(queue);
      const pending = async () => {
        let n = 0;
        for (const q of queues) n += Object.values(await q.getJobCounts('waiting', 'active', 'delayed', 'prioritized')).reduce((a, b) => a + b, 0);
        return n;
      };
      await waitUntil(async () => (await pending()) === 0, 90_000, 250);
      expect(await queues[0].getJobCounts('failed')).toEqual({ failed: 0 });
      const profileCounts = new Map<string, number>();
      for (let u = 0; u < USERS; u++) {
        const res = await post(last, '/admin/v1/GetUserProfile', { projectId, userId: `u${u}` }, { authorization: `Bearer ${ADMIN_TOKEN}` });
        profileCounts.set(`u${u}`, Number(res.body?.profile?.dataFields?.[field] ?? 0));
      }
      for (const q of [...queues, aggregations]) await q.close();
      process.kill(last.proc.pid!, 'SIGTERM');
      expect(await within(last.exited, 30_000, 'last stop')).toBe(0);

      const ch = createClickhouse({ dataDir });
      try {
        const rs = await ch.query({
          query: 'SELECT user_id, groupArray(insert_id) AS ids FROM events FINAL WHERE project_id = {p:String} GROUP BY user_id',
          query_params: { p: projectId },
          format: 'JSONEachRow',
        });
        const stored = new Map((await rs.json<{ user_id: string; ids: string[] }>()).map((r) => [r.user_id, new Set(r.ids)]));
        let acknowledged = 0;
        for (const run of [down, back]) {
          for (const [userId, ids] of run.load.acked) {
            acknowledged += ids.length;
            const missing = ids.filter((id) => !stored.get(userId)?.has(id));
            expect(missing, `acknowledged events of ${userId} missing from ClickHouse`).toEqual([]);
          }
        }
        expect(acknowledged).toBeGreaterThan(0);
        for (let u = 0; u < USERS; u++) expect(profileCounts.get(`u${u}`), `profile count of u${u}`).toBe(stored.get(`u${u}`)?.size ?? 0);
      } finally {
        await ch.close();
      }
    },
  );
});
