import { Worker, type Job, type WorkerOptions } from 'bullmq';
import { QUEUE } from '../../shared/platform/queues.js';
import type { DecisionsJob } from '../../shared/impact/index.js';
import { asPermanent } from '../ingestion/permanent-errors.js';
import { processDecisionsJob, type DecisionsProcessorDeps } from './decisions.processor.js';
import type { TableInserts } from '../warehouse/clickhouse-batch-writer.js';

/**
 * How decisions gather for one insert: at most one insert per 500 ms (100 ms after decisions that
 * find the table quiet), at most 30,000 rows in one. With the producer's 100 ms and the insert
 * itself, still readable within a second. Every insert costs the
 * embedded engine a part (files written, later merged) whatever its size: its threads spent 19-26
 * ms of CPU on an insert of 500 decision rows, 50-52 on one of 5,000 and 126 on one of 20,000 on a
 * slow guest (`bench/engine-insert-cost.ts decisions 40 500`, `40 5000`, `10 20000`, two runs each):
 * about 20 ms an insert plus 5 µs a row. 500 ms and 30,000 rows instead of 300 and 10,000 make
 * 40-70 % fewer inserts under GetTreatments load: the engine's threads took 0.067-0.081 µs per µs
 * of the API's CPU against 0.090-0.107 (`bench/request-cost.ts`, five alternating pairs).
 */
export const DECISIONS_INSERTS: TableInserts = { delayMs: 500, maxRows: 30_000, quietDelayMs: 100 };

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
