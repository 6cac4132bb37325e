import type { Job } from 'bullmq';
import type { InteractionJob } from '../../shared/ingestion/index.js';
import { toInteractionRow } from '../../shared/ingestion/event-rows.warehouse.js';
import type { AppliedUnit, ProfileEvent, ProfileStore } from '../../shared/profiles/index.js';
import type { RankingCounterStore, RankingDelta } from '../../shared/delivery/index.js';
import { rowLine } from '../../shared/platform/warehouse/tables.js';
import type { ClickhouseBatchWriter } from '../warehouse/clickhouse-batch-writer.js';
import { acceptedBeforeDeletion, type ErasedUsers } from './events.processor.js';
import type { DecisionLookup } from '../../shared/impact/index.js';
import { trackingResponseId } from '../../shared/ingestion/event-input.codec.js';
import { ALREADY_APPLIED, appliedOutcome, deadLetter, drop, settle, type DeadLetter, type JobOutcome } from './job-outcome.js';

export type InteractionOpsProvider = (job: InteractionJob) => Promise<ProfileEvent['ops']>;

export interface InteractionsProcessorDeps {
  writer: ClickhouseBatchWriter;
  profiles: ProfileStore;
  now: () => number;
  opsFor?: InteractionOpsProvider;
  /** The project-wide ranking counters and what an interaction adds to them. */
  ranking?: { store: RankingCounterStore; deltasFor: (job: InteractionJob) => RankingDelta[] };
  /** Deleted users: an interaction accepted before its user's deletion is dropped. */
  erased?: ErasedUsers;
  /** The decision log, for interactions sent without userId or surface. */
  decisions?: DecisionLookup;
  /** How long such an interaction waits for its decision (ms since it was received). @defaultValue 600000 */
  decisionWaitMs?: number;
}

/** Thrown while an interaction's decision is not in the decision log yet: the job is retried with backoff. */
export class DecisionNotYetStored extends Error {
  override name = 'DecisionNotYetStored';
}

/**
 * Fills in the userId and surface of an interaction sent without them, from the decision
 * log by the tracking id's response id. Not found: retried (the decision-log workers may not have
 * stored it yet) until `decisionWaitMs` after the interaction was received, then a dead letter
 * with the reason. A given userId or surface that disagrees with the decision is a dead letter.
 */
export async function resolveInteraction(d: InteractionJob, deps: InteractionsProcessorDeps): Promise<InteractionJob | DeadLetter> {
  if (!deps.decisions) return deadLetter('interaction without userId or surface, and no decision log to resolve them from');
  const responseId = trackingResponseId(d.treatmentTrackingId);
  const found = await deps.decisions(d.projectId, responseId, d.treatmentId);
  if (!found) {
    const waitMs = deps.decisionWaitMs ?? 600_000;
    const waited = deps.now() - (Number.isFinite(d.receivedAt) ? d.receivedAt : 0);
    if (waited >= waitMs) {
      const what = `treatmentTrackingId "${d.treatmentTrackingId}" (treatment "${d.treatmentId}", response "${responseId}")`;
      return deadLetter(`no decision for ${what} in the decision log within ${Math.round(waitMs / 1000)} s: userId and surface cannot be resolved`);
    }
    throw new DecisionNotYetStored(
      `decision of treatmentTrackingId "${d.treatmentTrackingId}" not in the decision log yet; retried until ${Math.round(waitMs / 1000)} s after receipt`,
    );
  }
  // a decision made for a pre-login id merged into the given user agrees with that user
  if (
    typeof d.userId === 'string' &&
    d.userId !== found.userId &&
    (await deps.profiles.canonicalUser(d.projectId, found.userId)) !== (await deps.profiles.canonicalUser(d.projectId, d.userId))
  ) {
    return deadLetter(`userId "${d.userId}" disagrees with the decision of treatmentTrackingId "${d.treatmentTrackingId}" (made for another user)`);
  }
  if (typeof d.surface === 'string' && !found.surfaces.includes(d.surface)) {
    const surfaces = found.surfaces.join(', ');
    return deadLetter(`surface "${d.surface}" disagrees with the decision of treatmentTrackingId "${d.treatmentTrackingId}" (surfaces: ${surfaces})`);
  }
  const resolved: InteractionJob = { ...d, userId: found.userId, surface: typeof d.surface === 'string' ? d.surface : found.surfaces[0] };
  delete resolved.resolve;
  return resolved;
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
  return settle(await interactionJobOutcome(job, deps));
}

/** The job's steps, each answering an outcome or passing the interaction on: its shape, its user and surface, its admission, its effects. */
async function interactionJobOutcome(job: Job<InteractionJob>, deps: InteractionsProcessorDeps): Promise<JobOutcome> {
  let d = job.data;
  const wellFormed =
    d &&
    typeof d.projectId === 'string' &&
    typeof d.treatmentTrackingId === 'string' &&
    typeof d.treatmentId === 'string' &&
    typeof d.interactionTimeMicros === 'string';
  if (!wellFormed) return deadLetter('malformed interaction job payload');
  if (d.resolve === true || typeof d.userId !== 'string' || typeof d.surface !== 'string') {
    const resolved = await resolveInteraction(d, deps);
    if (resolved.kind === 'deadLetter') return resolved;
    // the completion handler (marker cut) and a later attempt see the resolved job; the decision
    // log never changes a stored decision, so resolving again on a retry gives the same answer
    job.data = d = resolved;
  }
  const jobId = job.id!;
  const receivedAt = typeof d.receivedAt === 'number' ? d.receivedAt : (job.timestamp ?? 0);
  // An id merged into another user stands for that user (rows, profile, marker);
  // An interaction accepted before its user's deletion is dropped
  const [[dropped], [{ unit, applied: done }]] = await Promise.all([
    acceptedBeforeDeletion(deps.erased, [{ projectId: d.projectId, userId: d.userId, receivedAt }]),
    deps.profiles.resolveUnits([{ projectId: d.projectId, userId: d.userId, id: jobId }]),
  ]);
  if (dropped) return drop('accepted before its user was deleted');
  if (unit.userId !== d.userId) job.data = d = { ...d, userId: unit.userId };
  let outcome = ALREADY_APPLIED;
  if (!done) {
    // marked in flight first: a recompute between the row and the profile update reads the user again later
    const row = async (userId: string) => {
      await deps.profiles.markInFlight(d.projectId, userId, jobId);
      await deps.writer.write('interactions', [rowLine('interactions', toInteractionRow({ ...d, userId }, `j:${jobId}`, deps.now()))]);
    };
    await row(d.userId);
    const ops = deps.opsFor ? await deps.opsFor(d) : undefined;
    const r = await deps.profiles.applyEventsTo(d.projectId, d.userId, jobId, [{ ts: Number(BigInt(d.interactionTimeMicros) / 1000n), ops }], row);
    if (r.userId !== d.userId) job.data = d = { ...d, userId: r.userId };
    outcome = appliedOutcome(r.applied);
  }
  // an attempt that finds its profile applied still runs the ranking script (its own marker)
  if (deps.ranking) await deps.ranking.store.apply(d.projectId, jobId, deps.ranking.deltasFor(d));
  return outcome;
}
