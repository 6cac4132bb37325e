import { randomUUID } from 'node:crypto';
import type { Queue } from 'bullmq';
import { UnavailableError } from '../errors.js';
import { INGEST_JOB_OPTIONS } from './queues.js';

interface Pending<T> {
  data: T;
  jobId: string;
  resolve: () => void;
  reject: (err: unknown) => void;
}

export interface EnqueueBatcherOptions {
  /** Most jobs sent in one `addBulk`. @defaultValue 500 */
  maxBatch?: number;
  /** A request waits at most this long for Redis before it gets 503. @defaultValue 1000 */
  timeoutMs?: number;
}

/**
 * Gathers the jobs of concurrent requests into one `addBulk` (one Redis round trip for many
 * requests). Each caller awaits the promise of the batch its job went out in, so a 200 is only
 * ever sent for a job Redis has accepted. A batch is flushed on the next turn of the event loop,
 * so a lone request is not delayed.
 */
export class EnqueueBatcher<T> {
  private pending: Pending<T>[] = [];
  private scheduled = false;
  private readonly maxBatch: number;
  private readonly timeoutMs: number;

  constructor(
    private readonly queue: Queue,
    private readonly jobName: string,
    opts: EnqueueBatcherOptions = {},
  ) {
    this.maxBatch = opts.maxBatch ?? 500;
    this.timeoutMs = opts.timeoutMs ?? 1000;
  }

  /** Resolves once the job is durably in Redis. `jobId` makes a re-add of the same work a no-op. */
  enqueue(data: T, jobId: string = randomUUID()): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ data, jobId, resolve, reject });
      if (this.pending.length >= this.maxBatch) this.flush();
      else if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    while (this.pending.length > 0) {
      const batch = this.pending.splice(0, this.maxBatch);
      void this.send(batch);
    }
  }

  private async send(batch: Pending<T>[]): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_r, reject) => {
      timer = setTimeout(() => reject(new UnavailableError('the ingestion queue did not answer in time; retry the request')), this.timeoutMs);
    });
    try {
      await Promise.race([this.queue.addBulk(batch.map((p) => ({ name: this.jobName, data: p.data, opts: { ...INGEST_JOB_OPTIONS, jobId: p.jobId } }))), timeout]);
      for (const p of batch) p.resolve();
    } catch (err) {
      const e = err instanceof UnavailableError ? err : new UnavailableError('the ingestion queue is unavailable; retry the request');
      for (const p of batch) p.reject(e);
    } finally {
      clearTimeout(timer);
    }
  }
}
