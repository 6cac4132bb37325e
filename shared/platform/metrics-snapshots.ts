import { Registry, type MetricObjectWithValues, type MetricValue } from 'prom-client';

/** One registry's figures in prom-client's JSON form: what a thread hands to its host for one scrape. */
export type MetricsSnapshot = MetricObjectWithValues<MetricValue<string>>[];

/**
 * One exposition from the registries of several threads of a process. A metric only one thread
 * has is kept as is; one several have is summed per label set (counters of the same name add up;
 * per-thread figures carry a distinct `thread` label, so they stay apart).
 */
export function mergeSnapshots(snapshots: MetricsSnapshot[]): Registry {
  const merged = new Registry();
  const byName = new Map<string, MetricsSnapshot>();
  for (const snap of snapshots) {
    for (const m of snap) {
      const group = byName.get(m.name);
      if (group) group.push(m);
      else byName.set(m.name, [m]);
    }
  }
  for (const group of byName.values()) {
    const metric = group.length === 1 ? group[0] : sumValues(group);
    merged.registerMetric({ ...metric, get: () => metric } as unknown as Parameters<Registry['registerMetric']>[0]);
  }
  return merged;
}

function sumValues(group: MetricsSnapshot): MetricObjectWithValues<MetricValue<string>> {
  const values = new Map<string, MetricValue<string> & { metricName?: string }>();
  for (const m of group) {
    for (const v of m.values as (MetricValue<string> & { metricName?: string })[]) {
      const key = `${v.metricName ?? ''}|${JSON.stringify(Object.entries(v.labels).sort())}`;
      const seen = values.get(key);
      if (seen) seen.value += v.value;
      else values.set(key, { ...v, labels: { ...v.labels } });
    }
  }
  return { ...group[0], values: [...values.values()] };
}
