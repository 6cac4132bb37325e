import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { bullPrefix, QUEUE } from '../platform/queues.js';
import { queueConnection } from '../platform/redis/redis.js';
import type { DecisionLogStats } from '../platform/metrics.js';
import { DecisionLogProducer } from './decision-log.queue.js';
import { NO_DECISION_LOG, type DecisionSink } from './decisions.js';

export interface ImpactDeps {
  /** The request-path connection: a Redis outage never holds a response. */
  redis: Redis;
  redisPrefix: string;
  log: Logger;
  /** `DECISION_LOG`: false, nothing is recorded. */
  enabled: boolean;
  /** Decisions waiting in the queue beyond which new ones are dropped (DECISION_LOG_MAX_BACKLOG). */
  maxBacklog: number;
  /** How long decisions are gathered into one job (DECISION_LOG_FLUSH_MS). */
  flushMs: number;
  /** Counted for /metrics. */
  stats: DecisionLogStats;
}

export interface Impact {
  /** The decision log: GetTreatments hands it every response's decisions, off the request path. */
  decisionLog: DecisionSink;
  /** False when the deployment runs without a decision log (`DECISION_LOG=off`). */
  decisionLogEnabled: boolean;
}

export function createImpact(deps: ImpactDeps): Impact & { close(): Promise<void> } {
  const { redis, redisPrefix, log, stats } = deps;
  if (!deps.enabled) return { decisionLog: NO_DECISION_LOG, decisionLogEnabled: false, close: async () => undefined };
  const queue = new Queue(QUEUE.decisions, {
    connection: queueConnection(redis),
    prefix: bullPrefix(redisPrefix, redis),
    skipVersionCheck: true,
    skipMetasUpdate: true,
  });
  queue.on('error', () => undefined);
  const producer = new DecisionLogProducer(queue, log.child({ component: 'decision-log' }), {
    maxBacklog: deps.maxBacklog,
    lingerMs: deps.flushMs,
    onMetric: (name, n) => {
      if (name === 'decisionsQueued') stats.queued += n;
      else stats.dropped += n;
    },
  });
  return { decisionLog: producer, decisionLogEnabled: true, close: () => producer.close() };
}

export async function closeImpact(impact: { close(): Promise<void> }): Promise<void> {
  await impact.close();
}

// The decision log's warehouse rows and reads, for the workers that write and answer them.
export * from './decisions.warehouse.js';
