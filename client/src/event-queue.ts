import { backoffMs, type BackoffOptions } from './backoff.js';
import { mergeBySeq, refusedEventIndexes, takeBatches, utf8Bytes, type Batch, type QueuedItem } from './batches.js';
import { TdsError } from './errors.js';

/** The client's counters of what it queued and what became of it. */
export interface QueueStats {
  /** Waiting to be sent (or for a retry). */
  queued: number;
  /** Being sent now. */
  inFlight: number;
  /** Accepted by the service. */
  sent: number;
  /** Pushed out, oldest first, because the queue was full (the service was unreachable for long), or left when `close()` gave up. */
  dropped: number;
  /** Refused by the service (a 400, a wrong key) or given up after repeated server errors. */
  failed: number;
  /** Sends retried after a 429, a 5xx, a timeout or no answer. */
  retries: number;
}

export interface QueueOptions {
  projectId: string;
  flushAt: number;
  flushIntervalMs: number;
  maxQueueSize: number;
  maxBatchEvents: number;
  maxBatchBytes: number;
  maxConcurrentRequests: number;
  /** Attempts of a send that keeps failing with a server error other than 503 (a bug, not an outage). */
  maxAttempts: number;
  backoff: Required<BackoffOptions>;
  /** Sends one request; resolves once the service accepted it (200), else throws its TdsError. */
  send(batch: Batch, keepalive: boolean): Promise<void>;
  /** Told of every loss: what was refused or dropped, and how many events or interactions. */
  onError(error: Error, lost: number): void;
}

/** The browser's keepalive budget: the bodies of all keepalive requests in flight, at most 64 KiB. */
const KEEPALIVE_BYTES = 65_536 - 1_024;

type Timer = ReturnType<typeof setTimeout>;

function unref(t: Timer): Timer {
  (t as { unref?: () => void }).unref?.();
  return t;
}

/**
 * Events and interactions waiting to be sent: sent in batches once `flushAt` are queued or
 * `flushIntervalMs` after the first, retried with backoff (honouring `Retry-After`) with the same
 * bytes, so the same insertIds, bounded to `maxQueueSize` items (the oldest are dropped first).
 */
export class EventQueue {
  private queue: QueuedItem[] = [];
  private readonly inFlight = new Set<QueuedItem>();
  private readonly stats = { sent: 0, dropped: 0, failed: 0, retries: 0 };
  private running: Promise<void> | undefined;
  private again = false;
  private timer: Timer | undefined;
  private timerAt = Infinity;
  private blockedUntil = 0;
  private failures = 0;
  private maxBatchBytes: number;
  private droppedUnreported = 0;
  private closed = false;
  private seq = 0;

  constructor(private readonly o: QueueOptions) {
    this.maxBatchBytes = o.maxBatchBytes;
  }

  get counters(): QueueStats {
    return { queued: this.queue.length, inFlight: this.inFlight.size, ...this.stats };
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Queues an event of `userId` (its JSON, insertId included) or an interaction's request body. */
  push(kind: QueuedItem['kind'], userId: string, json: string): void {
    if (this.closed) throw new TypeError('the client is closed: create a new one to send more');
    this.queue.push({ kind, userId, json, bytes: utf8Bytes(json), seq: this.seq++, attempts: 0, done: false });
    this.bound();
    if (this.queue.length >= this.o.flushAt) this.schedule(0);
    else this.schedule(this.o.flushIntervalMs);
  }

  /** Sends what is queued; resolves when the queue is empty or waits for a retry's backoff. */
  flush(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = this.drain().finally(() => {
      this.running = undefined;
      if (this.again) {
        this.again = false;
        if (this.queue.length > 0) this.schedule(0);
      }
    });
    return this.running;
  }

  /**
   * Sends what is queued and in flight with `fetch` keepalive, within the browser's 64 KiB
   * budget, as a page goes away (`pagehide`). Events still in flight are sent again: their
   * insertIds make the second copy a no-op. What does not fit stays queued, for a page that comes back.
   */
  flushForPageExit(): void {
    const candidates = [...[...this.inFlight].filter((i) => i.kind === 'event'), ...this.queue];
    const { batches } = takeBatches(candidates, this.o.projectId, {
      maxEvents: this.o.maxBatchEvents,
      maxBytes: KEEPALIVE_BYTES,
      maxBatches: 64,
      maxTotalBytes: KEEPALIVE_BYTES,
    });
    const sending = new Set(batches.flatMap((b) => b.items));
    this.queue = this.queue.filter((i) => !sending.has(i));
    for (const batch of batches) {
      this.o.send(batch, true).then(
        () => this.accepted(batch.items),
        () => {
          // the page stayed (a hidden tab): these go with the next flush
          if (!this.closed) this.requeue(batch.items.filter((i) => !i.done && !this.inFlight.has(i)));
        },
      );
    }
  }

  /**
   * Sends everything, retrying until `timeoutMs` has passed; what is still unsent then is dropped
   * (and reported). Later pushes throw. Idempotent.
   */
  async close(timeoutMs: number): Promise<QueueStats> {
    if (!this.closed) {
      this.closed = true;
      const end = Date.now() + timeoutMs;
      this.clearTimer();
      this.blockedUntil = 0;
      while ((this.queue.length > 0 || this.running) && Date.now() < end) {
        const wait = Math.min(end, this.blockedUntil) - Date.now();
        if (wait > 0) await sleep(wait);
        if (Date.now() >= end) break;
        await withDeadline(this.flush(), end - Date.now());
      }
      const left = this.queue.length + this.inFlight.size;
      if (left > 0) {
        this.stats.dropped += left;
        this.o.onError(new Error(`close(): ${left} events and interactions not sent within ${timeoutMs} ms (the service did not accept them)`), left);
        this.queue = [];
      }
      this.clearTimer();
    }
    return this.counters;
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0 && Date.now() >= this.blockedUntil) {
      const { batches, rest } = takeBatches(this.queue, this.o.projectId, {
        maxEvents: this.o.maxBatchEvents,
        maxBytes: this.maxBatchBytes,
        maxBatches: this.o.maxConcurrentRequests,
      });
      this.queue = rest;
      if (batches.length === 0) return;
      const outcomes = await Promise.all(batches.map((b) => this.sendBatch(b)));
      const retry = outcomes.filter((o): o is { retryAfterMs: number | undefined } => o !== undefined);
      if (retry.length > 0) {
        this.failures++;
        const after = Math.max(...retry.map((r) => r.retryAfterMs ?? 0));
        const wait = backoffMs(this.failures, this.o.backoff, after > 0 ? after : undefined);
        this.blockedUntil = Date.now() + wait;
        if (!this.closed) this.schedule(wait);
        return;
      }
      this.failures = 0;
    }
  }

  /** Undefined when done with the batch (sent, or refused for good), else the retry it asks for. */
  private async sendBatch(batch: Batch): Promise<{ retryAfterMs: number | undefined } | undefined> {
    for (const i of batch.items) this.inFlight.add(i);
    try {
      await this.o.send(batch, false);
      this.accepted(batch.items);
      return undefined;
    } catch (err) {
      return this.failed(
        batch,
        err instanceof TdsError ? err : new TdsError({ operation: batch.operation, kind: 'network', message: String(err), cause: err }),
      );
    } finally {
      for (const i of batch.items) this.inFlight.delete(i);
    }
  }

  private accepted(items: readonly QueuedItem[]): void {
    for (const i of items) {
      if (i.done) continue;
      i.done = true;
      this.stats.sent++;
    }
  }

  private failed(batch: Batch, err: TdsError): { retryAfterMs: number | undefined } | undefined {
    const items = batch.items.filter((i) => !i.done);
    if (items.length === 0) return undefined;
    if (this.retriable(batch, err, items)) {
      for (const i of items) i.attempts++;
      this.stats.retries++;
      this.requeue(items);
      return { retryAfterMs: err.retryAfterMs };
    }
    if (err.status === 413 && items.length > 1) {
      // smaller requests from now on; nothing is lost
      this.maxBatchBytes = Math.max(1024, Math.floor(this.maxBatchBytes / 2));
      this.requeue(items);
      return undefined;
    }
    const refused = err.status === 400 && batch.operation === 'LogEvents' ? refusedEventIndexes(err.details, items.length) : undefined;
    if (refused && refused.size < items.length) {
      // only the events the 400 names are refused; the others go again at once
      this.requeue(items.filter((_, k) => !refused.has(k)));
      this.lose(err, refused.size);
      return undefined;
    }
    this.lose(err, items.length);
    return undefined;
  }

  /**
   * Events are retried after any failure that says the service is unavailable: their insertIds
   * make a repeat harmless. An interaction has no such id, so it is retried only when the service
   * certainly did not take it (429, 503, no connection), never after a timeout or another 5xx.
   */
  private retriable(batch: Batch, err: TdsError, items: readonly QueuedItem[]): boolean {
    if (!err.unavailable) return false;
    if (batch.operation === 'LogTreatmentInteraction') return err.status === 429 || err.status === 503 || err.kind === 'network';
    if (err.status === 429 || err.status === 503 || err.kind !== 'http') return true;
    return items.every((i) => i.attempts + 1 < this.o.maxAttempts);
  }

  private lose(err: Error, n: number): void {
    this.stats.failed += n;
    this.o.onError(err, n);
  }

  /** Items of a request back in the queue, in their place: older than what was queued meanwhile, so dropped first. */
  private requeue(items: readonly QueuedItem[]): void {
    this.queue = mergeBySeq(this.queue, items);
    this.bound();
  }

  /** The oldest items go first when the queue is over its bound; reported once per turn. */
  private bound(): void {
    const over = this.queue.length - this.o.maxQueueSize;
    if (over <= 0) return;
    this.queue.splice(0, over);
    this.stats.dropped += over;
    if (this.droppedUnreported === 0) {
      queueMicrotask(() => {
        const n = this.droppedUnreported;
        this.droppedUnreported = 0;
        this.o.onError(
          new Error(
            `dropped the ${n} oldest queued events and interactions: the queue is full (maxQueueSize ${this.o.maxQueueSize}) while the service does not accept them`,
          ),
          n,
        );
      });
    }
    this.droppedUnreported += over;
  }

  /** A flush in `ms` (0: at once), unless one is due sooner; none while a retry waits, except a sooner one after it. */
  private schedule(ms: number): void {
    if (this.closed) return;
    const at = Math.max(Date.now() + ms, this.blockedUntil);
    if (this.timer !== undefined && this.timerAt <= at) return;
    this.clearTimer();
    this.timerAt = at;
    this.timer = unref(
      setTimeout(() => {
        this.timer = undefined;
        this.timerAt = Infinity;
        void this.flush();
      }, at - Date.now()),
    );
  }

  private clearTimer(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function withDeadline(p: Promise<void>, ms: number): Promise<void> {
  let timer: Timer | undefined;
  return Promise.race([p, new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, ms))))]).finally(() => clearTimeout(timer));
}
