import { Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { bullPrefix, cappedExponentialBackoff, QUEUE } from '../../shared/platform/queues.js';
import type { UserDeletionJob } from '../../shared/profiles/index.js';

/** How long a deletion waits for the user's jobs in flight at its time (a dead worker's job is retried later and then dropped). */
const IN_FLIGHT_WAIT_MS = 120_000;
import type { UserDeletionQueue, UserDeletionStore } from '../../shared/profiles/index.js';
import { UserDataWarehouse } from '../../shared/profiles/user-data.warehouse.js';
import { instrumentWorker, type JobMetrics } from '../job-metrics.js';
import { queueErrorLogger } from '../../shared/platform/redis/redis-health.js';
import type { Warehouse } from '../../shared/platform/warehouse/warehouse.js';

export interface UserDeletionWorkerOptions {
  connection: Redis;
  redisPrefix: string;
  warehouse: Pick<Warehouse, 'query' | 'command'>;
  store: UserDeletionStore;
  /** Jobs in flight at a deletion, and the ingestion jobs kept for retries: profiles' factory. */
  queues: Pick<UserDeletionQueue, 'waitUntilInactive' | 'eraseQueuedJobs'>;
  log: Logger;
  metrics?: JobMetrics;
}

/** Runs the queued deletions (retried with capped backoff until ClickHouse has carried them out). */
export function startUserDeletionWorker(o: UserDeletionWorkerOptions): Worker<UserDeletionJob> {
  const userData = new UserDataWarehouse(o.warehouse);
  const worker = new Worker<UserDeletionJob>(
    QUEUE.userDeletions,
    async (job: Job<UserDeletionJob>) => {
      const { projectId, userId, inFlight } = job.data;
      let { deletedAtMs, mergedIds = [] } = job.data;
      const started = performance.now();
      if (inFlight && inFlight.length > 0) {
        // Jobs of the user (or of its merged ids) that were being processed at the deletion may
        // have changed profiles, merged one more pre-login id and written rows after it: once
        // they are done, erase again (ids merged since included), and delete rows up to now.
        const finished = await o.queues.waitUntilInactive(inFlight, IN_FLIGHT_WAIT_MS);
        deletedAtMs = Date.now();
        mergedIds = (await o.store.erase(projectId, userId, deletedAtMs, mergedIds)).userIds.slice(1);
        await job.updateData({ ...job.data, mergedIds, deletedAtMs, inFlight: [] });
        o.log.info({ jobId: job.id, projectId, inFlight: inFlight.length, finished }, 'user erased again after the jobs in flight at its deletion');
      }
      const userIds = [userId, ...mergedIds];
      await userData.deleteUserRows(projectId, userIds, deletedAtMs);
      // the ingest jobs kept for retries (failed, delayed) hold the user's payloads too
      const jobs = await o.queues.eraseQueuedJobs({ projectId, userIds: new Set(userIds), deletedAtMs });
      await o.store.finished(projectId, userIds, deletedAtMs);
      // no user id in logs: the job id names the deletion
      o.log.info(
        { jobId: job.id, projectId, mergedIds: mergedIds.length, queuedJobs: jobs, ms: Math.round(performance.now() - started) },
        'user data deleted from clickhouse and the queues',
      );
    },
    {
      connection: o.connection,
      prefix: bullPrefix(o.redisPrefix, o.connection),
      concurrency: 2,
      settings: { backoffStrategy: (attemptsMade: number) => cappedExponentialBackoff(attemptsMade) },
    },
  );
  worker.on('failed', (job, err) =>
    o.log.warn({ jobId: job?.id, attemptsMade: job?.attemptsMade, errMessage: err.message }, 'user deletion failed; will retry'),
  );
  worker.on('error', queueErrorLogger(o.log, 'user deletion worker error'));
  if (o.metrics) instrumentWorker(worker, o.metrics);
  return worker;
}
