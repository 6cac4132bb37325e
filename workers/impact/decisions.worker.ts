import { Worker, type Job, type WorkerOptions } from 'bullmq';
import { QUEUE } from '../../shared/platform/queues.js';
import type { DecisionsJob } from '../../shared/impact/index.js';
import { asPermanent } from '../ingestion/permanent-errors.js';
import { processDecisionsJob, type DecisionsProcessorDeps } from './decisions.processor.js';

/** How long decisions gather for one insert: with the producer's 100 ms, still readable within a second. */
export const DECISIONS_INSERT_DELAY_MS = 300;

export interface DecisionsWorker {
  worker: Worker<DecisionsJob, number>;
  /** One job's processing, for the isolation queue that retries suspects alone. */
  run(job: Job<DecisionsJob>): Promise<number>;
}

/**
 * The decision log's consumer: decisions jobs into ClickHouse and the RETURNED counters of capped
 * treatments. It runs beside the ingestion workers with their options (connection, concurrency,
 * stalled-job limits), shares their batch writer, and its failed jobs go to their dead-letter path.
 */
export function startDecisionsWorker(options: WorkerOptions, deps: DecisionsProcessorDeps): DecisionsWorker {
  const run = (job: Job<DecisionsJob>) => asPermanent(() => processDecisionsJob(job, deps));
  return { worker: new Worker<DecisionsJob, number>(QUEUE.decisions, run, options), run };
}

/** The project a dead decisions job is filed under: its first record's. */
export function decisionsProject(data: DecisionsJob | undefined): string {
  const first: unknown = data?.packed?.[0]?.[0] ?? data?.records?.[0]?.projectId;
  return typeof first === 'string' ? first : '';
}
