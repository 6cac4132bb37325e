import { randomUUID } from 'node:crypto';
import type { Queue } from 'bullmq';
import type { Logger } from 'pino';
import type { DecisionRecord, DecisionSink } from './decisions.js';
import { INGEST_JOB_OPTIONS } from '../platform/queues.js';
import { type DecisionsJob } from './decisions.js';

type QueuedDecisions = { name: string; data: DecisionsJob; opts: typeof INGEST_JOB_OPTIONS & { jobId: string } };

export interface DecisionLogOptions {
  /** Records (responses) per job at most: bounds what one job holds in a worker. @defaultValue 200 */
  maxRecordsPerJob?: number;
  /**
   * Records held in memory at most while Redis does not accept them (outage); beyond it new
   * records are dropped and counted. Bounds the process's memory. @defaultValue 100000
   */
  maxPending?: number;
  /** Wait before re-sending a batch Redis refused. @defaultValue 1000 */
  retryDelayMs?: number;
  /** A send that has not finished after this long is treated as failed and re-sent. @defaultValue 5000 */
  timeoutMs?: number;
  /** Counts records queued and dropped (for /metrics). */
  onMetric?: (name: 'decisionsQueued' | 'decisionsDropped', n: number) => void;
}

/**
 * The decision log's producer: `record` puts the decisions of a response into memory and
 * returns at once (never throws, never awaited by the response); the records of one event-loop
 * turn go to Redis as few jobs in one `addBulk` (one round trip for many responses, like
 * EnqueueBatcher does for LogEvents). A batch Redis refuses is re-sent after a pause, so a short
 * outage loses nothing; only beyond `maxPending` records (a long outage) are new ones dropped,
 * counted and logged, rather than growing memory without bound.
 */
export class DecisionLogProducer implements DecisionSink {
  private pending: DecisionRecord[] = [];
  /** Jobs Redis refused, re-sent after `retryDelayMs` with the same ids. */
  private retry: QueuedDecisions[] = [];
  private scheduled = false;
  private sending = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private dropped = 0;
  private readonly maxRecordsPerJob: number;
  private readonly maxPending: number;
  private readonly retryDelayMs: number;
  private readonly timeoutMs: number;

  constructor(
    private readonly queue: Queue,
    private readonly log: Logger,
    private readonly opts: DecisionLogOptions = {},
  ) {
    this.maxRecordsPerJob = opts.maxRecordsPerJob ?? 200;
    this.maxPending = opts.maxPending ?? 100_000;
    this.retryDelayMs = opts.retryDelayMs ?? 1000;
    this.timeoutMs = opts.timeoutMs ?? 5000;
  }

  record(rec: DecisionRecord): void {
    try {
      if (rec.decisions.length === 0 || this.closed) return;
      if (this.pending.length + this.sending + this.retry.length * this.maxRecordsPerJob >= this.maxPending) {
        if (this.dropped++ % 10_000 === 0) this.log.error({ dropped: this.dropped }, 'decision log: Redis does not accept decisions and the buffer is full; dropping new decisions');
        this.opts.onMetric?.('decisionsDropped', 1);
        return;
      }
      this.pending.push(rec);
      if (!this.scheduled && this.retryTimer === undefined) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    } catch (err) {
      // The sink must never fail a response.
      this.log.error({ err }, 'decision log: could not record a decision');
    }
  }

  private flush(): void {
    this.scheduled = false;
    if (this.pending.length === 0) return;
    const jobs = this.jobsOf(this.pending);
    this.pending = [];
    void this.send(jobs);
  }

  private jobsOf(batch: DecisionRecord[]): QueuedDecisions[] {
    const jobs: QueuedDecisions[] = [];
    for (let i = 0; i < batch.length; i += this.maxRecordsPerJob) {
      jobs.push({ name: 'decisions', data: { kind: 'decisions', records: batch.slice(i, i + this.maxRecordsPerJob) }, opts: { ...INGEST_JOB_OPTIONS, jobId: randomUUID() } });
    }
    return jobs;
  }

  private async send(jobs: QueuedDecisions[]): Promise<void> {
    const records = jobs.reduce((n, j) => n + j.data.records.length, 0);
    this.sending += records;
    let timer: NodeJS.Timeout | undefined;
    try {
      const timeout = new Promise<never>((_r, reject) => {
        timer = setTimeout(() => reject(new Error('the decisions queue did not answer in time')), this.timeoutMs);
      });
      // Job ids are fixed when the jobs are built: a re-send after a timeout whose add had in
      // fact succeeded is a no-op in BullMQ (and the rows would collapse in ClickHouse anyway).
      await Promise.race([this.queue.addBulk(jobs), timeout]);
      this.opts.onMetric?.('decisionsQueued', records);
    } catch (err) {
      if (this.closed) {
        this.log.warn({ err, records }, 'decision log: decisions not queued at shutdown');
        return;
      }
      this.log.warn({ err, records }, 'decision log: Redis refused decisions; retrying');
      this.retry.push(...jobs);
      this.retryTimer ??= setTimeout(() => {
        this.retryTimer = undefined;
        const again = this.retry;
        this.retry = [];
        void this.send(again);
        this.flush();
      }, this.retryDelayMs);
    } finally {
      clearTimeout(timer);
      this.sending -= records;
    }
  }

  /** Sends what is pending (one last attempt), stops accepting records and closes the queue. */
  async close(): Promise<void> {
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    const jobs = [...this.retry, ...this.jobsOf(this.pending)];
    this.retry = [];
    this.pending = [];
    this.closed = true;
    if (jobs.length > 0) await this.send(jobs);
    await this.queue.close();
  }
}
