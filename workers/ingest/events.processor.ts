import { UnrecoverableError, type Job } from 'bullmq';
import type { EventsJob, EventsQueueJob, UserAttributesJob } from '../../shared/queues/queues.js';
import type { ProfileEvent, ProfileStore } from '../../shared/stores/profile.store.js';
import { toClickhouseDateTime64 } from '../../shared/stores/event-row.js';
import type { ClickhouseBatchWriter } from './clickhouse-batch-writer.js';

/** Contributes aggregate updates for an event (the incremental data-field path plugs in here). */
export type EventOpsProvider = (projectId: string, userId: string, events: EventsJob['events']) => Promise<ProfileEvent['ops'][]>;

export interface EventsProcessorDeps {
  writer: ClickhouseBatchWriter;
  profiles: ProfileStore;
  now: () => number;
  opsFor?: EventOpsProvider;
}

/** D31/D33: insertId when given; otherwise the position of the event inside its job or message. */
export function eventDedupKey(job: EventsJob, jobId: string, index: number): string {
  const e = job.events[index];
  if (e.insertId !== undefined) return `i:${e.insertId}`;
  return job.origin.source === 'pubsub' ? `m:${job.origin.messageId}:${index}` : `j:${jobId}:${index}`;
}

export function eventRows(job: EventsJob, jobId: string, ingestTs: number): Record<string, unknown>[] {
  return job.events.map((e, i) => ({
    project_id: job.projectId,
    user_id: job.userId,
    event_name: e.eventName,
    dedup_key: eventDedupKey(job, jobId, i),
    insert_id: e.insertId ?? '',
    client_event_ts: toClickhouseDateTime64(e.clientEventTs),
    server_received_ts: e.serverReceivedTs === undefined ? null : toClickhouseDateTime64(e.serverReceivedTs),
    ingest_ts: toClickhouseDateTime64(ingestTs),
    event_properties: JSON.stringify(e.eventProperties ?? {}),
    user_properties: JSON.stringify(e.userProperties ?? {}),
    session_id: e.sessionId ?? '',
    pre_login_temp_user_id: e.preLoginTempUserId ?? '',
    country: e.country ?? '',
    region: e.region ?? '',
    city: e.city ?? '',
    ip_address: e.ipAddress ?? '',
    device_id: e.deviceId ?? '',
    app_version_id: e.appVersionId ?? '',
    source: job.origin.source,
  }));
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
  await deps.writer.write('user_attribute_updates', [
    {
      project_id: data.projectId,
      user_id: data.userId,
      dedup_key: `m:${data.messageId}`,
      update_ts: toClickhouseDateTime64(data.updateTs),
      user_properties: JSON.stringify(data.userProperties),
      source: 'pubsub',
      ingest_ts: toClickhouseDateTime64(deps.now()),
    },
  ]);
  return deps.profiles.applyEvents(data.projectId, data.userId, jobId, [{ ts: data.updateTs, userProperties: data.userProperties }]);
}
