import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { ResourceExhaustedError } from '../platform/errors.js';

/** What the monitor reads of this process's producers: jobs and events Redis accepted so far. */
export interface AcceptedCounter {
  readonly accepted: { jobs: number; weight: number };
}

export interface IngestBacklogOptions {
  /** Request-path connection (fail fast): a poll during an outage fails instead of queueing. */
  redis: Redis;
  /** Queue of event jobs (merged LogEvents requests, Pub/Sub messages) and its producers. */
  eventsQueue: Queue;
  eventsProducers: AcceptedCounter[];
  /** Queue of interaction jobs: one event each. */
  interactionsQueue: Queue;
  /** Hash of the events queue's job mix, shared by every process: fields `jobs` and `events`. */
  mixKey: string;
  /** INGEST_MAX_BACKLOG. */
  maxEvents: number;
  log: Logger;
  /** @defaultValue 250 */
  pollMs?: number;
}

const PENDING_STATES = ['waiting', 'delayed', 'active', 'prioritized'] as const;
/** A reading older than this is not trusted: ingestion is admitted (the enqueue itself answers 503 if Redis is down). */
const STALE_MS = 5_000;

function pending(counts: Record<string, number>): number {
  let n = 0;
  for (const s of PENDING_STATES) n += counts[s] ?? 0;
  return n;
}

/**
 * The ingestion backlog in events, for backpressure (429 beyond INGEST_MAX_BACKLOG), read without a Redis round trip per
 * request: every `pollMs` one concurrent batch of commands reads the pending jobs of both queues
 * (waiting, delayed, active, prioritized) and the events queue's job mix.
 *
 * Event jobs hold 1 to 1,000 events (merged LogEvents jobs up to 100, a large request or Pub/Sub
 * message one job), so jobs are converted to events with the events-per-job ratio of the jobs
 * every producer enqueued since the previous poll (the shared `mixKey` hash, which each process
 * bumps by what it enqueued), smoothed; interaction jobs are one event each. An estimate, but
 * one that cannot drift: it is recomputed from the queues on every poll, and nothing has to be
 * decremented when a job finishes (a crash between a job's completion and a decrement would
 * otherwise inflate a counter forever).
 *
 * The timer starts with the first question, so processes that never ingest never poll.
 */
export class IngestBacklog {
  private timer: NodeJS.Timeout | undefined;
  private reading: Promise<void> | undefined;
  private closed = false;
  private readAt = 0;
  private events = 0;
  /** Events drained per ms (smoothed), for Retry-After. */
  private drainPerMs = 0;
  private eventsPerJob: number | undefined;
  private lastMix: { jobs: number; events: number } | undefined;
  private flushed = { jobs: 0, weight: 0 };
  private readonly pollMs: number;

  constructor(private readonly o: IngestBacklogOptions) {
    this.pollMs = o.pollMs ?? 250;
  }

  /** Events pending in the queues at the last reading (estimate). */
  get backlog(): number {
    this.start();
    return this.events;
  }

  /** A fresh reading, for operators: unlike `backlog`, it starts no polling of its own. */
  async current(): Promise<number> {
    await this.poll();
    return this.events;
  }

  /** True while the backlog is over INGEST_MAX_BACKLOG (a fresh reading says so). */
  overLimit(): boolean {
    this.start();
    return this.events > this.o.maxEvents && Date.now() - this.readAt < STALE_MS;
  }

  /** Undefined when ingestion may go on, else the 429 to answer. */
  admission(): ResourceExhaustedError | undefined {
    if (!this.overLimit()) return undefined;
    const excess = this.events - this.o.maxEvents;
    const waitMs = this.drainPerMs > 0 ? Math.min(30_000, excess / this.drainPerMs) : 2_000;
    return new ResourceExhaustedError('the ingestion backlog is full; retry after the time in Retry-After', waitMs);
  }

  private start(): void {
    if (this.timer || this.closed) return;
    // a tick while a reading is still out is skipped: at most one reading at a time
    this.timer = setInterval(() => void (this.reading ?? this.poll()), this.pollMs);
    this.timer.unref();
    void this.poll();
  }

  /** A fresh reading: starts after the one in flight, if any (tests; also the timer). */
  async poll(): Promise<void> {
    while (this.reading) await this.reading;
    if (this.closed) return;
    this.reading = this.read().finally(() => {
      this.reading = undefined;
    });
    return this.reading;
  }

  private async read(): Promise<void> {
    try {
      let jobs = 0;
      let weight = 0;
      for (const p of this.o.eventsProducers) {
        jobs += p.accepted.jobs;
        weight += p.accepted.weight;
      }
      const dj = jobs - this.flushed.jobs;
      const de = weight - this.flushed.weight;
      const bump = dj > 0 ? this.o.redis.multi().hincrby(this.o.mixKey, 'jobs', dj).hincrby(this.o.mixKey, 'events', de).exec() : undefined;
      const [eventsCounts, interactionCounts, mix] = await Promise.all([
        this.o.eventsQueue.getJobCounts(...PENDING_STATES),
        this.o.interactionsQueue.getJobCounts(...PENDING_STATES),
        this.o.redis.hmget(this.o.mixKey, 'jobs', 'events'),
        bump,
      ]);
      this.flushed = { jobs, weight };
      this.updateRatio(Number(mix[0] ?? 0), Number(mix[1] ?? 0));
      const events = pending(eventsCounts) * (this.eventsPerJob ?? 1) + pending(interactionCounts);
      const now = Date.now();
      if (this.readAt > 0 && events < this.events) {
        const rate = (this.events - events) / Math.max(1, now - this.readAt);
        this.drainPerMs = this.drainPerMs === 0 ? rate : 0.7 * this.drainPerMs + 0.3 * rate;
      }
      this.events = events;
      this.readAt = now;
    } catch (err) {
      this.o.log.debug({ err }, 'could not read the ingestion backlog');
    }
  }

  /** Events per job of what every producer enqueued since the last poll, smoothed; before any delta, the all-time mix. */
  private updateRatio(jobs: number, events: number): void {
    const last = this.lastMix;
    this.lastMix = { jobs, events };
    if (jobs <= 0) return;
    if (last === undefined || this.eventsPerJob === undefined) {
      this.eventsPerJob = Math.max(1, events / jobs);
      return;
    }
    const dj = jobs - last.jobs;
    if (dj <= 0) return;
    const recent = Math.max(1, (events - last.events) / dj);
    this.eventsPerJob = 0.5 * this.eventsPerJob + 0.5 * recent;
  }

  close(): void {
    this.closed = true;
    clearInterval(this.timer);
  }
}
