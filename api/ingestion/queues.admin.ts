import { Type } from 'typebox';
import { openQueueHandles, readQueue } from '../../shared/platform/metrics.js';
import { Strict } from '../../shared/platform/http/common.schemas.js';
import { adminOperationsUsing } from '../http/admin-operation.js';
import type { ApiServices } from '../compose-api.js';

/** What GetQueueStats uses: the queues in Redis and the ingestion backlog. */
export type QueuesAdminDeps = Pick<ApiServices, 'redis' | 'config' | 'now' | 'ingestion'>;
const defineAdminOperation = adminOperationsUsing<QueuesAdminDeps>();

const Count = Type.Integer({ minimum: 0 });

const QueueOut = Type.Object({
  queue: Type.String(),
  waiting: Count,
  active: Count,
  delayed: Count,
  prioritized: Count,
  failed: Count,
  completed: Count,
  /** 0 when nothing waits */
  oldestWaitingSeconds: Type.Number({ minimum: 0 }),
});

/**
 * The deployment's queues as the `/metrics` gauges report them (jobs per state, age of the oldest
 * waiting job) and the ingestion backlog in events against INGEST_MAX_BACKLOG, beyond which
 * LogEvents answers 429: the figures of the queue dashboard an operator checks first.
 */
export const getQueueStats = defineAdminOperation({
  operation: 'GetQueueStats',
  command: 'get-queue-stats',
  summary: 'Jobs per state of every queue, and the ingestion backlog in events against its limit',
  body: Strict({}),
  response: Type.Object({
    queues: Type.Array(QueueOut),
    ingestBacklog: Type.Object({ events: Count, limit: Count }),
  }),
  handler: async (_body, ctx) => {
    const queues = openQueueHandles(ctx.redis, ctx.config.redisPrefix);
    try {
      const [stats, events] = await Promise.all([Promise.all(queues.map(readQueue)), ctx.ingestion.ingestBacklog.current()]);
      const now = ctx.now();
      return {
        queues: stats.map((s) => ({
          queue: s.name,
          waiting: s.counts.waiting ?? 0,
          active: s.counts.active ?? 0,
          delayed: s.counts.delayed ?? 0,
          prioritized: s.counts.prioritized ?? 0,
          failed: s.counts.failed ?? 0,
          completed: s.counts.completed ?? 0,
          oldestWaitingSeconds: s.oldestWaitingTs === undefined ? 0 : Math.max(0, (now - s.oldestWaitingTs) / 1000),
        })),
        ingestBacklog: { events: Math.round(events), limit: ctx.config.ingestMaxBacklog },
      };
    } finally {
      await Promise.all(queues.map((q) => q.close()));
    }
  },
});

export const queueAdminOperations = [getQueueStats] as const;
