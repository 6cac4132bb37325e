import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { bullPrefix, QUEUE } from './queues.js';
import { queueConnection } from './redis/redis.js';

/** Job states reported per queue; `waiting` is the backlog that matters for alerting. */
export const QUEUE_STATES = ['waiting', 'active', 'delayed', 'prioritized', 'failed', 'completed'] as const;

export interface QueueStats {
  name: string;
  counts: Record<string, number>;
  oldestWaitingTs?: number;
}

/** The oldest waiting job: `getWaiting` lists ascending (oldest first), so index 0 is the oldest. */
export async function readQueue(q: Queue): Promise<QueueStats> {
  const [counts, oldest] = await Promise.all([q.getJobCounts(...QUEUE_STATES), q.getWaiting(0, 0)]);
  return { name: q.name, counts, oldestWaitingTs: oldest[0]?.timestamp };
}

/**
 * Read-and-retry handles on every queue for the dashboard and the gauges, on a shared connection.
 * `skipVersionCheck`: BullMQ's start-up INFO would otherwise run under the fail-fast connection's
 * command timeout, and one timed-out INFO (Redis down, or the event loop busy at boot) leaves a
 * Queue object broken for the life of the process. The producers and workers check the version.
 * `skipMetasUpdate`: observers leave the queue's metadata to the producers.
 */
export function openQueueHandles(connection: Redis, redisPrefix: string): Queue[] {
  return Object.values(QUEUE).map((name) => openQueueHandle(connection, redisPrefix, name));
}

/** One observer handle (see `openQueueHandles`); it opens no connection of its own. */
export function openQueueHandle(connection: Redis, redisPrefix: string, name: string): Queue {
  const q = new Queue(name, {
    connection: queueConnection(connection),
    prefix: bullPrefix(redisPrefix, connection),
    skipVersionCheck: true,
    skipMetasUpdate: true,
  });
  // Errors surface on the awaited calls; the listener keeps an outage from crashing the process.
  q.on('error', () => undefined);
  return q;
}
