import { randomUUID } from 'node:crypto';
import type { Queue } from 'bullmq';
import { UnavailableError } from '../platform/errors.js';
import { INGEST_JOB_OPTIONS } from '../platform/queues.js';

interface Pending<T> {
  data: T;
  /** the caller's job id (one job per item only) */
  jobId: string | undefined;
  weight: number;
  resolve: () => void;
  reject: (err: unknown) => void;
}

type QueuedJob = { name: string; data: unknown; opts: typeof INGEST_JOB_OPTIONS & { jobId: string } };

export interface EnqueueBatcherOptions<T> {
  /** Most jobs sent in one `addBulk` (a lone job: `add`). @defaultValue 500 */
  maxBatch?: number;
  /** A request waits at most this long for Redis before it gets 503. @defaultValue 1000 */
  timeoutMs?: number;
  /**
   * Merge mode: the items of a turn become few jobs, built by `build`, each of items whose
   * weights (the callers' hints, e.g. their number of events) add up to at most `maxWeight`;
   * a heavier item goes alone. Bounds what one job holds in a worker's memory.
   */
  merge?: { build: (items: T[]) => unknown; maxWeight: number; minWeight?: number };
  /**
   * Merge mode: how long the first item of a batch waits for others to share its job (ms); a
   * batch whose weight reaches `maxWeight` goes at once, and one that reaches `minWeight` at the
   * end of that turn of the event loop, with whatever else arrived in it. 0: the items of one
   * event-loop turn. @defaultValue 0
   */
  lingerMs?: number;
}

/**
 * Gathers the jobs of concurrent requests into one `addBulk` (one Redis round trip for many
 * requests), or, in merge mode, into few merged jobs. Each caller awaits the promise of the batch
 * its item went out in, so a 200 is only ever sent for work Redis has accepted. A batch is flushed
 * on the next turn of the event loop, so a lone request is not delayed, or, with `lingerMs`, once
 * it is full, at the end of the turn in which it reached `minWeight`, or that long after its first
 * item: a job's cost in the queue and the workers (add, fetch, completion) is then shared by the
 * requests of several turns.
 */
export class EnqueueBatcher<T> {
  private pending: Pending<T>[] = [];
  private pendingWeight = 0;
  /** The flush at the end of the current turn, when one is due. */
  private turnEnd: NodeJS.Immediate | undefined;
  private lingerTimer: NodeJS.Timeout | undefined;
  private readonly maxBatch: number;
  private readonly timeoutMs: number;
  /** Jobs and item weights (events) Redis accepted from this batcher: the backlog monitor's mix. */
  readonly accepted = { jobs: 0, weight: 0 };

  constructor(
    private readonly queue: Queue,
    private readonly jobName: string,
    private readonly opts: EnqueueBatcherOptions<T> = {},
  ) {
    this.maxBatch = opts.maxBatch ?? 500;
    this.timeoutMs = opts.timeoutMs ?? 1000;
  }

  /**
   * Resolves once the item is durably in Redis. `jobId` (one job per item) makes a re-add of the
   * same work a no-op; without it the job gets a fresh id, as does every merged job. `weight`:
   * the item's share of a merged job's `maxWeight`.
   */
  enqueue(data: T, opts: { jobId?: string; weight?: number } = {}): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const weight = opts.weight ?? 1;
      this.pending.push({ data, jobId: opts.jobId, weight, resolve, reject });
      this.pendingWeight += weight;
      const merge = this.opts.merge;
      const lingerMs = merge ? (this.opts.lingerMs ?? 0) : 0;
      if (this.pending.length >= this.maxBatch || (lingerMs > 0 && this.pendingWeight >= merge!.maxWeight)) this.flush();
      else if (lingerMs > 0 && this.pendingWeight < (merge!.minWeight ?? Infinity)) this.lingerTimer ??= setTimeout(() => this.flush(), lingerMs);
      else this.flushAtTurnEnd();
    });
  }

  /** Flushes once the current turn of the event loop has taken in what arrived with it. */
  private flushAtTurnEnd(): void {
    this.turnEnd ??= setImmediate(() => this.flush());
  }

  private flush(): void {
    clearImmediate(this.turnEnd);
    this.turnEnd = undefined;
    clearTimeout(this.lingerTimer);
    this.lingerTimer = undefined;
    this.pendingWeight = 0;
    while (this.pending.length > 0) {
      const batch = this.pending.splice(0, this.maxBatch);
      void this.send(batch);
    }
  }

  /** One job per item, or (merge mode) per group of items. */
  private jobsOf(batch: Pending<T>[]): QueuedJob[] {
    const merge = this.opts.merge;
    if (!merge) return batch.map((p) => ({ name: this.jobName, data: p.data, opts: { ...INGEST_JOB_OPTIONS, jobId: p.jobId ?? randomUUID() } }));
    const jobs: QueuedJob[] = [];
    let group: T[] = [];
    let weight = 0;
    const close = () => {
      jobs.push({ name: this.jobName, data: merge.build(group), opts: { ...INGEST_JOB_OPTIONS, jobId: randomUUID() } });
      group = [];
      weight = 0;
    };
    for (const p of batch) {
      if (group.length > 0 && weight + p.weight > merge.maxWeight) close();
      group.push(p.data);
      weight += p.weight;
    }
    if (group.length > 0) close();
    return jobs;
  }

  /**
   * A lone job (a LogEvents request of a quiet turn, or one merged job) goes by `add`, one script
   * call; several by `addBulk`, whose pipeline costs about 40 µs more to build: ioredis copies
   * every command defined on the connection, BullMQ's 64 scripts, onto each new pipeline
   * (bench/micro/pipeline-cost.ts). Both add atomically with the same options and job id.
   */
  private add(jobs: QueuedJob[]): Promise<unknown> {
    if (jobs.length === 1) return this.queue.add(jobs[0].name, jobs[0].data, jobs[0].opts);
    return this.queue.addBulk(jobs);
  }

  private async send(batch: Pending<T>[]): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_r, reject) => {
      timer = setTimeout(() => reject(new UnavailableError('the ingestion queue did not answer in time; retry the request', 'redis')), this.timeoutMs);
    });
    try {
      const jobs = this.jobsOf(batch);
      await Promise.race([this.add(jobs), timeout]);
      this.accepted.jobs += jobs.length;
      for (const p of batch) this.accepted.weight += p.weight;
      for (const p of batch) p.resolve();
    } catch (err) {
      const e = err instanceof UnavailableError ? err : new UnavailableError('the ingestion queue is unavailable; retry the request', 'redis');
      for (const p of batch) p.reject(e);
    } finally {
      clearTimeout(timer);
    }
  }
}
