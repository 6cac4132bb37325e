import { UnrecoverableError, type Job } from 'bullmq';
import type { InteractionJob } from '../../shared/queues/queues.js';
import type { ProfileEvent, ProfileStore } from '../../shared/stores/profile.store.js';
import { toClickhouseDateTime64 } from '../../shared/stores/event-row.js';
import type { ClickhouseBatchWriter } from './clickhouse-batch-writer.js';

export type InteractionOpsProvider = (job: InteractionJob) => Promise<ProfileEvent['ops']>;

export interface InteractionsProcessorDeps {
  writer: ClickhouseBatchWriter;
  profiles: ProfileStore;
  now: () => number;
  opsFor?: InteractionOpsProvider;
}

/** DateTime64(6) text from int64 microseconds, without losing the microseconds to a double. */
export function microsToDateTime64(micros: string): string {
  const us = BigInt(micros);
  const ms = Number(us / 1000n);
  const rest = (us % 1000n).toString().padStart(3, '0');
  return `${toClickhouseDateTime64(ms)}${rest}`;
}

/** Same ordering as events: rows, then the marker-guarded profile script, then completion. */
export async function processInteractionJob(job: Job<InteractionJob>, deps: InteractionsProcessorDeps): Promise<number> {
  const d = job.data;
  if (!d || typeof d.projectId !== 'string' || typeof d.interactionTimeMicros !== 'string') throw new UnrecoverableError('malformed interaction job payload');
  const jobId = job.id!;
  await deps.writer.write('interactions', [
    {
      project_id: d.projectId,
      user_id: d.userId,
      treatment_id: d.treatmentId,
      treatment_tracking_id: d.treatmentTrackingId,
      surface: d.surface,
      interaction_type: d.interactionType,
      interaction_time: microsToDateTime64(d.interactionTimeMicros),
      action_name: d.actionName ?? '',
      dedup_key: `j:${jobId}`,
      ingest_ts: toClickhouseDateTime64(deps.now()),
    },
  ]);
  const ops = deps.opsFor ? await deps.opsFor(d) : undefined;
  return deps.profiles.applyEvents(d.projectId, d.userId, jobId, [{ ts: Number(BigInt(d.interactionTimeMicros) / 1000n), ops }]);
}
