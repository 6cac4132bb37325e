import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { bullPrefix, QUEUE } from './queues/queues.js';

export type IngestMetric = 'eventsWritten' | 'duplicatesDropped' | 'deadLetters';
export type PubsubAckOutcome = 'queued' | 'dead_letter';

/** Job states reported per queue; `waiting` is the backlog that matters for alerting. */
export const QUEUE_STATES = ['waiting', 'active', 'delayed', 'prioritized', 'failed', 'completed'] as const;

export interface MetricsOptions {
  /** Clock for the age of the oldest waiting job. */
  now: () => number;
  /**
   * A scrape gives up on Redis after this long and reports `tds_redis_up 0`, so a Redis that
   * never connected cannot hang the scraper. @defaultValue 2000
   */
  queueStatsTimeoutMs?: number;
}

/** Process-wide counters and gauges for `GET /metrics`, in a registry of their own. */
export interface Metrics {
  readonly registry: Registry;
  readonly contentType: string;
  observeRequest(operation: string, status: number, seconds: number): void;
  /** Same shape as the ingest workers' `onMetric` option, so it can be passed as is. */
  countIngest(name: IngestMetric, n: number): void;
  pubsubReceived(project: string): void;
  pubsubAcked(project: string, outcome: PubsubAckOutcome): void;
  /** Queues whose depth is read on each scrape; returns a function that stops watching them. */
  watchQueues(queues: Queue[]): () => void;
  /** The exposition text (Prometheus text format 0.0.4). Never rejects because Redis is down. */
  render(): Promise<string>;
}

interface QueueStats {
  name: string;
  counts: Record<string, number>;
  oldestWaitingTs?: number;
}

/** The oldest waiting job: `getWaiting` lists ascending (oldest first), so index 0 is the oldest. */
async function readQueue(q: Queue): Promise<QueueStats> {
  const [counts, oldest] = await Promise.all([q.getJobCounts(...QUEUE_STATES), q.getWaiting(0, 0)]);
  return { name: q.name, counts, oldestWaitingTs: oldest[0]?.timestamp };
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

/**
 * Read-and-retry handles on every queue for the dashboard and the gauges, on a shared connection.
 * `skipVersionCheck`: BullMQ's start-up INFO would otherwise run under the fail-fast connection's
 * command timeout, and one timed-out INFO (Redis down, or the event loop busy at boot) leaves a
 * Queue object broken for the life of the process. The producers and workers check the version.
 * `skipMetasUpdate`: observers leave the queue's metadata to the producers.
 */
export function openQueueHandles(connection: Redis, redisPrefix: string): Queue[] {
  const prefix = bullPrefix(redisPrefix);
  return Object.values(QUEUE).map((name) => {
    const q = new Queue(name, { connection, prefix, skipVersionCheck: true, skipMetasUpdate: true });
    // Errors surface on the awaited calls; the listener keeps an outage from crashing the process.
    q.on('error', () => undefined);
    return q;
  });
}

export function createMetrics(opts: MetricsOptions): Metrics {
  const registry = new Registry();
  const registers = [registry];
  const watched = new Set<Queue>();
  const timeoutMs = opts.queueStatsTimeoutMs ?? 2000;

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

  const requests = new Counter({ name: 'http_requests_total', help: 'HTTP requests by operation (route) and status code', labelNames: ['operation', 'status'], registers });
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency by operation (route)',
    labelNames: ['operation'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers,
  });
  const ingest: Record<IngestMetric, Counter> = {
    eventsWritten: new Counter({ name: 'ingest_events_written_total', help: 'Events stored by the ingest workers', registers }),
    duplicatesDropped: new Counter({ name: 'ingest_duplicates_dropped_total', help: 'Events dropped as duplicates (same insertId or redelivery)', registers }),
    deadLetters: new Counter({ name: 'ingest_dead_letters_total', help: 'Jobs that failed for good and were stored as dead letters', registers }),
  };
  const received = new Counter({ name: 'pubsub_messages_received_total', help: 'Pub/Sub messages received, by project', labelNames: ['project'], registers });
  const acked = new Counter({ name: 'pubsub_messages_acked_total', help: 'Pub/Sub messages acknowledged, by project and outcome', labelNames: ['project', 'outcome'], registers });

  new Gauge({
    name: 'queue_jobs',
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
    name: 'queue_oldest_waiting_age_seconds',
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
    name: 'tds_redis_up',
    help: '1 when the statistics of the watched queues were read from Redis during this scrape, else 0',
    registers,
    async collect() {
      this.set((await snapshot()) ? 1 : 0);
    },
  });

  return {
    registry,
    contentType: registry.contentType,
    observeRequest: (operation, status, seconds) => {
      requests.inc({ operation, status: String(status) });
      duration.observe({ operation }, seconds);
    },
    countIngest: (name, n) => {
      if (n > 0) ingest[name].inc(n);
    },
    pubsubReceived: (project) => received.inc({ project }),
    pubsubAcked: (project, outcome) => acked.inc({ project, outcome }),
    watchQueues: (queues) => {
      for (const q of queues) watched.add(q);
      return () => {
        for (const q of queues) watched.delete(q);
      };
    },
    render: () => registry.metrics(),
  };
}
