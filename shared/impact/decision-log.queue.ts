import { randomUUID } from 'node:crypto';
import type { Queue } from 'bullmq';
import type { Logger } from 'pino';
import { packDecisionRecord, type DecisionRecord, type DecisionSink, type DecisionsJob } from './decisions.js';
import { INGEST_JOB_OPTIONS } from '../platform/queues.js';
import { isRedisUnavailable } from '../platform/redis/redis-health.js';

type QueuedDecisions = { name: string; data: DecisionsJob; opts: typeof INGEST_JOB_OPTIONS & { jobId: string } };

/** What `record` did with a response's decisions, for /metrics. */
export type DecisionLogMetric = 'decisionsQueued' | 'decisionsDropped';

export interface DecisionLogOptions {
  /** Records (responses) per job at most: a full batch is sent at once. @defaultValue 500 */
  maxRecordsPerJob?: number;
  /** How long a record waits for its batch to fill before the batch is sent anyway (ms). @defaultValue 100 */
  lingerMs?: number;
  /**
   * Records held in memory at most while Redis does not accept them (outage); beyond it new
   * records are dropped and counted. Bounds the process's memory. @defaultValue 100000
   */
  maxPending?: number;
  /**
   * Records waiting in the decisions queue (jobs not yet stored in ClickHouse, e.g. while it is
   * down) beyond which new records are dropped and counted: bounds Redis, which must keep room
   * for management and ingestion. @defaultValue 1000000
   */
  maxBacklog?: number;
  /** How often the queue's backlog is read (ms). @defaultValue 1000 */
  backlogPollMs?: number;
  /** Wait before re-sending a batch Redis refused. @defaultValue 1000 */
  retryDelayMs?: number;
  /** A send that has not finished after this long is treated as failed and re-sent. @defaultValue 5000 */
  timeoutMs?: number;
  /** Counts records queued and dropped (for /metrics). */
  onMetric?: (name: DecisionLogMetric, n: number) => void;
}

/**
 * The decision log's producer: `record` puts the decisions of a response into memory and
 * returns at once (never throws, never awaited by the response). Records are sent as BullMQ jobs
 * of up to `maxRecordsPerJob` responses, when a batch is full or `lingerMs` after its first record,
 * so the queue's cost per response (a job's add, move, completion and removal, in the API
 * process, Redis and the workers) is a few hundredths of a job. A batch Redis refuses is re-sent
 * after a pause with the same job ids, so a short outage loses nothing; beyond `maxPending`
 * records in memory (a long Redis outage) or `maxBacklog` records in the queue (a long
 * ClickHouse outage) new records are dropped and counted instead: a response never waits or
 * fails for its log. A record still in memory when the process is killed is lost (at most
 * `lingerMs` of decisions); a stop sends it first.
 */
export class DecisionLogProducer implements DecisionSink {
  private pending: DecisionRecord[] = [];
  /** Jobs Redis refused, re-sent after `retryDelayMs` with the same ids. */
  private retry: QueuedDecisions[] = [];
  private lingerTimer: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private backlogTimer: NodeJS.Timeout | undefined;
  private sending = 0;
  private closed = false;
  private dropped = 0;
  /** Records in the queue at the last poll, plus those sent since. */
  private backlog = 0;
  /** Records per job this process sent lately (0: none sent yet): the queue counts jobs, the bound is on records. */
  private recordsPerJob = 0;
  private readonly maxRecordsPerJob: number;
  private readonly lingerMs: number;
  private readonly maxPending: number;
  private readonly maxBacklog: number;
  private readonly retryDelayMs: number;
  private readonly timeoutMs: number;

  constructor(
    private readonly queue: Queue,
    private readonly log: Logger,
    private readonly opts: DecisionLogOptions = {},
  ) {
    this.maxRecordsPerJob = opts.maxRecordsPerJob ?? 500;
    this.lingerMs = opts.lingerMs ?? 100;
    this.maxPending = opts.maxPending ?? 100_000;
    this.maxBacklog = opts.maxBacklog ?? 1_000_000;
    this.retryDelayMs = opts.retryDelayMs ?? 1000;
    this.timeoutMs = opts.timeoutMs ?? 5000;
    const poll = opts.backlogPollMs ?? 1000;
    if (poll > 0) {
      this.backlogTimer = setInterval(() => void this.pollBacklog(), poll);
      this.backlogTimer.unref();
    }
  }

  record(rec: DecisionRecord): void {
    try {
      if (rec.decisions.length === 0 || this.closed) return;
      const held = this.pending.length + this.sending + this.retry.length * this.maxRecordsPerJob;
      if (held >= this.maxPending || this.backlog + held >= this.maxBacklog) return this.drop();
      this.pending.push(rec);
      if (this.pending.length >= this.maxRecordsPerJob) {
        // a full batch goes now, but never on the caller's path
        clearTimeout(this.lingerTimer);
        this.lingerTimer = setTimeout(() => this.flush(), 0);
      } else if (this.lingerTimer === undefined && this.retryTimer === undefined) {
        this.lingerTimer = setTimeout(() => this.flush(), this.lingerMs);
      }
    } catch (err) {
      // The sink must never fail a response.
      this.log.error({ err }, 'decision log: could not record a decision');
    }
  }

  private drop(): void {
    if (this.dropped++ % 10_000 === 0) {
      const why =
        this.backlog >= this.maxBacklog
          ? 'the decisions queue holds its limit (are the workers or ClickHouse down?)'
          : 'Redis does not accept decisions and the buffer is full';
      this.log.error({ dropped: this.dropped, backlog: this.backlog }, `decision log: ${why}; dropping new decisions`);
    }
    this.opts.onMetric?.('decisionsDropped', 1);
  }

  private flush(): void {
    this.lingerTimer = undefined;
    if (this.pending.length === 0) return;
    const jobs = this.jobsOf(this.pending);
    this.pending = [];
    void this.send(jobs);
  }

  private jobsOf(batch: DecisionRecord[]): QueuedDecisions[] {
    const jobs: QueuedDecisions[] = [];
    for (let i = 0; i < batch.length; i += this.maxRecordsPerJob) {
      const packed = batch.slice(i, i + this.maxRecordsPerJob).map(packDecisionRecord);
      jobs.push({ name: 'decisions', data: { kind: 'decisions', packed }, opts: { ...INGEST_JOB_OPTIONS, jobId: randomUUID() } });
    }
    return jobs;
  }

  private async send(jobs: QueuedDecisions[]): Promise<void> {
    const records = jobs.reduce((n, j) => n + (j.data.packed?.length ?? 0), 0);
    this.sending += records;
    let timer: NodeJS.Timeout | undefined;
    try {
      const timeout = new Promise<never>((_r, reject) => {
        timer = setTimeout(() => reject(new Error('the decisions queue did not answer in time')), this.timeoutMs);
      });
      // Job ids are fixed when the jobs are built: a re-send after a timeout whose add had in
      // fact succeeded is a no-op in BullMQ (and the rows would collapse in ClickHouse anyway).
      await Promise.race([this.queue.addBulk(jobs), timeout]);
      this.backlog += records;
      const perJob = records / jobs.length;
      this.recordsPerJob = this.recordsPerJob === 0 ? perJob : 0.8 * this.recordsPerJob + 0.2 * perJob;
      this.opts.onMetric?.('decisionsQueued', records);
    } catch (err) {
      if (this.closed) {
        this.log.warn({ err, records }, 'decision log: decisions not queued at shutdown');
        return;
      }
      // an outage is logged once by the process's Redis health; its refusals are not news
      this.log[isRedisUnavailable(err) ? 'debug' : 'warn']({ err, records }, 'decision log: Redis refused decisions; retrying');
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

  /** Records waiting in the queue (an estimate): its unfinished jobs times the records of a recent job. */
  private async pollBacklog(): Promise<void> {
    try {
      const counts = await this.queue.getJobCounts('wait', 'prioritized', 'delayed', 'active');
      const jobs = Object.values(counts).reduce((a, b) => a + b, 0);
      this.backlog = Math.round(jobs * (this.recordsPerJob || 1));
    } catch {
      // Redis is down: the sends fail and are held in memory, bounded by maxPending
    }
  }

  /** Sends what is pending (one last attempt), stops accepting records and closes the queue. */
  async close(): Promise<void> {
    clearTimeout(this.lingerTimer);
    clearTimeout(this.retryTimer);
    clearInterval(this.backlogTimer);
    this.lingerTimer = this.retryTimer = this.backlogTimer = undefined;
    const jobs = [...this.retry, ...this.jobsOf(this.pending)];
    this.retry = [];
    this.pending = [];
    this.closed = true;
    if (jobs.length > 0) await this.send(jobs);
    await this.queue.close();
  }
}
