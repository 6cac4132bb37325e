import { UnrecoverableError, Worker, type Job } from 'bullmq';
import type { ClickHouseClient } from '@clickhouse/client';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { classifyClickhouseError } from '../../shared/clients/clickhouse.js';
import { bullPrefix, cappedExponentialBackoff, QUEUE, type EventsJob, type EventsQueueJob, type InteractionJob } from '../../shared/queues/queues.js';
import type { AppliedUnit, ProfileStore } from '../../shared/stores/profile.store.js';
import { insertRows, toDeadLetterRow, type DeadLetterSource } from '../../shared/stores/event-row.js';
import { ClickhouseBatchWriter } from './clickhouse-batch-writer.js';
import { eventsJobUnits, processEventsJob, type EventOpsProvider } from './events.processor.js';
import { asPermanent } from './permanent-errors.js';
import { interactionUnit, processInteractionJob, type InteractionOpsProvider } from './interactions.processor.js';
import type { RankingCounterStore, RankingDelta } from '../../shared/stores/ranking-stats.store.js';

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
  /** Ranking counters of interactions, applied by their own marker-guarded script. */
  ranking?: { store: RankingCounterStore; deltasFor: (job: InteractionJob) => RankingDelta[] };
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
    const row = toDeadLetterRow({ ...input, reason: input.reason.slice(0, 4000), receiveMs: o.now(), dataType: input.source === 'log_events' ? 'EventData' : 'Interaction', payload: Buffer.from(JSON.stringify(input.payload)) });
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
  const interactions = new Worker<InteractionJob, number>(QUEUE.interactions, (job) => asPermanent(() => processInteractionJob(job, { ...deps, opsFor: o.interactionOps, ranking: o.ranking })), common);

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
      await storeDeadLetter({ projectId: String(job.data?.projectId ?? job.data?.requests?.[0]?.projectId ?? ''), messageId: String(job.id), source, reason: err.message, payload: job.data });
    } catch (e) {
      o.log.error({ err: e, jobId: job.id }, 'could not store the dead letter; the failed job stays in its queue');
    }
  };
  events.on('failed', onFailed('log_events'));
  interactions.on('failed', onFailed('log_treatment_interaction'));
  // A completed job is never retried: its markers only have to outlive a duplicate execution
  // still running on a worker that lost the job's lock, so they are cut to a grace of 10 locks
  // (at least a minute). Redis then holds the markers of jobs in flight or just completed; a lost
  // cut expires with JOB_MARKER_TTL_SECONDS.
  const markerGraceSeconds = Math.max(60, Math.ceil((10 * (o.lockMs ?? 30_000)) / 1000));
  const dropMarkers = (job: Job, units: AppliedUnit[], extra: string[] = []) => {
    o.profiles.expireJobMarkers(units, extra, markerGraceSeconds).catch((err: unknown) => o.log.warn({ err, jobId: job.id }, 'job markers not shortened; they expire on their own'));
  };
  events.on('completed', (job) => dropMarkers(job, eventsJobUnits(job.data, job.id!)));
  interactions.on('completed', (job) => {
    const unit = interactionUnit(job.data, job.id!);
    if (unit) dropMarkers(job, [unit], o.ranking ? [o.ranking.store.markerKey(unit.projectId, unit.id)] : []);
  });
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
