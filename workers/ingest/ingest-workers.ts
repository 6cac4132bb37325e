import { UnrecoverableError, Worker, type Job } from 'bullmq';
import type { ClickHouseClient } from '@clickhouse/client';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { classifyClickhouseError } from '../../shared/clients/clickhouse.js';
import { bullPrefix, cappedExponentialBackoff, QUEUE, type EventsQueueJob, type InteractionJob } from '../../shared/queues/queues.js';
import type { ProfileStore } from '../../shared/stores/profile.store.js';
import { insertRows, toDeadLetterRow, type DeadLetterSource } from '../../shared/stores/event-row.js';
import { ClickhouseBatchWriter } from './clickhouse-batch-writer.js';
import { processEventsJob, type EventOpsProvider } from './events.processor.js';
import { processInteractionJob, type InteractionOpsProvider } from './interactions.processor.js';

export interface IngestWorkersOptions {
  connection: Redis;
  redisPrefix: string;
  clickhouse: ClickHouseClient;
  profiles: ProfileStore;
  log: Logger;
  now: () => number;
  /** Jobs processed at once per queue; their rows share ClickHouse inserts. @defaultValue 64 */
  concurrency?: number;
  /** Lock of an active job; a dead worker's jobs are retried after about this long. @defaultValue 30000 */
  lockMs?: number;
  eventOps?: EventOpsProvider;
  interactionOps?: InteractionOpsProvider;
  /** Counters for /metrics. */
  onMetric?: (name: 'eventsWritten' | 'duplicatesDropped' | 'deadLetters', n: number) => void;
}

export interface IngestWorkers {
  writer: ClickhouseBatchWriter;
  workers: Worker[];
  close(): Promise<void>;
}

/** ClickHouse rejected the rows for good (bad data): the job is poison, not retried. */
async function classified<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    // A RangeError is input the row mapping can never store (the API rejects it; this guards old jobs).
    if (err instanceof RangeError) throw new UnrecoverableError(`unstorable input: ${err.message}`);
    if (!(err instanceof UnrecoverableError) && classifyClickhouseError(err) === 'permanent') {
      throw new UnrecoverableError(`rejected by ClickHouse: ${(err as Error).message}`);
    }
    throw err;
  }
}

export function startIngestWorkers(o: IngestWorkersOptions): IngestWorkers {
  const writer = new ClickhouseBatchWriter(o.clickhouse, o.log, { isPermanent: (e) => classifyClickhouseError(e) === 'permanent' });
  const common = {
    connection: o.connection,
    prefix: bullPrefix(o.redisPrefix),
    concurrency: o.concurrency ?? 64,
    lockDuration: o.lockMs ?? 30_000,
    stalledInterval: o.lockMs ?? 30_000,
    // A job held by a worker that died is put back, however often that happens: never lost.
    maxStalledCount: 1_000_000,
    settings: { backoffStrategy: (attemptsMade: number) => cappedExponentialBackoff(attemptsMade) },
  };
  const deps = { writer, profiles: o.profiles, now: o.now };

  const events = new Worker<EventsQueueJob, number>(
    QUEUE.events,
    (job) => classified(async () => {
      const applied = await processEventsJob(job, { ...deps, opsFor: o.eventOps });
      // applied = events new to this user (-1: the job ran before and this is a retry).
      if (job.data.kind === 'events' && applied >= 0) {
        o.onMetric?.('eventsWritten', applied);
        o.onMetric?.('duplicatesDropped', job.data.events.length - applied);
      }
      return applied;
    }),
    common,
  );
  const interactions = new Worker<InteractionJob, number>(QUEUE.interactions, (job) => classified(() => processInteractionJob(job, { ...deps, opsFor: o.interactionOps })), common);

  const onFailed = (source: DeadLetterSource) => async (job: Job | undefined, err: Error) => {
    if (!job) return;
    const final = err instanceof UnrecoverableError || err.name === 'UnrecoverableError' || job.attemptsMade >= (job.opts.attempts ?? 1);
    if (!final) {
      o.log.warn({ jobId: job.id, queue: source, attemptsMade: job.attemptsMade, errMessage: err.message }, 'job failed; will retry with backoff');
      return;
    }
    o.log.error({ jobId: job.id, queue: source, errMessage: err.message }, 'job failed permanently; stored as a dead letter');
    o.onMetric?.('deadLetters', 1);
    try {
      const row = toDeadLetterRow({ projectId: String(job.data?.projectId ?? ''), messageId: String(job.id), source, reason: err.message.slice(0, 4000), receiveMs: o.now(), dataType: source === 'log_events' ? 'EventData' : 'Interaction', payload: Buffer.from(JSON.stringify(job.data)) });
      await insertRows(o.clickhouse, 'dead_letters', [row]);
    } catch (e) {
      o.log.error({ err: e, jobId: job.id }, 'could not store the dead letter; the failed job stays in its queue');
    }
  };
  events.on('failed', onFailed('log_events'));
  interactions.on('failed', onFailed('log_treatment_interaction'));
  for (const w of [events, interactions]) w.on('error', (err) => o.log.warn({ err }, 'worker error'));

  let closing: Promise<void> | undefined;
  return {
    writer,
    workers: [events, interactions],
    close: () => {
      // Workers finish their active jobs (which await their inserts) before close resolves.
      closing ??= Promise.all([events.close(), interactions.close()]).then(() => writer.drain());
      return closing;
    },
  };
}
