import { UnrecoverableError, type Job, type Worker } from 'bullmq';
import type { Metrics } from '../shared/platform/metrics.js';

export type JobMetrics = Pick<Metrics, 'observeJob' | 'countRetry' | 'countJobFailed'>;

/** A failure that ends the job: poison input, or no attempt left. */
export function isFinalFailure(job: Job, err: Error): boolean {
  return err instanceof UnrecoverableError || err.name === 'UnrecoverableError' || job.attemptsMade >= (job.opts.attempts ?? 1);
}

/**
 * Job durations (from being picked up to finishing the attempt), retries and final failures of
 * one worker's queue, from the worker's own events: the processors are not touched.
 */
export function instrumentWorker(worker: Worker, metrics: JobMetrics): void {
  const queue = worker.name;
  const seconds = (job: Job) => (job.processedOn ? Math.max(0, Date.now() - job.processedOn) / 1000 : 0);
  worker.on('completed', (job) => metrics.observeJob(queue, 'completed', seconds(job)));
  worker.on('failed', (job, err) => {
    if (!job) return;
    metrics.observeJob(queue, 'failed', seconds(job));
    if (isFinalFailure(job, err)) metrics.countJobFailed(queue);
    else metrics.countRetry(queue);
  });
}
