import { createRequire } from 'node:module';
import { percentile } from './scenario.js';

/** The part of autocannon's API used here (the package ships no types). */
interface AutocannonRequest {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string;
  setupRequest?: (req: AutocannonRequest, context: Record<string, unknown>) => AutocannonRequest;
}
interface AutocannonOptions {
  url: string;
  connections: number;
  duration?: number;
  amount?: number;
  overallRate?: number;
  timeout?: number;
  requests: AutocannonRequest[];
}
interface AutocannonResult {
  '2xx': number;
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodeStats: Record<string, { count: number }>;
}
interface AutocannonInstance {
  on(event: 'response', fn: (client: unknown, statusCode: number, resBytes: number, responseTime: number) => void): void;
  on(event: 'tick', fn: (counter: { counter: number }) => void): void;
  stop(): void;
}
type Autocannon = (opts: AutocannonOptions, cb: (err: Error | null, result: AutocannonResult) => void) => AutocannonInstance;

const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

export interface LoadOptions {
  /** e.g. http://127.0.0.1:8080 */
  baseUrl: string;
  path: string;
  connections: number;
  /** Time-bounded run. */
  durationSec?: number;
  /** Count-bounded run (still stopped after `maxSec`). */
  amount?: number;
  /** Hard bound on the run, whatever else is set. @defaultValue durationSec + 30 */
  maxSec?: number;
  /** Requests per second over all connections; unset: as fast as the server answers. */
  overallRate?: number;
  headers?: Record<string, string>;
  /** The body of the i-th request (called just before it is sent). */
  body: (i: number) => string;
  /** Stops the run early (the result covers the time until then). */
  signal?: AbortSignal;
  /** Every response, as it arrives. */
  onResponse?: (status: number) => void;
  /** Once per second with the responses so far. */
  onTick?: (elapsedSec: number, responses: number) => void;
}

export interface LoadResult {
  /** Responses with a 2xx status. */
  ok: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodes: Record<string, number>;
  seconds: number;
  /** 2xx responses per second of the run. */
  rps: number;
  /** Latencies of 2xx responses in ms, at sub-millisecond resolution (autocannon's own histogram rounds to 1 ms). */
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

/**
 * The CPU a measured load cost, in cores (CPU seconds per second of the run): the service's
 * processes together (all their threads), its API processes alone (NaN when not read), this
 * process (the load generator) and Redis.
 */
export interface LoadCpu {
  serviceCores: number;
  apiCores: number;
  loadGeneratorCores: number;
  redisCores: number;
}

/** Runs autocannon on loopback, in this process, bounded in time. */
export function runLoad(o: LoadOptions): Promise<LoadResult> {
  const latencies: number[] = [];
  let i = 0;
  const started = performance.now();
  const maxSec = o.maxSec ?? (o.durationSec ?? 0) + 30;
  return new Promise<LoadResult>((resolve, reject) => {
    const headers = { 'content-type': 'application/json', ...o.headers };
    let responses = 0;
    let lastResponseAt = started;
    let bound: NodeJS.Timeout | undefined;
    let tick: NodeJS.Timeout | undefined;
    // autocannon calls back synchronously when it rejects its options
    const instance = autocannon(
      {
        url: `${o.baseUrl}${o.path}`,
        connections: o.connections,
        // autocannon validates present keys: an undefined one is an error, not a default
        ...(o.amount ? { amount: o.amount } : { duration: o.durationSec ?? 10 }),
        ...(o.overallRate ? { overallRate: o.overallRate } : {}),
        timeout: 10,
        requests: [{ method: 'POST', path: o.path, headers, setupRequest: (req) => ({ ...req, body: o.body(i++) }) }],
      },
      (err, result) => {
        clearTimeout(bound);
        clearInterval(tick);
        if (err) return reject(err);
        // up to the last response: autocannon notices the end of a run only at its next 1 s sample
        const seconds = ((responses > 0 ? lastResponseAt : performance.now()) - started) / 1000;
        latencies.sort((a, b) => a - b);
        const statusCodes: Record<string, number> = {};
        for (const [code, s] of Object.entries(result.statusCodeStats ?? {})) statusCodes[code] = s.count;
        resolve({
          ok: result['2xx'],
          non2xx: result.non2xx,
          errors: result.errors,
          timeouts: result.timeouts,
          statusCodes,
          seconds,
          rps: result['2xx'] / seconds,
          p50: percentile(latencies, 50),
          p90: percentile(latencies, 90),
          p99: percentile(latencies, 99),
          max: latencies[latencies.length - 1] ?? NaN,
        });
      },
    );
    instance.on('response', (_client, status, _bytes, responseTime) => {
      responses++;
      lastResponseAt = performance.now();
      o.onResponse?.(status);
      if (status >= 200 && status < 300) latencies.push(responseTime);
    });
    tick = setInterval(() => o.onTick?.((performance.now() - started) / 1000, responses), 1000);
    bound = setTimeout(() => instance.stop(), maxSec * 1000);
    if (o.signal?.aborted) instance.stop();
    o.signal?.addEventListener('abort', () => instance.stop(), { once: true });
  });
}

/** 503 answers of a run: the service refusing overload (load shedding). */
export function refusals(r: LoadResult): number {
  return r.statusCodes['503'] ?? 0;
}

/**
 * Throws when a run had errors on more than `maxShare` of its requests (its figures would mean
 * nothing). `refusalsAllowed`: 503s are the service's defence against overload, not errors (the
 * run's requests/s counts only 2xx answers, and the notes say how many were refused).
 */
export function checkLoad(label: string, r: LoadResult, maxShare = 0.01, o: { refusalsAllowed?: boolean } = {}): void {
  const bad = r.non2xx + r.errors - (o.refusalsAllowed ? refusals(r) : 0);
  if (r.ok === 0 || bad > maxShare * (r.ok + r.non2xx + r.errors)) {
    throw new Error(`${label}: ${r.ok} ok, ${r.non2xx} non-2xx (${JSON.stringify(r.statusCodes)}), ${r.errors} errors (${r.timeouts} timeouts)`);
  }
}
