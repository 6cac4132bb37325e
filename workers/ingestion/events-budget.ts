import type { EventsQueueJob } from '../../shared/ingestion/index.js';

/** What the budget steers: a BullMQ worker's concurrency, read before every fetch. */
export interface ConcurrencyKnob {
  concurrency: number;
}

/**
 * The events a job of the events queue holds: a merged job's requests' events, a single request's
 * or message's; 1 for anything else (a user-attributes update, a malformed payload).
 */
export function eventsJobWeight(data: EventsQueueJob | undefined): number {
  if (data?.kind === 'eventsBatch' && Array.isArray(data.requests)) {
    let n = 0;
    for (const r of data.requests) n += Array.isArray(r?.events) ? r.events.length : 1;
    return Math.max(1, n);
  }
  return data?.kind === 'events' && Array.isArray(data.events) ? Math.max(1, data.events.length) : 1;
}

/**
 * Bounds the events the events worker holds at once, not only its jobs. Its jobs differ in size:
 * a Pub/Sub message is a job of one message's events, a merged LogEvents job holds up to
 * MERGED_JOB_EVENTS. A concurrency of jobs sized for the small ones would let the large ones hold
 * several times the memory; sized for the large ones, it would starve the small ones (each waits
 * for the insert holding its rows). BullMQ fetches jobs in bursts up to its `concurrency`, before
 * any of them runs, so the concurrency itself follows the jobs' recent mean size: `maxEvents` ÷
 * that mean, at most `maxJobs`. Should the jobs running reach `maxEvents` all the same (larger
 * jobs than of late), no further job is fetched until some finish: BullMQ reads `concurrency`
 * before each fetch, and a finishing job's fetch of the next one comes after `run` returns.
 */
export class EventsBudget {
  private events = 0;
  private jobs = 0;
  private meanWeight: number;
  private worker: ConcurrencyKnob | undefined;

  /** `initialWeight`: the mean assumed before any job ran (the largest jobs: no burst of them overshoots at start). */
  constructor(
    private readonly maxEvents: number,
    private readonly maxJobs: number,
    initialWeight: number,
  ) {
    this.meanWeight = Math.max(1, initialWeight);
  }

  /** The worker whose concurrency follows the budget (set once it exists: its processor calls `run`). */
  attach(worker: ConcurrencyKnob): void {
    this.worker = worker;
    this.steer();
  }

  /** Runs `fn` with `weight` events counted as held for its duration. */
  async run<T>(weight: number, fn: () => Promise<T>): Promise<T> {
    this.events += weight;
    this.jobs++;
    this.meanWeight = 0.9 * this.meanWeight + 0.1 * weight;
    this.steer();
    try {
      return await fn();
    } finally {
      this.events -= weight;
      this.jobs--;
      this.steer();
    }
  }

  /** Events held now (for tests). */
  get held(): number {
    return this.events;
  }

  private steer(): void {
    if (!this.worker) return;
    // at the bound: no more jobs than are active (at least 1, as BullMQ requires)
    const want =
      this.events >= this.maxEvents
        ? Math.max(1, Math.min(this.jobs, this.maxJobs))
        : Math.max(1, Math.min(this.maxJobs, Math.floor(this.maxEvents / this.meanWeight)));
    if (this.worker.concurrency !== want) this.worker.concurrency = want;
  }
}
