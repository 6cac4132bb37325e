import type { LoadResult } from './load-runner.js';
import { RawPool, type Outcome } from './raw-http.js';
import { percentile } from './scenario.js';

export interface OpenLoopOptions {
  /** e.g. http://127.0.0.1:8080 */
  baseUrl: string;
  path: string;
  /** Arrivals per second, evenly spaced, whatever the latency (open loop). */
  rate: number;
  durationSec: number;
  /** Keep-alive connections; a request that finds none free waits, and the wait counts. */
  connections: number;
  headers?: Record<string, string>;
  body: (i: number) => string;
  /** Hard bound on the run. @defaultValue durationSec + 30 */
  maxSec?: number;
  /** A request unanswered after this long is abandoned (with its connection) and counted as a timeout. @defaultValue 10000 */
  requestTimeoutMs?: number;
  /** Stops sending (the requests sent are still awaited): the result covers the time until then. */
  signal?: AbortSignal;
  /** Every request once settled, in the order they settle. */
  onAnswer?: (a: OpenLoopAnswer) => void;
  /** About every `tickSec` seconds, for progress lines. */
  onTick?: (elapsedSec: number, sent: number, answered: number) => void;
  /** @defaultValue 5 */
  tickSec?: number;
  /**
   * Opens every connection, and has one request answered on each, before the clock starts, as a
   * load balancer's pool holds them open: otherwise an overload opens hundreds of connections at
   * once and measures the listen backlog and the server's accepting them, not its requests.
   */
  preconnect?: boolean;
  /** When the clock starts (after the preconnection), as `performance.now()`. */
  onStart?: (startedAt: number) => void;
}

export interface OpenLoopAnswer {
  /** The request's number (0, 1, …). */
  i: number;
  /** When it was due, in ms from the start of the run. */
  dueMs: number;
  /** From when it was due to the end of its answer (or its error), ms. */
  waitMs: number;
  /** HTTP status; 0 for a connection error or a timeout. */
  status: number;
}

export interface OpenLoopResult extends LoadResult {
  sent: number;
  /** 503 answers: the service refusing overload, answered like any other response. */
  refused: number;
  /** Latency percentiles of the 503 answers (NaN when there were none). */
  refusedP50: number;
  refusedP99: number;
  /** Requests answered at all (any status). */
  answered: number;
  /** The longest any request waited for its answer, whatever the answer (a timeout or an error waited until then; a request still open at the hard bound, until the bound). */
  maxWaitMs: number;
  /** The latest the generator sent a request after it was due (ms): above a few ms, the generator, not the server, was short of CPU. */
  maxSendLagMs: number;
  /**
   * The latest a request was written to its connection after it was due (ms). Above
   * `maxSendLagMs`, requests waited for a free connection: every connection had a request the
   * server had not answered yet.
   */
  maxWriteLagMs: number;
  /** Requests answered (or given up) more than a second after they were due. */
  overOneSecond: number;
  /**
   * The slowest few: when each was due (s from the start), how long it waited, its status (0: no
   * answer), and how much of the wait came before it was written to a connection.
   */
  slowest: { dueSec: number; waitMs: number; status: number; writeLagMs: number; reopened?: boolean }[];
  /** Requests that had to open their connection again because the server had closed it (an idle keep-alive timeout, say). */
  reconnects: number;
}

/**
 * An open-loop load: request i is due at start + i / rate, and its latency is measured from that
 * moment to the end of its response, so a slow answer delays no later arrival and a queue in
 * front of the server counts (no coordinated omission). autocannon's `overallRate` is not used
 * for this: it sends each second's quota as fast as it can at the start of the second. Requests
 * go over `RawPool`'s keep-alive connections (node:http's client is too costly at these rates).
 *
 * Every status is an answer: a 503 (the service refusing overload, its defence) is counted apart
 * with its own latency, and `maxWaitMs` covers every request, whatever its answer.
 */
/** How many of the slowest requests a run reports. */
const SLOWEST_KEPT = 5;

export async function runOpenLoop(o: OpenLoopOptions): Promise<OpenLoopResult> {
  const pool = new RawPool(new URL(o.path, o.baseUrl), o.connections, o.headers ?? {}, o.requestTimeoutMs ?? 10_000);
  try {
    if (o.preconnect) await pool.preconnect(o.body(0));
  } catch (err) {
    pool.destroy();
    throw err;
  }
  const total = Math.max(1, Math.round(o.rate * o.durationSec));
  const latencies: number[] = [];
  const refusedLatencies: number[] = [];
  const statusCodes: Record<string, number> = {};
  const counts = { ok: 0, non2xx: 0, errors: 0, timeouts: 0 };
  let sent = 0;
  let done = 0;
  let maxWaitMs = 0;
  let maxSendLagMs = 0;
  let maxWriteLagMs = 0;
  let overOneSecond = 0;
  const slowest: OpenLoopResult['slowest'] = [];
  let stopped = false;
  /** Due times of the requests not settled yet. */
  const open = new Map<number, number>();
  const started = performance.now();
  o.onStart?.(started);
  let lastAt = started;
  return new Promise<OpenLoopResult>((resolve) => {
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      clearInterval(timer);
      clearInterval(tick);
      clearTimeout(bound);
      // still open at the bound: they waited at least until now
      const now = performance.now();
      for (const due of open.values()) maxWaitMs = Math.max(maxWaitMs, now - due);
      counts.errors += open.size;
      open.clear();
      pool.destroy();
      latencies.sort((a, b) => a - b);
      refusedLatencies.sort((a, b) => a - b);
      const seconds = (lastAt - started) / 1000;
      resolve({
        ...counts,
        statusCodes,
        seconds,
        rps: counts.ok / seconds,
        p50: percentile(latencies, 50),
        p90: percentile(latencies, 90),
        p99: percentile(latencies, 99),
        max: latencies[latencies.length - 1] ?? NaN,
        sent,
        refused: refusedLatencies.length,
        refusedP50: percentile(refusedLatencies, 50),
        refusedP99: percentile(refusedLatencies, 99),
        answered: counts.ok + counts.non2xx,
        maxWaitMs,
        maxSendLagMs,
        maxWriteLagMs,
        overOneSecond,
        slowest,
        reconnects: pool.reconnects,
      });
    };
    const settle = (i: number, due: number, outcome: Outcome, writtenAt: number, reopened?: boolean) => {
      if (!open.delete(i)) return;
      done++;
      lastAt = performance.now();
      const wait = lastAt - due;
      maxWaitMs = Math.max(maxWaitMs, wait);
      const writeLagMs = Math.max(0, writtenAt - due);
      maxWriteLagMs = Math.max(maxWriteLagMs, writeLagMs);
      const status = outcome.status;
      if (wait > 1000) overOneSecond++;
      if (slowest.length < SLOWEST_KEPT || wait > slowest[slowest.length - 1].waitMs) {
        slowest.push({ dueSec: (due - started) / 1000, waitMs: wait, status, writeLagMs, ...(reopened ? { reopened } : {}) });
        slowest.sort((a, b) => b.waitMs - a.waitMs);
        slowest.length = Math.min(slowest.length, SLOWEST_KEPT);
      }
      if (status === 0) {
        counts.errors++;
        if ('failure' in outcome && outcome.failure === 'timeout') counts.timeouts++;
      } else {
        statusCodes[status] = (statusCodes[status] ?? 0) + 1;
        if (status >= 200 && status < 300) {
          counts.ok++;
          latencies.push(wait);
        } else {
          counts.non2xx++;
          if (status === 503) refusedLatencies.push(wait);
        }
      }
      o.onAnswer?.({ i, dueMs: due - started, waitMs: wait, status });
      if (done === (stopped ? sent : total)) finish();
    };
    const send = (i: number, due: number) => {
      open.set(i, due);
      pool.submit({ body: o.body(i), onDone: (outcome, writtenAt, reopened) => settle(i, due, outcome, writtenAt, reopened) });
    };
    // every millisecond, every arrival that is due (timers are late under load: the due time, not
    // the send time, is where a latency starts)
    const timer = setInterval(() => {
      if (stopped) return;
      const now = performance.now();
      while (sent < total && started + (sent * 1000) / o.rate <= now) {
        const due = started + (sent * 1000) / o.rate;
        maxSendLagMs = Math.max(maxSendLagMs, now - due);
        send(sent, due);
        sent++;
      }
    }, 1);
    const stop = () => {
      stopped = true;
      clearInterval(timer);
      if (done === sent) finish();
    };
    const tick = setInterval(() => o.onTick?.((performance.now() - started) / 1000, sent, done), (o.tickSec ?? 5) * 1000);
    const bound = setTimeout(finish, (o.maxSec ?? o.durationSec + 30) * 1000);
    if (o.signal?.aborted) stop();
    o.signal?.addEventListener('abort', stop, { once: true });
  });
}
