import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClickhouse } from '../../shared/platform/warehouse/clickhouse.js';
import { createRedis, waitForRedis, type Redis } from '../../shared/platform/redis/redis.js';
import { bullPrefix, INGEST_JOB_OPTIONS, QUEUE } from '../../shared/platform/queues.js';
import { JobCompletions } from '../helpers/job-completions.js';
import { type EventsBatchJob, type EventsJob, type InteractionJob, type InteractionsBatchJob } from '../../shared/ingestion/jobs.js';
import { ISOLATION_QUEUE } from '../../workers/ingestion/ingest-workers.js';
import { uniquePrefix, waitUntil } from '../helpers/context.js';
import { deletePrefix } from '../helpers/redis-cleanup.js';

/**
 * A job whose processing kills its worker process must not crash-loop the workers for ever: it is
 * taken over a few times (maxStalledCount 3), then it fails and is stored as a dead letter with the
 * reason. A merged job is split into its requests (or interactions) first, so the others (often of
 * other projects) are stored. The workers run in child processes that really die (SIGKILL).
 */
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const LOCK_MS = 800;
let redis: Redis;
const children = new Set<ReturnType<typeof spawn>>();
const prefixes: string[] = [];

function request(projectId: string, userId: string, n: number): EventsJob {
  const now = Date.now();
  const events = Array.from({ length: n }, (_, i) => ({ eventName: 'open', clientEventTs: now - i, insertId: `${userId}-${i}` }));
  return { kind: 'events', projectId, userId, events, origin: { source: 'api' }, receivedAt: now };
}

function interaction(projectId: string, userId: string): InteractionJob {
  const now = Date.now();
  return {
    kind: 'interaction',
    projectId,
    userId,
    surface: 'home',
    treatmentId: '7',
    treatmentTrackingId: `7_r-${userId}`,
    interactionType: 'VIEWED',
    interactionTimeMicros: String(now * 1000),
    receivedAt: now,
  };
}

/** Runs one workers process until it dies or `done` holds (then it is stopped); resolves to whether it died. */
async function runWorker(prefix: string, dataDir: string, done: () => Promise<boolean>): Promise<boolean> {
  const proc = spawn(process.execPath, ['--import', 'tsx', 'test/security/fixtures/suicidal-worker.ts'], {
    cwd: new URL('../../', import.meta.url).pathname,
    env: { ...process.env, REDIS_URL: redisUrl, REDIS_PREFIX: prefix, DATA_DIR: dataDir, WORKER_LOCK_MS: String(LOCK_MS), LOG_LEVEL: 'error' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(proc);
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<string | null>((resolve) => proc.on('exit', (_code, signal) => resolve(signal)));
  let signal: string | null | undefined;
  void exited.then((s) => (signal = s));
  try {
    await waitUntil(async () => signal !== undefined || (await done()), 60_000, 100);
  } catch (err) {
    proc.kill('SIGKILL');
    throw new Error(`${String(err)}; worker output: ${out.slice(-2000)}`);
  }
  if (signal === undefined) proc.kill('SIGTERM');
  const s = await exited;
  children.delete(proc);
  return s === 'SIGKILL';
}

beforeAll(async () => {
  redis = createRedis(redisUrl, 'worker', 'stall-test');
  await waitForRedis(redis, 5000);
});

afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  for (const prefix of prefixes) await deletePrefix(redis, prefix);
  redis.disconnect();
});

/** A merged job of three items whose second kills its worker, and a single job beside it, in one ingest queue. */
const cases = [
  {
    source: 'log_events',
    queue: QUEUE.events,
    table: 'events',
    merged: { kind: 'eventsBatch', requests: [request('pa', 'alice', 3), request('pb', 'crash-me', 2), request('pc', 'carol', 4)] } satisfies EventsBatchJob,
    single: request('pa', 'dave', 5),
    rows: [3, 4, 5],
  },
  {
    source: 'log_treatment_interaction',
    queue: QUEUE.interactions,
    table: 'interactions',
    merged: {
      kind: 'interactionsBatch',
      interactions: [interaction('pa', 'alice'), interaction('pb', 'crash-me'), interaction('pc', 'carol')],
    } satisfies InteractionsBatchJob,
    single: interaction('pa', 'dave'),
    rows: [1, 1, 1],
  },
] as const;

describe.each(cases)('a job that kills its worker ($source)', (c) => {
  it('is taken over 3 times, retried alone, then dead-lettered with the reason; the jobs that died with it are stored', async () => {
    const prefix = uniquePrefix('stall');
    prefixes.push(prefix);
    const dataDir = mkdtempSync(join(tmpdir(), 'tds-stall-'));
    const queue = new Queue(c.queue, { connection: redis, prefix: bullPrefix(prefix) });
    const isolation = new Queue(ISOLATION_QUEUE, { connection: redis, prefix: bullPrefix(prefix) });
    await queue.add('job', c.merged, { ...INGEST_JOB_OPTIONS, jobId: 'merged1' });
    await queue.add('job', c.single, { ...INGEST_JOB_OPTIONS, jobId: 'single1' });

    const idle = async (q: Queue) => {
      const c = await q.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'failed');
      return { idle: c.waiting + c.active + c.delayed + c.prioritized === 0, failed: c.failed };
    };
    const settled = async (): Promise<boolean> => {
      const [m, i] = await Promise.all([idle(queue), idle(isolation)]);
      return m.idle && i.idle && i.failed >= 1;
    };
    let deaths = 0;
    for (let run = 0; run < 20 && !(await settled()); run++) {
      if (await runWorker(prefix, dataDir, settled)) deaths++;
    }
    expect(await settled()).toBe(true);
    // 4 with the merged job among others (3 take-overs, the 4th stall fails it), 2 alone
    expect(deaths).toBe(6);

    // in the ingest queue only suspects failed (moved to isolation); in isolation, only the culprit
    const mainFailed = await queue.getFailed();
    expect(mainFailed.map((j) => j.id)).toContain('merged1');
    expect(new Set(mainFailed.map((j) => j.failedReason))).toEqual(new Set(['job stalled more than allowable limit']));
    expect((await isolation.getFailed()).map((j) => j.id)).toEqual(['merged1.1']);
    const completed = [
      ...(await new JobCompletions(redis, bullPrefix(prefix), c.queue).since()),
      ...(await new JobCompletions(redis, bullPrefix(prefix), ISOLATION_QUEUE).since()),
    ];
    expect(completed).toEqual(expect.arrayContaining(['merged1.0', 'merged1.2', 'single1']));
    // completed jobs are removed at once: their payloads do not stay in Redis
    expect((await queue.getJobCounts('completed')).completed).toBe(0);
    expect((await isolation.getJobCounts('completed')).completed).toBe(0);

    const ch = createClickhouse({ dataDir });
    try {
      const dl = await (
        await ch.query({ query: 'SELECT project_id, message_id, source, reason FROM dead_letters FINAL ORDER BY message_id', format: 'JSONEachRow' })
      ).json<Record<string, string>>();
      expect(dl).toEqual([
        {
          project_id: 'pb',
          message_id: 'merged1.1',
          source: c.source,
          reason: 'stalled 6 times: the worker processing it died (2 of them while it was processed alone)',
        },
      ]);
      const ev = await (
        await ch.query({
          query: `SELECT project_id, user_id, toUInt32(count()) AS n FROM ${c.table} FINAL WHERE user_id != 'crash-me' GROUP BY project_id, user_id ORDER BY user_id`,
          format: 'JSONEachRow',
        })
      ).json<Record<string, string | number>>();
      expect(ev).toEqual([
        { project_id: 'pa', user_id: 'alice', n: c.rows[0] },
        { project_id: 'pc', user_id: 'carol', n: c.rows[1] },
        { project_id: 'pa', user_id: 'dave', n: c.rows[2] },
      ]);
    } finally {
      await ch.close();
      await queue.close();
      await isolation.close();
    }
  }, 240_000);
});
