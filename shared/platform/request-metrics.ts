import { Counter, type MetricValue, type Registry } from 'prom-client';
import { METRIC_PREFIX } from './metrics-stats.js';

/** The latency buckets of `tds_http_request_duration_seconds` (seconds). */
export const REQUEST_DURATION_BUCKETS: readonly number[] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/** One operation's requests: counts by status, and its latencies' bucket counts (not cumulative), sum and count. */
interface OperationTally {
  byStatus: Map<number, number>;
  buckets: number[];
  sum: number;
  count: number;
}

/** A histogram's value in prom-client's JSON form: which series (`_bucket`, `_sum`, `_count`) it is in. */
type SeriesValue = MetricValue<string> & { metricName: string };

/**
 * `tds_http_requests_total{operation,status}` and `tds_http_request_duration_seconds{operation}`
 * from plain numbers: a request costs a map lookup and a few additions, and the figures are made
 * when Prometheus scrapes. prom-client's own children validate and hash their label set and
 * allocate on every observation, even pre-bound (about 0.5 µs a request). The exposition is
 * prom-client's: the counter is a prom-client `Counter` filled on each scrape, the histogram a
 * metric of prom-client's JSON form with the values its `Histogram` would give. Operations are
 * route patterns (bounded), statuses a few dozen codes. Returns the function to call per request.
 */
export function registerRequestMetrics(registers: Registry[]): (operation: string, status: number, seconds: number) => void {
  const tallies = new Map<string, OperationTally>();
  const P = METRIC_PREFIX;
  new Counter({
    name: `${P}http_requests_total`,
    help: 'HTTP requests by operation (route) and status code',
    labelNames: ['operation', 'status'],
    registers,
    collect() {
      this.reset();
      for (const [operation, t] of tallies) for (const [status, n] of t.byStatus) this.inc({ operation, status: String(status) }, n);
    },
  });
  const name = `${P}http_request_duration_seconds`;
  const histogram = {
    name,
    help: 'HTTP request latency by operation (route)',
    type: 'histogram',
    aggregator: 'sum',
    get: () => ({ name, help: histogram.help, type: 'histogram', aggregator: 'sum', values: histogramValues(name, tallies) }),
    reset: () => tallies.clear(),
  };
  for (const r of registers) r.registerMetric(histogram as unknown as Parameters<Registry['registerMetric']>[0]);
  return (operation, status, seconds) => {
    let t = tallies.get(operation);
    if (t === undefined) tallies.set(operation, (t = { byStatus: new Map(), buckets: REQUEST_DURATION_BUCKETS.map(() => 0), sum: 0, count: 0 }));
    t.byStatus.set(status, (t.byStatus.get(status) ?? 0) + 1);
    for (let i = 0; i < REQUEST_DURATION_BUCKETS.length; i++) {
      if (seconds <= REQUEST_DURATION_BUCKETS[i]) {
        t.buckets[i]++;
        break;
      }
    }
    t.sum += seconds;
    t.count++;
  };
}

/** The values prom-client's `Histogram` reports: cumulative buckets, `+Inf`, sum and count per operation. */
function histogramValues(name: string, tallies: ReadonlyMap<string, OperationTally>): SeriesValue[] {
  const values: SeriesValue[] = [];
  for (const [operation, t] of tallies) {
    let cumulative = 0;
    REQUEST_DURATION_BUCKETS.forEach((le, i) => {
      cumulative += t.buckets[i];
      values.push({ labels: { le, operation }, value: cumulative, metricName: `${name}_bucket` });
    });
    values.push({ labels: { le: '+Inf', operation }, value: t.count, metricName: `${name}_bucket` });
    values.push({ labels: { operation }, value: t.sum, metricName: `${name}_sum` });
    values.push({ labels: { operation }, value: t.count, metricName: `${name}_count` });
  }
  return values;
}
