import { UnrecoverableError, type Job } from 'bullmq';
import type { InteractionJob } from '../../shared/queues/queues.js';
import type { ProfileEvent, ProfileStore } from '../../shared/stores/profile.store.js';
import { rowLine, toInteractionRow } from '../../shared/stores/event-row.js';
import type { ClickhouseBatchWriter } from './clickhouse-batch-writer.js';

export type InteractionOpsProvider = (job: InteractionJob) => Promise<ProfileEvent['ops']>;

export interface InteractionsProcessorDeps {
  writer: ClickhouseBatchWriter;
  profiles: ProfileStore;
  now: () => number;
  opsFor?: InteractionOpsProvider;
}

/** Same ordering as events: rows, then the marker-guarded profile script, then completion. */
export async function processInteractionJob(job: Job<InteractionJob>, deps: InteractionsProcessorDeps): Promise<number> {
  const d = job.data;
  if (!d || typeof d.projectId !== 'string' || typeof d.interactionTimeMicros !== 'string') throw new UnrecoverableError('malformed interaction job payload');
  const jobId = job.id!;
  await deps.writer.write('interactions', [rowLine('interactions', toInteractionRow(d, `j:${jobId}`, deps.now()))]);
  const ops = deps.opsFor ? await deps.opsFor(d) : undefined;
  return deps.profiles.applyEvents(d.projectId, d.userId, jobId, [{ ts: Number(BigInt(d.interactionTimeMicros) / 1000n), ops }]);
}
