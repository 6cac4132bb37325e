import { UnrecoverableError, Worker, type Job } from 'bullmq';
import type { ClickHouseClient } from '@clickhouse/client';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { classifyClickhouseError } from '../../shared/clients/clickhouse.js';
import { bullPrefix, cappedExponentialBackoff, QUEUE, type DecisionsJob, type EventsJob, type EventsQueueJob, type InteractionJob } from '../../shared/queues/queues.js';
import { processDecisionsJob } from './decisions.processor.js';
import type { ProfileStore } from '../../shared/stores/profile.store.js';
import { insertRows, toDeadLetterRow, type DeadLetterSource } from '../../shared/stores/event-row.js';
import { ClickhouseBatchWriter } from './clickhouse-batch-writer.js';
import { processEventsJob, type EventOpsProvider } from './events.processor.js';
import { asPermanent } from './permanent-errors.js';
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

  const storeDeadLetter = async (input: { projectId: string; messageId: string; source: DeadLetterSource; reason: string; payload: unknown }) => {
    const row = toDeadLetterRow({ ...input, reason: input.reason.slice(0, 4000), receiveMs: o.now(), dataType: input.source === 'log_events' ? 'EventData' : input.source === 'decision_log' ? 'Decisions' : 'Interaction', payload: Buffer.from(JSON.stringify(input.payload)) });
    await insertRows(o.clickhouse, 'dead_letters', [row]);
  };
  const eventDeps = {
    ...deps,
    opsFor: o.eventOps,
    // applied = events new to this user; the rest were duplicates by insertId
    onApplied: (applied: number, total: number) => {
      o.onMetric?.('eventsWritten', applied);
      o.onMetric?.('duplicatesDropped', total - applied);
    },
    deadLetter: async (request: EventsJob, id: string, err: Error) => {
      o.log.error({ jobId: id, queue: 'log_events', errMessage: err.message }, 'a request of a merged job can never be stored; stored as a dead letter');
      await storeDeadLetter({ projectId: request.projectId, messageId: id, source: 'log_events', reason: err.message, payload: request });
      o.onMetric?.('deadLetters', 1);
    },
  };
  const events = new Worker<EventsQueueJob, number>(QUEUE.events, (job) => asPermanent(() => processEventsJob(job, eventDeps)), common);
  const interactions = new Worker<InteractionJob, number>(QUEUE.interactions, (job) => asPermanent(() => processInteractionJob(job, { ...deps, opsFor: o.interactionOps })), common);

  const decisions = new Worker<DecisionsJob, number>(QUEUE.decisions, (job) => asPermanent(() => processDecisionsJob(job, deps)), common);

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
      await storeDeadLetter({ projectId: String(job.data?.projectId ?? job.data?.requests?.[0]?.projectId ?? job.data?.records?.[0]?.projectId ?? ''), messageId: String(job.id), source, reason: err.message, payload: job.data });
    } catch (e) {
      o.log.error({ err: e, jobId: job.id }, 'could not store the dead letter; the failed job stays in its queue');
    }
  };
  events.on('failed', onFailed('log_events'));
  interactions.on('failed', onFailed('log_treatment_interaction'));
  decisions.on('failed', onFailed('decision_log'));
  for (const w of [events, interactions, decisions]) w.on('error', (err) => o.log.warn({ err }, 'worker error'));

  let closing: Promise<void> | undefined;
  return {
    writer,
    workers: [events, interactions, decisions],
    close: () => {
      // Workers finish their active jobs (which await their inserts) before close resolves.
      closing ??= Promise.all([events.close(), interactions.close(), decisions.close()]).then(() => writer.drain());
      return closing;
    },
  };
}
