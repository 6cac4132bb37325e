import { UnrecoverableError, type Job } from 'bullmq';
import type { EventsJob, EventsQueueJob, UserAttributesJob } from '../../shared/queues/queues.js';
import type { ProfileEvent, ProfileStore } from '../../shared/stores/profile.store.js';
import { eventDedupKey, toClickhouseDateTime64, toEventRow, toUserAttributeUpdateRow, type EventRow } from '../../shared/stores/event-row.js';
import type { ClickhouseBatchWriter } from './clickhouse-batch-writer.js';

/** Contributes aggregate updates for an event (the incremental data-field path plugs in here). */
export type EventOpsProvider = (projectId: string, userId: string, events: EventsJob['events']) => Promise<ProfileEvent['ops'][]>;

export interface EventsProcessorDeps {
  writer: ClickhouseBatchWriter;
  profiles: ProfileStore;
  now: () => number;
  opsFor?: EventOpsProvider;
}

/** Rows of an events job; events without insertId are keyed by their job or message (D31, D33). */
export function eventRows(job: EventsJob, jobId: string, ingestMs: number): EventRow[] {
  const carrier = job.origin.source === 'pubsub' ? { messageId: job.origin.messageId } : { jobId };
  const ingest = toClickhouseDateTime64(ingestMs);
  return job.events.map((e, i) => toEventRow(job, e, e.clientEventTs, e.serverReceivedTs, eventDedupKey(e.insertId, carrier, i), ingest, job.origin.source));
}

function checkShape(data: EventsQueueJob): void {
  if (!data || typeof data !== 'object' || typeof data.projectId !== 'string' || typeof data.userId !== 'string') {
    throw new UnrecoverableError('malformed job payload: projectId and userId are required');
  }
  if (data.kind === 'events' && !Array.isArray(data.events)) throw new UnrecoverableError('malformed job payload: events must be a list');
}

/**
 * Order matters for exactly-once: rows first (ClickHouse collapses repeats on the de-duplication
 * key), then the profile script (guarded by the job marker), then the job completes. A crash
 * between any two steps makes BullMQ retry the job, and every step is a no-op the second time.
 */
export async function processEventsJob(job: Job<EventsQueueJob>, deps: EventsProcessorDeps): Promise<number> {
  checkShape(job.data);
  const jobId = job.id!;
  if (job.data.kind === 'userAttributes') return processUserAttributes(job.data, jobId, deps);
  const data = job.data;
  await deps.writer.write('events', eventRows(data, jobId, deps.now()));
  const ops = deps.opsFor ? await deps.opsFor(data.projectId, data.userId, data.events) : [];
  const profileEvents: ProfileEvent[] = data.events.map((e, i) => ({ dedupId: e.insertId, ts: e.clientEventTs, userProperties: e.userProperties, ops: ops[i] }));
  return deps.profiles.applyEvents(data.projectId, data.userId, jobId, profileEvents);
}

async function processUserAttributes(data: UserAttributesJob, jobId: string, deps: EventsProcessorDeps): Promise<number> {
  const row = toUserAttributeUpdateRow({ projectId: data.projectId, userId: data.userId, userProperties: data.userProperties, updateTimestamp: new Date(data.updateTs).toISOString() }, `m:${data.messageId}`, { source: 'pubsub', ingestMs: deps.now() });
  await deps.writer.write('user_attribute_updates', [row]);
  return deps.profiles.applyEvents(data.projectId, data.userId, jobId, [{ ts: data.updateTs, userProperties: data.userProperties }]);
}
