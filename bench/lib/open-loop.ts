import { Agent, request } from 'node:http';
import type { LoadResult } from './load-runner.js';
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
}

/**
 * An open-loop load: request i is due at start + i / rate, and its latency is measured from that
 * moment to the end of its response, so a slow answer delays no later arrival and a queue in
 * front of the server counts (no coordinated omission). autocannon's `overallRate` is not used
 * for this: it sends each second's quota as fast as it can at the start of the second.
 */
export function runOpenLoop(o: OpenLoopOptions): Promise<LoadResult> {
  const url = new URL(o.path, o.baseUrl);
  const agent = new Agent({ keepAlive: true, maxSockets: o.connections });
  const headers = { 'content-type': 'application/json', ...o.headers };
  const total = Math.max(1, Math.round(o.rate * o.durationSec));
  const latencies: number[] = [];
  const statusCodes: Record<string, number> = {};
  let ok = 0;
  let non2xx = 0;
  let errors = 0;
  let timeouts = 0;
  let sent = 0;
  let done = 0;
  const started = performance.now();
  let lastAt = started;
  return new Promise<LoadResult>((resolve) => {
    const finish = () => {
      clearInterval(timer);
      clearTimeout(bound);
      agent.destroy();
      latencies.sort((a, b) => a - b);
      const seconds = (lastAt - started) / 1000;
      resolve({ ok, non2xx, errors, timeouts, statusCodes, seconds, rps: ok / seconds, p50: percentile(latencies, 50), p90: percentile(latencies, 90), p99: percentile(latencies, 99), max: latencies[latencies.length - 1] ?? NaN });
    };
    const settle = () => {
      done++;
      lastAt = performance.now();
      if (done === total) finish();
    };
    const send = (i: number, due: number) => {
      const body = o.body(i);
      const req = request(url, { method: 'POST', agent, headers: { ...headers, 'content-length': Buffer.byteLength(body) }, timeout: 10_000 }, (res) => {
        res.resume();
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          statusCodes[status] = (statusCodes[status] ?? 0) + 1;
          if (status >= 200 && status < 300) {
            ok++;
            latencies.push(performance.now() - due);
          } else non2xx++;
          settle();
        });
      });
      req.on('timeout', () => {
        timeouts++;
        req.destroy(new Error('timeout'));
      });
      req.on('error', () => {
        errors++;
        settle();
      });
      req.end(body);
    };
    // every millisecond, every arrival that is due (timers are late under load: the due time, not
    // the send time, is where a latency starts)
    const timer = setInterval(() => {
      const now = performance.now();
      while (sent < total && started + (sent * 1000) / o.rate <= now) {
        send(sent, started + (sent * 1000) / o.rate);
        sent++;
      }
    }, 1);
    const bound = setTimeout(() => {
      errors += total - done;
      finish();
    }, (o.maxSec ?? o.durationSec + 30) * 1000);
  });
}
