import { RawPool } from './raw-http.js';
import { percentile } from './scenario.js';

export interface RetryingLoadOptions {
  /** e.g. http://127.0.0.1:8080 */
  baseUrl: string;
  path: string;
  connections: number;
  /** Requests to have accepted (each i in 0 … requests − 1 once). */
  requests: number;
  headers?: Record<string, string>;
  /** The body of request i (built once; a retry sends the same body). */
  body: (i: number) => string;
  /** Hard bound on the run. */
  maxSec: number;
  /** Every accepted request, as it is accepted. */
  onAccepted?: (accepted: number) => void;
  /** Connection errors a request may have before it counts as failed. @defaultValue 3 */
  maxErrors?: number;
}

export interface RetryingLoadResult {
  /** Requests answered 200. */
  accepted: number;
  /** Answers 503 or 429 (the service refusing overload or a backlog), each retried after its Retry-After. */
  refused: number;
  /** Requests given up: another status, or too many connection errors. */
  failed: number;
  statusCodes: Record<string, number>;
  seconds: number;
  /** Latency percentiles of the accepted attempts (ms). */
  p50: number;
  p99: number;
  /** The first few failures, for the error message. */
  failures: string[];
}

/**
 * A closed loop that gets every request accepted, as a client that must not lose events would:
 * `connections` requests in flight, each answered 503 or 429 sent again after its Retry-After
 * (a refusal is the service's defence, and the events must still arrive), any other status a
 * failure. Unlike autocannon, which counts a refused request as done, so its events would be
 * missing from what the ingest scenario verifies.
 */
export async function runRetryingLoad(o: RetryingLoadOptions): Promise<RetryingLoadResult> {
  // The open loop's client (one request at a time on each keep-alive connection): node:http's
  // client cost the load generator about 100 µs of CPU a request, on the cores the service uses
  const pool = new RawPool(new URL(o.path, o.baseUrl), o.connections, o.headers ?? {}, 30_000);
  const latencies: number[] = [];
  const statusCodes: Record<string, number> = {};
  const failures: string[] = [];
  const r = { accepted: 0, refused: 0, failed: 0 };
  const started = performance.now();
  const deadline = started + o.maxSec * 1000;
  let next = 0;

  const attempt = (body: string): Promise<{ status: number; retryAfterMs: number; error?: string }> =>
    new Promise((resolve) => {
      pool.submit({
        body,
        onDone: (outcome) =>
          resolve(
            'failure' in outcome
              ? { status: 0, retryAfterMs: 100, error: outcome.message }
              : { status: outcome.status, retryAfterMs: 1000 * Math.min(10, outcome.retryAfterSec || 1) },
          ),
      });
    });

  const worker = async () => {
    while (next < o.requests && performance.now() < deadline) {
      const i = next++;
      const body = o.body(i);
      for (let errors = 0; performance.now() < deadline;) {
        const t0 = performance.now();
        const a = await attempt(body);
        statusCodes[a.status] = (statusCodes[a.status] ?? 0) + 1;
        if (a.status === 200) {
          latencies.push(performance.now() - t0);
          // not inside the optional call: without onAccepted its argument is never evaluated
          r.accepted++;
          o.onAccepted?.(r.accepted);
          break;
        }
        if (a.status === 503 || a.status === 429) r.refused++;
        else if (a.status !== 0 || ++errors >= (o.maxErrors ?? 3)) {
          r.failed++;
          if (failures.length < 5) failures.push(`request ${i}: ${a.status === 0 ? a.error : `status ${a.status}`}`);
          break;
        }
        await new Promise((done) => setTimeout(done, a.retryAfterMs));
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: o.connections }, worker));
  } finally {
    pool.destroy();
  }
  latencies.sort((a, b) => a - b);
  return { ...r, statusCodes, seconds: (performance.now() - started) / 1000, p50: percentile(latencies, 50), p99: percentile(latencies, 99), failures };
}
