import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Queue } from 'bullmq';
import { QUEUE } from './queues.js';
import { readQueue, type QueueStats } from './queue-handles.js';
import type { MetricsSnapshot } from './metrics-snapshots.js';
import { registerRequestMetrics } from './request-metrics.js';
import { METRIC_PREFIX, registerStatsCounters, type CacheStats, type DecisionLogStats, type DeliveryStats, type OverloadStats } from './metrics-stats.js';

export { METRIC_PREFIX } from './metrics-stats.js';
export { mergeSnapshots } from './metrics-snapshots.js';
export { openQueueHandle, openQueueHandles, QUEUE_STATES, readQueue, type QueueStats } from './queue-handles.js';
export type { CacheStats, DecisionLogStats, DeliveryStats, OverloadStats } from './metrics-stats.js';

export type IngestMetric = 'eventsWritten' | 'duplicatesDropped' | 'deadLetters' | 'identityMergesRefused';
export type PubsubAckOutcome = 'queued' | 'dead_letter';
export type JobOutcome = 'completed' | 'failed';

/** One registry's figures in prom-client's JSON form: what a thread hands to its host for one scrape. */
export type { MetricsSnapshot };

export interface MetricsOptions {
  /** Clock for the age of the oldest waiting job. */
  now: () => number;
  /**
   * A scrape gives up on Redis after this long and reports `tds_redis_up 0`, so a Redis that
   * never connected cannot hang the scraper. @defaultValue 2000
   */
  queueStatsTimeoutMs?: number;
}

/** The counters and gauges of one thread, in a registry of their own, served on the ops listener. */
export interface Metrics {
  readonly registry: Registry;
  readonly contentType: string;
  /** GetTreatments outcomes; the delivery operation increments the fields directly. */
  readonly delivery: DeliveryStats;
  /** The decision log's producer increments these directly. */
  readonly decisionLog: DecisionLogStats;
  /** The load shedder increments this directly. */
  readonly overload: OverloadStats;
  observeRequest(operation: string, status: number, seconds: number): void;
  /** A 503 answered because `dependency` (redis, pubsub, workers, other) was unreachable. */
  countUnavailable(dependency: string): void;
  /** An outage of `dependency` began, as this process saw it. */
  countOutage(dependency: string): void;
  /** Same shape as the ingest workers' `onMetric` option, so it can be passed as is. */
  countIngest(name: IngestMetric, n: number): void;
  pubsubReceived(project: string): void;
  pubsubAcked(project: string, outcome: PubsubAckOutcome): void;
  /** One ClickHouse insert of the batch writer: its rows, latency and whether it failed. */
  observeInsert(table: string, rows: number, seconds: number, failed: boolean): void;
  /** A job that finished an attempt (`failed` includes attempts that will be retried). */
  observeJob(queue: string, outcome: JobOutcome, seconds: number): void;
  /** A failed attempt that will be retried. */
  countRetry(queue: string): void;
  /** A job that failed for good (no attempt left, or poison). */
  countJobFailed(queue: string): void;
  /** Progress of a running recompute or backfill, `reason` as in the job (schedule, backfill, manual). */
  aggregationProgress(reason: string, fieldsDone: number, fieldsTotal: number, usersDelta: number): void;
  aggregationRunning(reason: string, delta: 1 | -1): void;
  /** Readiness as seen by this scrape: `tds_ready` and `tds_readiness_check_up{check}`. */
  setReadiness(checks: readonly string[], failed: ReadonlySet<string>): void;
  /** `stats` is read on each scrape as `tds_cache_requests_total{cache=name,result=hit|miss}`. */
  watchCache(name: string, stats: CacheStats): void;
  /** Queues whose depth is read on each scrape; returns a function that stops watching them. */
  watchQueues(queues: Queue[]): () => void;
  /**
   * Heap, GC, event-loop lag and process figures (prom-client's defaults, `tds_` prefix), labelled
   * with `thread`. Once per thread; later calls do nothing.
   */
  collectDefaults(thread: string): void;
  /** This registry as JSON, for a host that merges several threads into one scrape (`mergeSnapshots`). */
  snapshot(opts?: { threadOnly?: boolean }): Promise<MetricsSnapshot>;
  /** The exposition text (Prometheus text format 0.0.4). Never rejects because Redis is down. */
  render(): Promise<string>;
}

async function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`queue stats timed out after ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Process-wide default metrics: a thread other than the main one leaves them to the main thread. */
const PROCESS_WIDE = [`${METRIC_PREFIX}process_`, `${METRIC_PREFIX}nodejs_version_info`];

/** Pre-bound children per label value: the label set is hashed once, not per observation. */
function childCache<T>(make: (label: string) => T): (label: string) => T {
  const children = new Map<string, T>();
  return (label) => {
    let c = children.get(label);
    if (c === undefined) children.set(label, (c = make(label)));
    return c;
  };
}

export function createMetrics(opts: MetricsOptions): Metrics {
  const registry = new Registry();
  const registers = [registry];
  const watched = new Set<Queue>();
  const caches = new Map<string, CacheStats>();
  const delivery: DeliveryStats = { withTreatments: 0, empty: 0, treatmentsReturned: 0 };
  const decisionLog: DecisionLogStats = { queued: 0, dropped: 0 };
  const overload: OverloadStats = { shed: 0, inFlightLimit: 0 };
  const timeoutMs = opts.queueStatsTimeoutMs ?? 2000;
  const P = METRIC_PREFIX;
  let defaultsOn = false;

  // prom-client collects every metric concurrently; the gauges share one Redis read per scrape.
  let inflight: Promise<QueueStats[] | undefined> | undefined;
  const snapshot = () => {
    inflight ??= withTimeout(Promise.all([...watched].map(readQueue)), timeoutMs)
      .catch(() => undefined)
      .finally(() => {
        inflight = undefined;
      });
    return inflight;
  };

  const observeRequest = registerRequestMetrics(registers);
  const unavailable = new Counter({
    name: `${P}unavailable_responses_total`,
    help: 'Requests answered 503 because a dependency was unreachable, by dependency (redis, pubsub, workers, other); also in tds_http_requests_total',
    labelNames: ['dependency'],
    registers,
  });
  const outages = new Counter({
    name: `${P}dependency_outages_total`,
    help: 'Outages of a dependency this process saw begin (each is logged once when it begins and once when it ends), by dependency',
    labelNames: ['dependency'],
    registers,
  });
  unavailable.inc({ dependency: 'redis' }, 0);
  outages.inc({ dependency: 'redis' }, 0);
  const ingest: Record<IngestMetric, Counter> = {
    eventsWritten: new Counter({ name: `${P}ingest_events_written_total`, help: 'Events stored by the ingest workers', registers }),
    duplicatesDropped: new Counter({
      name: `${P}ingest_duplicates_dropped_total`,
      help: 'Events dropped as duplicates (same insertId or redelivery)',
      registers,
    }),
    deadLetters: new Counter({
      name: `${P}ingest_dead_letters_total`,
      help: 'Ingestion jobs or requests that failed for good and were stored as dead letters',
      registers,
    }),
    identityMergesRefused: new Counter({
      name: `${P}identity_merges_refused_total`,
      help: 'Events whose preLoginTempUserId was not merged: the id is a signed-in user of its own, or was merged into another user first (once per pair and process)',
      registers,
    }),
  };
  const received = new Counter({
    name: `${P}pubsub_messages_received_total`,
    help: 'Pub/Sub messages received, by project',
    labelNames: ['project'],
    registers,
  });
  const acked = new Counter({
    name: `${P}pubsub_messages_acked_total`,
    help: 'Pub/Sub messages acknowledged, by project and outcome',
    labelNames: ['project', 'outcome'],
    registers,
  });

  const insertSeconds = new Histogram({
    name: `${P}clickhouse_insert_duration_seconds`,
    help: "Latency of the batch writer's ClickHouse inserts, by table (failed inserts included)",
    labelNames: ['table'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers,
  });
  const insertRows = new Counter({
    name: `${P}clickhouse_insert_rows_total`,
    help: "Rows stored by the batch writer's ClickHouse inserts, by table",
    labelNames: ['table'],
    registers,
  });
  const insertErrors = new Counter({
    name: `${P}clickhouse_insert_errors_total`,
    help: 'Failed ClickHouse inserts of the batch writer, by table',
    labelNames: ['table'],
    registers,
  });
  const insertChildren = childCache((table) => ({ seconds: insertSeconds.labels(table), rows: insertRows.labels(table), errors: insertErrors.labels(table) }));
  // every table is present from the first scrape, so rate() and the alerts see a zero, not a gap
  for (const table of ['events', 'interactions']) {
    insertChildren(table).rows.inc(0);
    insertChildren(table).errors.inc(0);
  }

  const jobSeconds = new Histogram({
    name: `${P}job_duration_seconds`,
    help: 'Time a job attempt took from being picked up to finishing, by queue and outcome',
    labelNames: ['queue', 'outcome'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800],
    registers,
  });
  const retries = new Counter({
    name: `${P}job_retries_total`,
    help: 'Job attempts that failed and will be retried with backoff, by queue',
    labelNames: ['queue'],
    registers,
  });
  const jobsFailed = new Counter({
    name: `${P}jobs_failed_total`,
    help: 'Jobs that failed for good (poison, or no attempt left), by queue',
    labelNames: ['queue'],
    registers,
  });
  const jobChildren = childCache((queue) => ({
    completed: jobSeconds.labels(queue, 'completed'),
    failed: jobSeconds.labels(queue, 'failed'),
    retries: retries.labels(queue),
    failedForGood: jobsFailed.labels(queue),
  }));
  for (const queue of Object.values(QUEUE)) {
    jobChildren(queue).retries.inc(0);
    jobChildren(queue).failedForGood.inc(0);
  }

  const aggProgress = new Gauge({
    name: `${P}aggregation_progress_ratio`,
    help: 'Fields finished / fields in the latest recompute run of this process, by reason (backfill, schedule, manual); 1 when it finished',
    labelNames: ['reason'],
    registers,
  });
  const aggUsers = new Counter({
    name: `${P}aggregation_users_recomputed_total`,
    help: 'Profiles rewritten by recompute and backfill runs, by reason',
    labelNames: ['reason'],
    registers,
  });
  const aggRunning = new Gauge({
    name: `${P}aggregation_runs_active`,
    help: 'Recompute or backfill runs under way in this process, by reason',
    labelNames: ['reason'],
    registers,
  });
  for (const reason of ['backfill', 'schedule', 'manual', 'redis_restart']) {
    aggRunning.set({ reason }, 0);
    aggUsers.inc({ reason }, 0);
  }

  const ready = new Gauge({
    name: `${P}ready`,
    help: '1 when every readiness check of this process passed during this scrape (what /readyz answers), else 0',
    registers,
  });
  const checkUp = new Gauge({
    name: `${P}readiness_check_up`,
    help: 'Readiness checks of this process during this scrape (1 passed, 0 failed), by check',
    labelNames: ['check'],
    registers,
  });

  registerStatsCounters(registers, { caches, delivery, decisionLog, overload });

  new Gauge({
    name: `${P}queue_jobs`,
    help: 'Jobs per BullMQ queue and state (omitted while Redis does not answer)',
    labelNames: ['queue', 'state'],
    registers,
    async collect() {
      this.reset();
      for (const s of (await snapshot()) ?? []) {
        for (const [state, n] of Object.entries(s.counts)) this.set({ queue: s.name, state }, n);
      }
    },
  });
  new Gauge({
    name: `${P}queue_oldest_waiting_age_seconds`,
    help: 'Age of the oldest waiting job per queue, 0 when none waits (omitted while Redis does not answer)',
    labelNames: ['queue'],
    registers,
    async collect() {
      this.reset();
      const now = opts.now();
      for (const s of (await snapshot()) ?? []) {
        this.set({ queue: s.name }, s.oldestWaitingTs === undefined ? 0 : Math.max(0, (now - s.oldestWaitingTs) / 1000));
      }
    },
  });
  new Gauge({
    name: `${P}redis_up`,
    help: '1 when the statistics of the watched queues were read from Redis during this scrape, else 0',
    registers,
    async collect() {
      this.set((await snapshot()) ? 1 : 0);
    },
  });

  return {
    registry,
    contentType: registry.contentType,
    delivery,
    decisionLog,
    overload,
    observeRequest,
    countUnavailable: (dependency) => unavailable.inc({ dependency }),
    countOutage: (dependency) => outages.inc({ dependency }),
    countIngest: (name, n) => {
      if (n > 0) ingest[name].inc(n);
    },
    pubsubReceived: (project) => received.inc({ project }),
    pubsubAcked: (project, outcome) => acked.inc({ project, outcome }),
    observeInsert: (table, rows, seconds, failed) => {
      const c = insertChildren(table);
      c.seconds.observe(seconds);
      if (failed) c.errors.inc();
      else c.rows.inc(rows);
    },
    observeJob: (queue, outcome, seconds) => jobChildren(queue)[outcome].observe(seconds),
    countRetry: (queue) => jobChildren(queue).retries.inc(),
    countJobFailed: (queue) => jobChildren(queue).failedForGood.inc(),
    aggregationProgress: (reason, fieldsDone, fieldsTotal, usersDelta) => {
      aggProgress.set({ reason }, fieldsTotal === 0 ? 1 : fieldsDone / fieldsTotal);
      if (usersDelta > 0) aggUsers.inc({ reason }, usersDelta);
    },
    aggregationRunning: (reason, delta) => aggRunning.inc({ reason }, delta),
    setReadiness: (checks, failed) => {
      checkUp.reset();
      for (const check of checks) checkUp.set({ check }, failed.has(check) ? 0 : 1);
      ready.set(failed.size === 0 ? 1 : 0);
    },
    watchCache: (name, stats) => {
      caches.set(name, stats);
    },
    watchQueues: (queues) => {
      for (const q of queues) watched.add(q);
      return () => {
        for (const q of queues) watched.delete(q);
      };
    },
    collectDefaults: (thread) => {
      if (defaultsOn) return;
      defaultsOn = true;
      collectDefaultMetrics({ register: registry, prefix: P, labels: { thread } });
    },
    snapshot: async (o = {}) => {
      const all = (await registry.getMetricsAsJSON()) as MetricsSnapshot;
      return o.threadOnly ? all.filter((m) => !PROCESS_WIDE.some((p) => m.name.startsWith(p))) : all;
    },
    render: () => registry.metrics(),
  };
}
