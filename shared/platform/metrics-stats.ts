import { Counter, Gauge, type Registry } from 'prom-client';

/** The one prefix of every metric this service exports (process defaults included). */
export const METRIC_PREFIX = 'tds_';
const P = METRIC_PREFIX;

/**
 * Hit and miss tallies of an in-memory cache. Plain numbers the owner increments on its hot
 * path (no label lookup, no allocation); they are read only when Prometheus scrapes.
 */
export interface CacheStats {
  hits: number;
  misses: number;
}

/** GetTreatments outcomes, incremented per response (plain numbers, read at scrape time). */
export interface DeliveryStats {
  /** responses with at least one treatment */
  withTreatments: number;
  /** responses without any (no treatment qualified) */
  empty: number;
  /** treatments returned, summed over responses */
  treatmentsReturned: number;
}

/** The decision log's producer in this process: records (responses) queued, and dropped at its bounds. */
export interface DecisionLogStats {
  queued: number;
  dropped: number;
}

/** Requests refused at once with 503 because the process was overloaded (event-loop lag or requests in flight), and the in-flight limit in force. */
export interface OverloadStats {
  shed: number;
  /** The in-flight limit in force (OVERLOAD_MAX_IN_FLIGHT, lowered while overload is refused); 0 where no client request is taken. */
  inFlightLimit: number;
}

/** The plain numbers the hot paths increment, turned into counters at scrape time. */
export interface StatsSources {
  caches: ReadonlyMap<string, CacheStats>;
  delivery: DeliveryStats;
  decisionLog: DecisionLogStats;
  overload: OverloadStats;
}

/** Counters (and the in-flight limit's gauge) read from plain numbers on each scrape: the hot paths pay an increment, no label lookup. */
export function registerStatsCounters(registers: Registry[], sources: StatsSources): void {
  const { caches, delivery, decisionLog, overload } = sources;
  new Counter({
    name: `${P}cache_requests_total`,
    help: 'Lookups of the in-memory caches (catalog: compiled catalogue plans; api_key: verified API keys), by result',
    labelNames: ['cache', 'result'],
    registers,
    collect() {
      this.reset();
      for (const [cache, s] of caches) {
        this.inc({ cache, result: 'hit' }, s.hits);
        this.inc({ cache, result: 'miss' }, s.misses);
      }
    },
  });
  new Counter({
    name: `${P}delivery_responses_total`,
    help: 'GetTreatments responses, by outcome (treatments: at least one returned; empty: none qualified)',
    labelNames: ['outcome'],
    registers,
    collect() {
      this.reset();
      this.inc({ outcome: 'treatments' }, delivery.withTreatments);
      this.inc({ outcome: 'empty' }, delivery.empty);
    },
  });
  new Counter({
    name: `${P}delivery_treatments_returned_total`,
    help: 'Treatments returned by GetTreatments, summed over responses',
    registers,
    collect() {
      this.reset();
      this.inc(delivery.treatmentsReturned);
    },
  });
  new Counter({
    name: `${P}decision_log_records_total`,
    help: 'GetTreatments responses handed to the decision log, by result (queued; dropped: Redis refused them past the memory bound, or the decisions queue held its limit)',
    labelNames: ['result'],
    registers,
    collect() {
      this.reset();
      this.inc({ result: 'queued' }, decisionLog.queued);
      this.inc({ result: 'dropped' }, decisionLog.dropped);
    },
  });
  new Counter({
    name: `${P}http_requests_shed_total`,
    help: 'Public requests answered 503 at once because the process was overloaded (event-loop lag or too many requests in flight)',
    registers,
    collect() {
      this.reset();
      this.inc(overload.shed);
    },
  });
  new Gauge({
    name: `${P}http_in_flight_limit`,
    help: 'Client requests an API process admits at once now: OVERLOAD_MAX_IN_FLIGHT, halved while it refuses overload with its event loop lagging beyond OVERLOAD_TARGET_LAG_MS (0: not an API process, or no limit)',
    registers,
    collect() {
      this.set(overload.inFlightLimit);
    },
  });
}
