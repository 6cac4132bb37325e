import type { Queue } from 'bullmq';
import type { ChainableCommander, Redis } from 'ioredis';
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
  /** Queue of interaction jobs (merged LogTreatmentInteraction calls) and its producers; an interaction counts as an event. */
  interactionsQueue: Queue;
  interactionsProducers: AcceptedCounter[];
  /**
   * Hash of the queues' job mix, shared by every process: fields `jobs` and `events` (events
   * queue), `interactionJobs` and `interactions`.
   */
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
 * (waiting, delayed, active, prioritized) and both queues' job mix.
 *
 * Event jobs hold 1 to 1,000 events (merged LogEvents jobs up to 100, a large request or Pub/Sub
 * message one job), interaction jobs 1 to 100 interactions, so each queue's jobs are converted
 * to events with the items-per-job ratio of the jobs every producer enqueued since the previous
 * poll (the shared `mixKey` hash, which each process bumps by what it enqueued), smoothed. An
 * estimate, but one that cannot drift: it is recomputed from the queues on every poll, and nothing has to be
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
  private readonly mixes: [JobMix, JobMix];
  private readonly pollMs: number;

  constructor(private readonly o: IngestBacklogOptions) {
    this.pollMs = o.pollMs ?? 250;
    this.mixes = [new JobMix(o.eventsProducers, 'jobs', 'events'), new JobMix(o.interactionsProducers, 'interactionJobs', 'interactions')];
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
      const [eventsMix, interactionsMix] = this.mixes;
      const deltas = this.mixes.map((m) => m.unsent());
      let bump: Promise<unknown> | undefined;
      if (deltas.some((d) => d.jobs > 0)) {
        const multi = this.o.redis.multi();
        this.mixes.forEach((m, i) => m.bump(multi, this.o.mixKey, deltas[i]));
        bump = multi.exec();
      }
      const [eventsCounts, interactionCounts, mix] = await Promise.all([
        this.o.eventsQueue.getJobCounts(...PENDING_STATES),
        this.o.interactionsQueue.getJobCounts(...PENDING_STATES),
        this.o.redis.hmget(this.o.mixKey, ...eventsMix.fields, ...interactionsMix.fields),
        bump,
      ]);
      this.mixes.forEach((m, i) => m.sent(deltas[i]));
      eventsMix.update(Number(mix[0] ?? 0), Number(mix[1] ?? 0));
      interactionsMix.update(Number(mix[2] ?? 0), Number(mix[3] ?? 0));
      const events = pending(eventsCounts) * eventsMix.perJob + pending(interactionCounts) * interactionsMix.perJob;
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

  close(): void {
    this.closed = true;
    clearInterval(this.timer);
  }
}

/** One queue's job mix: what this process's producers enqueued (bumped into the shared hash) and the items per job of every process's recent jobs. */
class JobMix {
  private flushed = { jobs: 0, weight: 0 };
  private last: { jobs: number; items: number } | undefined;
  private ratio: number | undefined;
  readonly fields: [string, string];

  constructor(
    private readonly producers: AcceptedCounter[],
    jobsField: string,
    itemsField: string,
  ) {
    this.fields = [jobsField, itemsField];
  }

  /** Items per job (1 before anything is known). */
  get perJob(): number {
    return this.ratio ?? 1;
  }

  /** What the producers enqueued since the last bump. */
  unsent(): { jobs: number; weight: number; total: { jobs: number; weight: number } } {
    let jobs = 0;
    let weight = 0;
    for (const p of this.producers) {
      jobs += p.accepted.jobs;
      weight += p.accepted.weight;
    }
    return { jobs: jobs - this.flushed.jobs, weight: weight - this.flushed.weight, total: { jobs, weight } };
  }

  bump(multi: ChainableCommander, key: string, d: { jobs: number; weight: number }): void {
    if (d.jobs > 0) multi.hincrby(key, this.fields[0], d.jobs).hincrby(key, this.fields[1], d.weight);
  }

  sent(d: { total: { jobs: number; weight: number } }): void {
    this.flushed = d.total;
  }

  /** Items per job of what every producer enqueued since the last poll, smoothed; before any delta, the all-time mix. */
  update(jobs: number, items: number): void {
    const last = this.last;
    this.last = { jobs, items };
    if (jobs <= 0) return;
    if (last === undefined || this.ratio === undefined) {
      this.ratio = Math.max(1, items / jobs);
      return;
    }
    const dj = jobs - last.jobs;
    if (dj <= 0) return;
    const recent = Math.max(1, (items - last.items) / dj);
    this.ratio = 0.5 * this.ratio + 0.5 * recent;
  }
}
