import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { registerRequestMetrics, REQUEST_DURATION_BUCKETS } from '../../shared/platform/request-metrics.js';
import { mergeSnapshots } from '../../shared/platform/metrics.js';

/** The exposition's sample lines, sorted: the same figures whatever order the label sets were first seen in. */
const samples = (text: string) =>
  text
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('#'))
    .sort();

// Requests tallied as plain numbers must expose exactly what prom-client's own Counter and
// Histogram expose for the same requests.
describe('request metrics from plain numbers', () => {
  const requests: [string, number, number][] = [
    ['/v1/GetTreatments', 200, 0.0004],
    ['/healthz', 200, 0.001],
    ['/v1/GetTreatments', 200, 0.0031],
    ['/v1/GetTreatments', 401, 7.5],
    ['/v1/LogEvents', 503, 0.0025],
    ['/v1/GetTreatments', 200, 5],
    ['unmatched', 404, 0.00001],
    ['/healthz', 200, 0.2],
  ];

  function reference(): Registry {
    const reg = new Registry();
    const counter = new Counter({
      name: 'tds_http_requests_total',
      help: 'HTTP requests by operation (route) and status code',
      labelNames: ['operation', 'status'],
      registers: [reg],
    });
    const histogram = new Histogram({
      name: 'tds_http_request_duration_seconds',
      help: 'HTTP request latency by operation (route)',
      labelNames: ['operation'],
      buckets: [...REQUEST_DURATION_BUCKETS],
      registers: [reg],
    });
    for (const [operation, status, seconds] of requests) {
      counter.inc({ operation, status: String(status) });
      histogram.observe({ operation }, seconds);
    }
    return reg;
  }

  it("exposes what prom-client's Counter and Histogram expose, bucket by bucket, +Inf, sum and count", async () => {
    const reg = new Registry();
    const observe = registerRequestMetrics([reg]);
    for (const r of requests) observe(...r);
    const text = await reg.metrics();
    expect(samples(text)).toEqual(samples(await reference().metrics()));
    expect(text).toContain('# TYPE tds_http_request_duration_seconds histogram');
    expect(text).toMatch(/^tds_http_request_duration_seconds_bucket\{le="\+Inf",operation="\/v1\/GetTreatments"\} 4$/m);
    expect(text).toMatch(/^tds_http_requests_total\{operation="\/v1\/GetTreatments",status="200"\} 3$/m);
  });

  it('counts again from the start after a reset, and a snapshot merged from two threads adds up', async () => {
    const a = new Registry();
    const b = new Registry();
    const observeA = registerRequestMetrics([a]);
    const observeB = registerRequestMetrics([b]);
    observeA('/v1/GetTreatments', 200, 0.002);
    a.resetMetrics();
    for (const r of requests.slice(0, 4)) observeA(...r);
    for (const r of requests.slice(4)) observeB(...r);
    const merged = mergeSnapshots([await a.getMetricsAsJSON(), await b.getMetricsAsJSON()] as Parameters<typeof mergeSnapshots>[0]);
    expect(samples(await merged.metrics())).toEqual(samples(await reference().metrics()));
  });
});
