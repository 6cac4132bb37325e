import { Queue, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { classifyClickhouseError } from '../../shared/platform/warehouse/clickhouse.js';
import { bullPrefix, cappedExponentialBackoff, INGEST_JOB_OPTIONS, QUEUE } from '../../shared/platform/queues.js';
import type { DecisionLookup, DecisionsJob } from '../../shared/impact/index.js';
import { DecisionsWarehouse } from '../../shared/impact/decisions.warehouse.js';
import {
  MERGED_JOB_EVENTS,
  type DeadLetterSource,
  type EventsJob,
  type EventsQueueJob,
  type InteractionJob,
  type InteractionsQueueJob,
} from '../../shared/ingestion/index.js';
import type { AppliedUnit, ProfileStore } from '../../shared/profiles/index.js';
import type { ReturnedCaps } from '../delivery/cap-counters.js';
import { DECISIONS_INSERTS, decisionsProject, startDecisionsWorker } from '../impact/decisions.worker.js';
import type { Warehouse } from '../../shared/platform/warehouse/warehouse.js';
import { DeadLetterSink } from './dead-letter-sink.js';
import { ClickhouseBatchWriter, type TableInserts } from '../warehouse/clickhouse-batch-writer.js';
import { eventsJobUnits, processEventsJob, type ErasedUsers, type EventOpsProvider } from './events.processor.js';
import { asPermanent } from './permanent-errors.js';
import { EventsBudget, eventsJobWeight } from './events-budget.js';
import { interactionsJobUnits, processInteractionJob, type InteractionOpsProvider } from './interactions.processor.js';
import type { RankingCounterStore, RankingDelta } from '../../shared/delivery/index.js';
import type { IngestMetric, Metrics } from '../../shared/platform/metrics.js';
import { instrumentWorker, type JobMetrics } from '../job-metrics.js';
import { identityMerger } from '../profiles/identity-merge.js';
import { queueErrorLogger } from '../../shared/platform/redis/redis-health.js';
import { closeWorkers, settlesWithin } from '../../shared/platform/stop.js';

/** BullMQ's reason for a job that exceeded `maxStalledCount` (it fails it on its next pickup). */
const STALLED_OUT = 'job stalled more than allowable limit';

/** Suspects (jobs that stalled out among others) are retried here, one at a time. */
export const ISOLATION_QUEUE = QUEUE.isolated;
/** Alone, a job is put back once after its worker died; the second death makes it a dead letter. */
const ISOLATED_MAX_STALLS = 1;

interface IsolatedJob {
  queue: DeadLetterSource;
  data: EventsQueueJob | InteractionsQueueJob | DecisionsJob;
}

/** The items of a merged job (LogEvents requests, interactions), each with the identity `<jobId>.<index>`; undefined for any other job. */
function mergedItems(data: EventsQueueJob | InteractionsQueueJob | DecisionsJob | undefined): { projectId?: unknown }[] | undefined {
  if (data?.kind === 'eventsBatch' && Array.isArray(data.requests)) return data.requests;
  if (data?.kind === 'interactionsBatch' && Array.isArray(data.interactions)) return data.interactions;
  return undefined;
}

export interface IngestWorkersOptions {
  connection: Redis;
  redisPrefix: string;
  warehouse: Warehouse;
  /** Where jobs that fail for good go. @defaultValue a sink over `warehouse` */
  deadLetters?: Pick<DeadLetterSink, 'store'>;
  profiles: ProfileStore;
  log: Logger;
  now: () => number;
  /** Jobs processed at once per queue; their rows share ClickHouse inserts. @defaultValue 64 */
  concurrency?: number;
  /** The largest merged LogEvents jobs (config.mergedJobEvents): the events budget's first guess of a job's size. @defaultValue MERGED_JOB_EVENTS */
  mergedJobEvents?: number;
  /** Lock of an active job; a dead worker's jobs are retried after about this long. @defaultValue 30000 */
  lockMs?: number;
  /**
   * Times a job may be taken over from a worker that died while processing it; one more and it
   * is retried alone (a merged job: each of its requests), where a second death makes it a dead
   * letter. Without a bound, a job that kills its process would crash-loop every worker for ever.
   * @defaultValue 3
   */
  maxStalls?: number;
  eventOps?: EventOpsProvider;
  interactionOps?: InteractionOpsProvider;
  /** Ranking counters of interactions, applied by their own marker-guarded script. */
  ranking?: { store: RankingCounterStore; deltasFor: (job: InteractionJob) => RankingDelta[] };
  /** Deleted users: jobs accepted before their user's deletion are dropped for that user. */
  erased?: ErasedUsers;
  /** Treatments whose RETURNED decisions are counted for frequency caps. @defaultValue none */
  returnedCaps?: ReturnedCaps;
  /** The decision log, for interactions sent without userId or surface. @defaultValue the warehouse's decision log */
  decisions?: DecisionLookup;
  /** How long such an interaction waits for its decision before it is a dead letter (ms). @defaultValue 600000 */
  decisionWaitMs?: number;
  /**
   * IDENTITY_MERGE: an event carrying `preLoginTempUserId` merges that pre-login id into its user.
   * false: never (every user id is a signed-in id); aliases made before still resolve. @defaultValue true
   */
  identityMerge?: boolean;
  /** Counters for /metrics. */
  onMetric?: (name: IngestMetric, n: number) => void;
  /** Insert latency, job durations and retries for /metrics. */
  metrics?: JobMetrics & Pick<Metrics, 'observeInsert'>;
}

/** How long the markers of a completed job are kept: 10 locks, at least a minute (see `dropMarkers`). */
export function markerGraceSeconds(lockMs = 30_000): number {
  return Math.max(60, Math.ceil((10 * lockMs) / 1000));
}

/** How long `close()` lets active jobs finish by default. */
export const CLOSE_GRACE_MS = 10_000;

export interface IngestWorkers {
  writer: ClickhouseBatchWriter;
  workers: Worker[];
  /**
   * Idempotent. Active jobs get `graceMs` to finish (not waited for while Redis is unreachable);
   * a job left unfinished is retried once its lock expires. Then buffered rows are written.
   */
  close(graceMs?: number): Promise<void>;
}

/**
 * How long events gather for one insert (other tables but decisions: the writer's 50 ms). Under
 * load an insert holds what arrived meanwhile, and the embedded engine's CPU per row falls with
 * the insert's size (`bench/engine-insert-cost.ts events`: 9.3–10.8 µs a row in inserts of 3,750
 * rows, what 50 ms gathers at 75,000 events/s, against 6.8–8.3 in inserts of 7,500): at most one
 * insert per 100 ms, and an event that finds the table quiet waits only 20 ms, so an event after a
 * pause shows in its profile sooner while a steady stream still gets one insert per 100 ms.
 */
export const EVENTS_INSERTS: TableInserts = { delayMs: 100, quietDelayMs: 20 };

/**
 * Interactions gather for their inserts as events do: they update profiles too (data fields,
 * frequency caps), and in merged jobs they reach the writer as fast as they arrive, so the
 * writer's 50 ms made an insert of about 100 rows every 50 ms at 2,000 interactions a second, at
 * about 20 ms of the embedded engine's CPU each. With the events' policy the engine's insert and
 * merge threads took 69-73 µs an interaction against 111-146 (`bench/interaction-cost.ts 2000
 * 10`, two alternating pairs on a quiet machine).
 */
export const INTERACTIONS_INSERTS: TableInserts = EVENTS_INSERTS;

/**
 * Events the events worker holds per job it may run at once (`concurrency`): its bound on events
 * in hand is `concurrency` times this. Merged LogEvents jobs hold up to MERGED_JOB_EVENTS (500 by
 * default), Pub/Sub messages one job each, so the bound is on events, not
 * jobs: 256 jobs of 500 events put the background process over its memory budget (653-698 MB
 * under ingest), while 256 single messages must still run at once, each waiting for the insert
 * holding its rows.
 */
export const EVENTS_PER_JOB_SLOT = 100;

export function startIngestWorkers(o: IngestWorkersOptions): IngestWorkers {
  const maxStalls = o.maxStalls ?? 3;
  // Decisions wait for their insert longer than events: only their own readability (within a
  // second) waits on it, whereas an event's profile update, which delivery reads, follows its insert.
  const writer = new ClickhouseBatchWriter(o.warehouse, o.log, {
    isPermanent: (e) => classifyClickhouseError(e) === 'permanent',
    onInsert: o.metrics?.observeInsert,
    tables: { decisions_input: DECISIONS_INSERTS, events: EVENTS_INSERTS, interactions: INTERACTIONS_INSERTS },
  });
  const common = {
    connection: o.connection,
    prefix: bullPrefix(o.redisPrefix, o.connection),
    concurrency: o.concurrency ?? 64,
    lockDuration: o.lockMs ?? 30_000,
    stalledInterval: o.lockMs ?? 30_000,
    // A job held by a worker that died is put back a few times (deploys, OOM kills). A process
    // that dies takes every job it held with it, so a job that stalls out is only a suspect: the
    // failed handler moves it (a merged job: each of its requests) to the isolation queue.
    maxStalledCount: maxStalls,
    settings: { backoffStrategy: (attemptsMade: number) => cappedExponentialBackoff(attemptsMade) },
  };
  const deps = { writer, profiles: o.profiles, now: o.now, erased: o.erased };

  const deadLetters = o.deadLetters ?? new DeadLetterSink(o.warehouse, o.now);
  const eventDeps = {
    ...deps,
    identity:
      o.identityMerge === false
        ? undefined
        : identityMerger({ warehouse: o.warehouse, profiles: o.profiles, log: o.log, onRefused: () => o.onMetric?.('identityMergesRefused', 1) }),
    opsFor: o.eventOps,
    // applied = events new to this user; the rest were duplicates by insertId
    onApplied: (applied: number, total: number) => {
      o.onMetric?.('eventsWritten', applied);
      o.onMetric?.('duplicatesDropped', total - applied);
    },
    deadLetter: async (request: EventsJob, id: string, reason: string) => {
      o.log.error({ jobId: id, queue: 'log_events', errMessage: reason }, 'a request of a merged job can never be stored; stored as a dead letter');
      await deadLetters.store({ projectId: request.projectId, messageId: id, source: 'log_events', reason, payload: request });
      o.onMetric?.('deadLetters', 1);
    },
  };
  // The events worker holds at most EVENTS_PER_JOB_SLOT events per job it may run at once,
  // whatever its jobs' sizes (merged LogEvents requests, single Pub/Sub messages)
  const eventsBudget = new EventsBudget(common.concurrency * EVENTS_PER_JOB_SLOT, common.concurrency, o.mergedJobEvents ?? MERGED_JOB_EVENTS);
  const runEvents = (job: Job<EventsQueueJob>) => eventsBudget.run(eventsJobWeight(job.data), () => asPermanent(() => processEventsJob(job, eventDeps)));
  const findDecision = o.decisions ?? new DecisionsWarehouse(o.warehouse).findDecision;
  const interactionDeps = {
    ...deps,
    opsFor: o.interactionOps,
    ranking: o.ranking,
    decisions: findDecision,
    decisionWaitMs: o.decisionWaitMs,
    deadLetter: async (interaction: InteractionJob, id: string, reason: string) => {
      o.log.error(
        { jobId: id, queue: 'log_treatment_interaction', errMessage: reason },
        'an interaction of a merged job can never be stored; stored as a dead letter',
      );
      await deadLetters.store({ projectId: interaction.projectId, messageId: id, source: 'log_treatment_interaction', reason, payload: interaction });
      o.onMetric?.('deadLetters', 1);
    },
  };
  const runInteraction = (job: Job<InteractionsQueueJob>) => asPermanent(() => processInteractionJob(job, interactionDeps));
  const events = new Worker<EventsQueueJob, number>(QUEUE.events, runEvents, common);
  eventsBudget.attach(events);
  const interactions = new Worker<InteractionsQueueJob, number>(QUEUE.interactions, runInteraction, common);

  // impact's worker, on the same options and writer; it shares the isolation and dead-letter paths below
  const decisionDeps = { ...deps, returnedCaps: o.returnedCaps, markerGraceSeconds: markerGraceSeconds(o.lockMs) };
  const { worker: decisions, run: runDecisions } = startDecisionsWorker(common, decisionDeps);

  // Suspects run one at a time with this process's other workers paused (they finish their
  // active jobs first), so if a suspect kills the process it takes no other job with it, and a
  // suspect that stalls here is the culprit. Its identity is its original job id (or
  // `<jobId>.<index>` for a request of a merged job, exactly its identity there): same marker,
  // same de-duplication keys, so what was applied before stays applied once.
  let closing: Promise<void> | undefined;
  const isolated = new Worker<IsolatedJob, number>(
    ISOLATION_QUEUE,
    async (job) => {
      await Promise.all([events.pause(), interactions.pause(), decisions.pause()]);
      try {
        const inner = { id: job.id, data: job.data.data } as Job;
        if (job.data.queue === 'log_events') return await runEvents(inner as Job<EventsQueueJob>);
        if (job.data.queue === 'decision_log') return await runDecisions(inner as Job<DecisionsJob>);
        return await runInteraction(inner as Job<InteractionsQueueJob>);
      } finally {
        if (!closing) for (const w of [events, interactions, decisions]) void w.resume();
      }
    },
    { ...common, concurrency: 1, maxStalledCount: ISOLATED_MAX_STALLS },
  );
  const isolationQueue = new Queue<IsolatedJob>(ISOLATION_QUEUE, { connection: o.connection, prefix: bullPrefix(o.redisPrefix, o.connection) });
  isolationQueue.on('error', queueErrorLogger(o.log, 'isolation queue error'));
  const isolate = async (job: Job, source: DeadLetterSource, items: unknown[] | undefined): Promise<number> => {
    const jobs = items
      ? items.map((data, i) => ({ name: 'isolated', data: { queue: source, data }, opts: { ...INGEST_JOB_OPTIONS, jobId: `${job.id}.${i}` } }))
      : [{ name: 'isolated', data: { queue: source, data: job.data }, opts: { ...INGEST_JOB_OPTIONS, jobId: String(job.id) } }];
    await isolationQueue.addBulk(jobs);
    return jobs.length;
  };

  const onFailed = (fixedSource?: DeadLetterSource) => async (job: Job | undefined, err: Error) => {
    if (!job) return;
    const inIsolation = fixedSource === undefined;
    const source: DeadLetterSource = fixedSource ?? (job.data as IsolatedJob).queue;
    const data = (inIsolation ? (job.data as IsolatedJob).data : job.data) as IsolatedJob['data'] | undefined;
    const stalledOut = err.message === STALLED_OUT;
    const final = stalledOut || err instanceof UnrecoverableError || err.name === 'UnrecoverableError' || job.attemptsMade >= (job.opts.attempts ?? 1);
    if (!final) {
      // An interaction waiting for its decision is expected to retry a few times: not a warning
      o.log[err.name === 'DecisionNotYetStored' ? 'debug' : 'warn'](
        { jobId: job.id, queue: source, attemptsMade: job.attemptsMade, errMessage: err.message },
        'job failed; will retry with backoff',
      );
      return;
    }
    const items = mergedItems(data);
    try {
      if (stalledOut && !inIsolation) {
        const n = await isolate(job, source, items);
        o.log.error(
          { jobId: job.id, queue: source, stalls: job.stalledCounter, isolated: n },
          'a job was held by workers that died; retried alone to tell the job that kills its worker from the ones that died with it',
        );
        return;
      }
      const reason = stalledOut
        ? `stalled ${maxStalls + 1 + job.stalledCounter} times: the worker processing it died (${job.stalledCounter} of them while it was processed alone)`
        : err.message;
      o.log.error({ jobId: job.id, queue: source, reason }, 'job failed permanently; stored as a dead letter');
      // A merged job holds requests or interactions of many projects: each is a dead letter of its own project.
      const letters = items
        ? items.map((r, i) => ({ projectId: String(r?.projectId ?? ''), messageId: `${job.id}.${i}`, payload: r }))
        : [
            {
              projectId: String((data as { projectId?: unknown } | undefined)?.projectId ?? decisionsProject(data as DecisionsJob | undefined)),
              messageId: String(job.id),
              payload: data,
            },
          ];
      for (const l of letters) await deadLetters.store({ ...l, source, reason });
      o.onMetric?.('deadLetters', letters.length);
    } catch (e) {
      o.log.error({ err: e, jobId: job.id }, 'could not store the dead letter; the failed job stays in its queue');
    }
  };
  events.on('failed', onFailed('log_events'));
  interactions.on('failed', onFailed('log_treatment_interaction'));
  decisions.on('failed', onFailed('decision_log'));
  isolated.on('failed', onFailed());
  for (const w of [events, interactions, decisions, isolated]) w.on('error', queueErrorLogger(o.log, 'worker error'));
  if (o.metrics) for (const w of [events, interactions, decisions, isolated]) instrumentWorker(w, o.metrics);
  // A completed job is never retried: its markers only have to outlive a duplicate execution
  // still running on a worker that lost the job's lock, so they are cut to a grace of 10 locks
  // (at least a minute). Redis then holds the markers of jobs in flight or just completed; a lost
  // cut expires with JOB_MARKER_TTL_SECONDS.
  const graceSeconds = markerGraceSeconds(o.lockMs);
  const dropMarkers = (job: Job, units: AppliedUnit[], extra: string[] = []) => {
    o.profiles
      .expireJobMarkers(units, extra, graceSeconds)
      .catch((err: unknown) => o.log.warn({ err, jobId: job.id }, 'job markers not shortened; they expire on their own'));
  };
  const interactionDone = (job: Job, data: InteractionsQueueJob) => {
    const units = interactionsJobUnits(data, job.id!);
    const ranking = o.ranking;
    if (units.length > 0) dropMarkers(job, units, ranking ? units.map((u) => ranking.store.markerKey(u.projectId, u.id)) : []);
  };
  events.on('completed', (job) => dropMarkers(job, eventsJobUnits(job.data, job.id!)));
  interactions.on('completed', (job) => interactionDone(job, job.data));
  // a decisions job shortens its markers itself (only it knows which users had capped treatments)
  isolated.on('completed', (job) => {
    if (job.data.queue === 'log_events') dropMarkers(job, eventsJobUnits(job.data.data as EventsQueueJob, job.id!));
    else if (job.data.queue !== 'decision_log') interactionDone(job, job.data.data as InteractionsQueueJob);
  });

  return {
    writer,
    workers: [events, interactions, decisions],
    close: (graceMs = CLOSE_GRACE_MS) => {
      // Workers finish their active jobs (which await their inserts) before close resolves.
      closing ??= (async () => {
        const started = performance.now();
        await closeWorkers([events, interactions, decisions, isolated], graceMs, o.log);
        // Rows of jobs left unfinished may still be buffered: their inserts go out (the jobs are
        // retried anyway, and the tables collapse the copies).
        await settlesWithin(Promise.all([writer.drain(), isolationQueue.close()]), Math.max(1000, graceMs - (performance.now() - started)));
      })();
      return closing;
    },
  };
}
