import { UnrecoverableError, type Job } from 'bullmq';
import type { InteractionJob } from '../../shared/queues/queues.js';
import type { AppliedUnit, ProfileEvent, ProfileStore } from '../../shared/stores/profile.store.js';
import type { RankingCounterStore, RankingDelta } from '../../shared/stores/ranking-stats.store.js';
import { rowLine, toInteractionRow } from '../../shared/stores/event-row.js';
import type { ClickhouseBatchWriter } from './clickhouse-batch-writer.js';
import { acceptedBeforeDeletion, type ErasedUsers } from './events.processor.js';

export type InteractionOpsProvider = (job: InteractionJob) => Promise<ProfileEvent['ops']>;

export interface InteractionsProcessorDeps {
  writer: ClickhouseBatchWriter;
  profiles: ProfileStore;
  now: () => number;
  opsFor?: InteractionOpsProvider;
  /** The project-wide ranking counters and what an interaction adds to them. */
  ranking?: { store: RankingCounterStore; deltasFor: (job: InteractionJob) => RankingDelta[] };
  /** Deleted users (D44): an interaction accepted before its user's deletion is dropped. */
  erased?: ErasedUsers;
}

/** The identity of an interaction job's profile marker. */
export function interactionUnit(d: InteractionJob | undefined, jobId: string): AppliedUnit | undefined {
  if (!d || typeof d.projectId !== 'string' || typeof d.userId !== 'string') return undefined;
  return { projectId: d.projectId, userId: d.userId, id: jobId };
}

/**
 * Same ordering as events: rows, then the marker-guarded profile script, then the ranking script
 * (its own marker, in the project's slot), then completion. A retry whose profile marker is there
 * skips the rows and the profile script (both done) and only re-runs the ranking script, which
 * its marker makes a no-op if it had run too.
 */
export async function processInteractionJob(job: Job<InteractionJob>, deps: InteractionsProcessorDeps): Promise<number> {
  const d = job.data;
  if (!d || typeof d.projectId !== 'string' || typeof d.userId !== 'string' || typeof d.interactionTimeMicros !== 'string') throw new UnrecoverableError('malformed interaction job payload');
  const jobId = job.id!;
  const receivedAt = typeof d.receivedAt === 'number' ? d.receivedAt : (job.timestamp ?? 0);
  const [[dropped], [done]] = await Promise.all([
    acceptedBeforeDeletion(deps.erased, [{ projectId: d.projectId, userId: d.userId, receivedAt }]),
    deps.profiles.applied([{ projectId: d.projectId, userId: d.userId, id: jobId }]),
  ]);
  if (dropped) return 0;
  let applied = -1;
  if (!done) {
    await deps.writer.write('interactions', [rowLine('interactions', toInteractionRow(d, `j:${jobId}`, deps.now()))]);
    const ops = deps.opsFor ? await deps.opsFor(d) : undefined;
    applied = await deps.profiles.applyEvents(d.projectId, d.userId, jobId, [{ ts: Number(BigInt(d.interactionTimeMicros) / 1000n), ops }]);
  }
  if (deps.ranking) await deps.ranking.store.apply(d.projectId, jobId, deps.ranking.deltasFor(d));
  return applied;
}
