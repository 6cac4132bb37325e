import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { bullPrefix, QUEUE } from '../platform/queues.js';
import { DecisionLogProducer } from './decision-log.queue.js';

export interface ImpactDeps {
  /** The request-path connection: a Redis outage never holds a response. */
  redis: Redis;
  redisPrefix: string;
  log: Logger;
}

export interface Impact {
  /** The decision log: GetTreatments hands it every response's decisions, off the request path. */
  decisionLog: DecisionLogProducer;
}

export function createImpact(deps: ImpactDeps): Impact {
  const { redis, redisPrefix, log } = deps;
  const queue = new Queue(QUEUE.decisions, { connection: redis, prefix: bullPrefix(redisPrefix, redis), skipVersionCheck: true, skipMetasUpdate: true });
  queue.on('error', () => undefined);
  return { decisionLog: new DecisionLogProducer(queue, log.child({ component: 'decision-log' })) };
}

export async function closeImpact(impact: Impact): Promise<void> {
  await impact.decisionLog.close();
}
