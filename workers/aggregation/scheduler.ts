import { Queue, Worker, type Job, type JobSchedulerTemplateOptions, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { createRedis } from '../../shared/platform/redis/redis.js';
import { bullPrefix, QUEUE } from '../../shared/platform/queues.js';
import { BACKFILL_GROUP, backfillJobId, type AggregationJob } from '../../shared/aggregation/index.js';
import type { RedisKeys } from '../../shared/platform/redis/redis-keys.js';
import type { Platform } from '../../shared/platform/platform.js';
import type { DataFieldRecord } from '../../shared/aggregation/index.js';
import type { Project } from '../../shared/projects/index.js';
import { pruneCapCounters } from '../delivery/cap-prune.js';
import { recomputeDataFields, type RecomputeCursor, type RecomputeDeps, type RecomputeResult } from './recompute.js';
import type { InvalidationBus } from '../../shared/platform/redis/invalidation-bus.js';
import type { Metrics } from '../../shared/platform/metrics.js';
import { instrumentWorker, type JobMetrics } from '../job-metrics.js';
import { queueErrorLogger } from '../../shared/platform/redis/redis-health.js';
import { closeWorkers, settlesWithin } from '../../shared/platform/stop.js';
import { ingestBacklogSettled, watchRedisRestarts } from './redis-restarts.js';

/** Reads the stream of new aggregation fields and enqueues one backfill per field. */
export interface BackfillPollJob {
  kind: 'backfillPoll';
}

/** A recompute job carries its cursor once it has started, so a retry resumes where it stopped. */
export type RecomputeJobData = AggregationJob & { cursor?: RecomputeCursor };

export type AggregationQueueJob = RecomputeJobData | BackfillPollJob;

export interface ScheduleSpec {
  key: string;
  every?: number;
  /** cron pattern, evaluated in UTC */
  pattern?: string;
  data: AggregationQueueJob;
}

/**
 * The schedule, reconciled at boot (declared here, not added ad hoc). `recompute-all` runs at the start of
 * every UTC hour, 00:00 included, so each day is settled from ClickHouse right after it ends;
 * values themselves are computed at read time, so windows move at midnight without waiting for
 * it. `backfill-poll` makes a new aggregation fill from history within seconds.
 */
export const AGGREGATION_SCHEDULES: readonly ScheduleSpec[] = [
  { key: 'recompute-all', pattern: '0 * * * *', data: { kind: 'recompute', reason: 'schedule' } },
  { key: 'backfill-poll', every: 1000, data: { kind: 'backfillPoll' } },
];

const SCHEDULE_TEMPLATE_OPTS: JobSchedulerTemplateOptions = { removeOnComplete: true, removeOnFail: { count: 100 } };

/**
 * BullMQ takes jobs without a priority before prioritized ones: the cheap jobs (polls, fan-out,
 * backfills) never wait behind the hourly per-project recomputes queued before them.
 */
const SCHEDULED_RECOMPUTE_PRIORITY = 10;

const RECOMPUTE_JOB_OPTS: JobsOptions = {
  attempts: 5,
  backoff: { type: 'exponential', delay: 10_000 },
  removeOnComplete: { age: 24 * 3600, count: 1000 },
  // bounded by count too: a recompute that keeps failing (one per project per hour) cannot pile up
  removeOnFail: { age: 7 * 24 * 3600, count: 1000 },
};

/** Upserts every declared scheduler and removes the ones no longer declared. */
export async function reconcileSchedules(queue: Queue, specs: readonly ScheduleSpec[], log: Logger): Promise<void> {
  for (const s of specs) {
    const repeat = s.pattern !== undefined ? { pattern: s.pattern, tz: 'UTC' } : { every: s.every };
    await queue.upsertJobScheduler(s.key, repeat, { name: s.key, data: s.data, opts: SCHEDULE_TEMPLATE_OPTS });
  }
  const declared = new Set(specs.map((s) => s.key));
  for (const existing of await queue.getJobSchedulers(0, -1)) {
    if (declared.has(existing.key)) continue;
    await queue.removeJobScheduler(existing.key);
    log.info({ scheduler: existing.key }, 'stale job scheduler removed');
  }
  log.info({ schedulers: [...declared] }, 'job schedulers reconciled');
}

/**
 * The scheduler role: only enqueues; the aggregation worker (workers role) does the work. Besides
 * the schedule, a Redis restart (see redis-restarts.ts) enqueues one recompute of every project.
 */
export async function startScheduler(ctx: Pick<Platform, 'config' | 'log' | 'keys'>): Promise<{ name: string; close(graceMs?: number): Promise<void> }> {
  const connection = createRedis(ctx.config, 'worker', 'tds-scheduler');
  connection.on('error', (err) => ctx.log.debug({ err }, 'redis (scheduler) error'));
  const queue = new Queue(QUEUE.aggregations, { connection, prefix: bullPrefix(ctx.config.redisPrefix, connection) });
  queue.on('error', queueErrorLogger(ctx.log, 'aggregations queue error'));
  await reconcileSchedules(queue, AGGREGATION_SCHEDULES, ctx.log.child({ role: 'scheduler' }));
  const restarts = watchRedisRestarts({
    connection,
    key: ctx.keys.redisRunIds(),
    log: ctx.log.child({ role: 'scheduler' }),
    settle: (stopped) => ingestBacklogSettled(connection, ctx.config.redisPrefix, ctx.log.child({ role: 'scheduler' }), stopped),
    // One fan-out per restart (its id), and per project at most one recompute pending or running
    // (the hourly run's deduplication id), so a restart seen twice never runs it twice at once.
    onRestart: async (runIds) => {
      const data: AggregationJob = { kind: 'recompute', reason: 'redis_restart' };
      await queue.add('redis-restart', data, { ...RECOMPUTE_JOB_OPTS, jobId: `redis-restart-${runIds.join('-')}` });
    },
  });
  // a restart while the service was stopped
  restarts.check().catch((err: unknown) => ctx.log.warn({ err }, 'could not compare the Redis run_id at start-up; retrying at the next check'));
  ctx.log.info('scheduler role started');
  let closing: Promise<void> | undefined;
  return {
    name: 'scheduler',
    close: (graceMs = 2000) => {
      restarts.close();
      // The queue shares the connection, so closing it sends nothing to Redis; bounded all the same.
      closing ??= settlesWithin(queue.close(), graceMs).then(() => connection.disconnect());
      return closing;
    },
  };
}

export interface AggregationWorkerOptions {
  connection: Redis;
  redisPrefix: string;
  keys: RedisKeys;
  warehouse: RecomputeDeps['warehouse'];
  dataFields: { list(projectId: string): Promise<DataFieldRecord[]> };
  deletions: RecomputeDeps['deletions'];
  projects: { list(): Promise<Project[]> };
  log: Logger;
  now: () => number;
  /** TTL of a profile a recompute creates (RETENTION_DAYS). @defaultValue 400 days */
  profileTtlSeconds?: number;
  /** When given, a catalogue change (a new field among them) triggers a backfill poll at once. */
  bus?: InvalidationBus;
  /** Job durations and retries, recompute and backfill progress, for /metrics. */
  metrics?: JobMetrics & Pick<Metrics, 'aggregationProgress' | 'aggregationRunning'>;
}

/** Delay of the poll after a catalogue change: the field's stream entry is written just after the change is published. */
const BACKFILL_NUDGE_MS = 50;

export interface AggregationWorker {
  worker: Worker;
  queue: Queue;
  /** Idempotent. A run under way gets `graceMs` to finish; else it resumes from its cursor when retried. */
  close(graceMs?: number): Promise<void>;
}

const BACKFILL_CONSUMER = 'aggregation-worker';
const BACKFILL_READ_COUNT = 100;

type StreamEntry = [string, string[] | null];

/** XREADGROUP of one stream: RESP2 answers `[[key, entries]]`, RESP3 a map that ioredis flattens to `[key, entries]`. */
function streamEntries(reply: unknown): StreamEntry[] {
  if (!Array.isArray(reply) || reply.length === 0) return [];
  const entries: unknown = Array.isArray(reply[0]) ? (reply[0] as unknown[])[1] : reply[1];
  return Array.isArray(entries) ? (entries as StreamEntry[]) : [];
}

/** The data-field-created stream is read through a consumer group: its cursor survives restarts. */
async function ensureBackfillGroup(redis: Redis, stream: string): Promise<void> {
  try {
    // From the start of the stream: a hint written before the first poll is not skipped.
    await redis.call('XGROUP', 'CREATE', stream, BACKFILL_GROUP, '0', 'MKSTREAM');
  } catch (err) {
    if (!String((err as Error).message).includes('BUSYGROUP')) throw err;
  }
}

/**
 * Enqueues a backfill per new field, then acknowledges the entries. Pending entries (read but not
 * acknowledged when a previous poll died) are read first; the job id makes a repeat harmless.
 */
async function pollBackfills(o: AggregationWorkerOptions, queue: Queue): Promise<number> {
  const stream = o.keys.dataFieldCreated();
  await ensureBackfillGroup(o.connection, stream);
  let enqueued = 0;
  for (const from of ['0', '>']) {
    for (let round = 0; round < 10; round++) {
      const entries = streamEntries(
        await o.connection.call('XREADGROUP', 'GROUP', BACKFILL_GROUP, BACKFILL_CONSUMER, 'COUNT', BACKFILL_READ_COUNT, 'STREAMS', stream, from),
      );
      for (const [, fields] of entries) {
        const f = Object.fromEntries(chunkPairs(fields ?? []));
        if (!f.projectId || !f.dataFieldId) continue;
        const data: RecomputeJobData = { kind: 'recompute', projectId: f.projectId, dataFieldIds: [f.dataFieldId], reason: 'backfill' };
        await queue.add('backfill', data, { ...RECOMPUTE_JOB_OPTS, jobId: backfillJobId(f.projectId, f.dataFieldId) });
        enqueued++;
      }
      if (entries.length > 0) await o.connection.call('XACK', stream, BACKFILL_GROUP, ...entries.map(([id]) => id));
      if (entries.length < BACKFILL_READ_COUNT) break;
    }
  }
  if (enqueued > 0) o.log.info({ enqueued }, 'backfills enqueued for new data fields');
  return enqueued;
}

function chunkPairs(flat: string[]): [string, string][] {
  const out: [string, string][] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) out.push([flat[i], flat[i + 1]]);
  return out;
}

/**
 * The hourly run (or a Redis restart's): one recompute job per project; the deduplication id keeps
 * at most one pending or running. The hourly ones wait behind the cheap jobs (a priority); a
 * restart's run as soon as the worker is free.
 */
async function fanOut(o: AggregationWorkerOptions, queue: Queue, reason: AggregationJob['reason']): Promise<number> {
  const projects = await o.projects.list();
  for (const p of projects) {
    const data: RecomputeJobData = { kind: 'recompute', projectId: p.projectId, reason };
    const priority = reason === 'schedule' ? { priority: SCHEDULED_RECOMPUTE_PRIORITY } : {};
    await queue.add('recompute', data, { ...RECOMPUTE_JOB_OPTS, ...priority, deduplication: { id: `recompute-${p.projectId}` } });
  }
  o.log.info({ projects: projects.length, reason }, 'recompute enqueued per project');
  // once a day (the 00:00 UTC run): cap counters older than any window are dropped
  if (new Date(o.now()).getUTCHours() === 0) await pruneCapCounters(o.connection, o.keys.profile('*', '*'), o.now(), o.log);
  return projects.length;
}

async function runRecompute(
  o: AggregationWorkerOptions,
  job: Job<AggregationQueueJob>,
  data: RecomputeJobData & { projectId: string },
): Promise<RecomputeResult> {
  const m = o.metrics;
  // users already counted by an earlier attempt of this job are not counted again
  let usersSeen = data.cursor?.usersUpdated ?? 0;
  m?.aggregationRunning(data.reason, 1);
  try {
    return await recomputeDataFields(
      {
        warehouse: o.warehouse,
        redis: o.connection,
        keys: o.keys,
        dataFields: o.dataFields,
        deletions: o.deletions,
        log: o.log.child({ jobId: job.id, reason: data.reason }),
        now: o.now,
        profileTtlSeconds: o.profileTtlSeconds,
      },
      { projectId: data.projectId, dataFieldIds: data.dataFieldIds, newFields: data.reason === 'backfill' },
      {
        resumeFrom: data.cursor,
        onCheckpoint: async (cursor, progress) => {
          m?.aggregationProgress(data.reason, progress.done, progress.total, progress.usersUpdated - usersSeen);
          usersSeen = progress.usersUpdated;
          await job.updateData({ ...data, cursor });
          await job.updateProgress(progress);
        },
      },
    );
  } finally {
    m?.aggregationRunning(data.reason, -1);
  }
}

/**
 * The worker of the aggregations queue. Concurrency 1: runs of one process never overlap. Runs
 * in several worker processes may overlap; that is safe because each batch write is one atomic
 * script that keeps the larger count for the current day and replaces only finished days.
 */
export function startAggregationWorker(o: AggregationWorkerOptions): AggregationWorker {
  const prefix = bullPrefix(o.redisPrefix, o.connection);
  const queue = new Queue(QUEUE.aggregations, { connection: o.connection, prefix });
  queue.on('error', queueErrorLogger(o.log, 'aggregations queue error'));
  const worker = new Worker<AggregationQueueJob>(
    QUEUE.aggregations,
    async (job) => {
      const data = job.data;
      if (data.kind === 'backfillPoll') return { enqueued: await pollBackfills(o, queue) };
      if (data.projectId === undefined) return { projects: await fanOut(o, queue, data.reason) };
      return runRecompute(o, job, { ...data, projectId: data.projectId });
    },
    { connection: o.connection, prefix, concurrency: 1 },
  );
  if (o.metrics) instrumentWorker(worker, o.metrics);
  worker.on('failed', (job, err) =>
    o.log.warn({ jobId: job?.id, name: job?.name, attemptsMade: job?.attemptsMade, errMessage: err.message }, 'aggregation job failed'),
  );
  // A new field starts its backfill within ~50 ms instead of at the next 1-second poll, which
  // stays as the safety net (a missed nudge, an outage). Concurrent polls are harmless: the
  // backfill job id is per field, and entries are acknowledged only after their job was added.
  let nudge: NodeJS.Timeout | undefined;
  const unsubscribe = o.bus?.on((msg) => {
    if (msg.kind !== 'catalog' || nudge) return;
    nudge = setTimeout(() => {
      nudge = undefined;
      pollBackfills(o, queue).catch((err: unknown) => o.log.warn({ err }, 'backfill poll after a catalogue change failed; the periodic poll will retry'));
    }, BACKFILL_NUDGE_MS);
  });
  worker.on('error', queueErrorLogger(o.log, 'aggregation worker error'));
  let closing: Promise<void> | undefined;
  return {
    worker,
    queue,
    close: (graceMs = 10_000) => {
      unsubscribe?.();
      clearTimeout(nudge);
      closing ??= closeWorkers([worker], graceMs, o.log)
        .then(() => settlesWithin(queue.close(), 1000))
        .then(() => undefined);
      return closing;
    },
  };
}
