import type { Job } from 'bullmq';
import type { InteractionJob, InteractionsBatchJob, InteractionsQueueJob } from '../../shared/ingestion/index.js';
import { toInteractionRow } from '../../shared/ingestion/event-rows.warehouse.js';
import type { AppliedUnit, ProfileEvent, ProfileStore } from '../../shared/profiles/index.js';
import type { RankingCounterStore, RankingDelta } from '../../shared/delivery/index.js';
import { rowLine } from '../../shared/platform/warehouse/tables.js';
import type { ClickhouseBatchWriter } from '../warehouse/clickhouse-batch-writer.js';
import { acceptedBeforeDeletion, type ErasedUsers } from './events.processor.js';
import type { DecisionLookup } from '../../shared/impact/index.js';
import { trackingResponseId } from '../../shared/ingestion/event-input.codec.js';
import { ALREADY_APPLIED, appliedOutcome, deadLetter, drop, outcomeOf, settle, storedOf, type DeadLetter, type JobOutcome } from './job-outcome.js';

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
  /** Stores an interaction of a merged job that can never be stored, with the reason (the job's other interactions go on). */
  deadLetter?: (interaction: InteractionJob, id: string, reason: string) => Promise<void>;
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

/** The identity of an interaction's profile marker (`id`: its job's id, or `<jobId>.<index>` in a merged job). */
export function interactionUnit(d: InteractionJob | undefined, id: string): AppliedUnit | undefined {
  if (!d || typeof d !== 'object' || typeof d.projectId !== 'string' || typeof d.userId !== 'string') return undefined;
  return { projectId: d.projectId, userId: d.userId, id };
}

/** The interactions of a job with their identities: a single job's own id, a merged job's `<jobId>.<index>`. */
export function interactionsOf(data: InteractionsQueueJob | undefined, jobId: string): { data: InteractionJob; id: string }[] {
  if (!data || typeof data !== 'object') return [];
  if (data.kind === 'interactionsBatch') return Array.isArray(data.interactions) ? data.interactions.map((d, i) => ({ data: d, id: `${jobId}.${i}` })) : [];
  return [{ data, id: jobId }];
}

/** The markers of a job's interactions (resolved users), for their deletion at completion. */
export function interactionsJobUnits(data: InteractionsQueueJob | undefined, jobId: string): AppliedUnit[] {
  return interactionsOf(data, jobId).flatMap(({ data: d, id }) => interactionUnit(d, id) ?? []);
}

/**
 * Same ordering as events: rows, then the marker-guarded profile script, then the ranking script
 * (its own marker, in the project's slot), then completion. A retry whose profile marker is there
 * skips the rows and the profile script (both done) and only re-runs the ranking script, which
 * its marker makes a no-op if it had run too. A merged job runs each of its interactions so, as if
 * it were a job of id `<jobId>.<index>`, all at once (see processInteractionsBatch).
 */
export async function processInteractionJob(job: Job<InteractionsQueueJob>, deps: InteractionsProcessorDeps): Promise<number> {
  const data = job.data;
  if (data?.kind === 'interactionsBatch') return settle(await processInteractionsBatch(data, job.id!, deps, job.timestamp ?? 0));
  const { outcome, data: done } = await interactionOutcome(data, job.id!, deps, admission(deps, job.timestamp ?? 0));
  // the completion handler (marker cut) sees the interaction's user as it was applied
  job.data = done;
  return settle(outcome);
}

/**
 * Each interaction of a merged job as if it were a job of id `<jobId>.<index>`, all at once (their
 * rows share the batch writer's inserts). One that can never be stored becomes a dead letter on
 * its own (`deps.deadLetter`) and the others complete; a transient failure (ClickHouse, Redis, a
 * decision not stored yet) fails the job once every interaction has settled, and its retry redoes
 * only the interactions whose marker is missing. The job's data is updated in memory with the
 * users the interactions were applied to, for the completion handler's marker cut.
 */
async function processInteractionsBatch(data: InteractionsBatchJob, jobId: string, deps: InteractionsProcessorDeps, timestamp: number): Promise<JobOutcome> {
  if (!Array.isArray(data.interactions)) return deadLetter('malformed job payload: interactions must be a list');
  const admit = admission(deps, timestamp);
  const settled = await Promise.allSettled(
    data.interactions.map(async (item, i) => {
      const id = `${jobId}.${i}`;
      let done = item;
      const outcome = await outcomeOf(async () => {
        const r = await interactionOutcome(item, id, deps, admit);
        done = r.data;
        return r.outcome;
      });
      data.interactions[i] = done;
      if (outcome.kind !== 'deadLetter') return storedOf(outcome);
      // without a sink of its own, the interaction fails the job, which is filed whole
      if (!deps.deadLetter) return settle(outcome);
      await deps.deadLetter(item, id, outcome.reason);
      return 0;
    }),
  );
  // a transient failure other than a decision's wait says more; any of them retries the job
  const failed = settled.filter((r) => r.status === 'rejected');
  if (failed.length > 0) throw (failed.find((r) => !(r.reason instanceof DecisionNotYetStored)) ?? failed[0]).reason;
  return { kind: 'ok', stored: settled.reduce((n, r) => n + (r.status === 'fulfilled' ? r.value : 0), 0) };
}

type Admit = (d: InteractionJob, id: string) => Promise<{ dropped: boolean; unit: AppliedUnit; applied: boolean }>;

/**
 * An interaction's admission: whether it was accepted before its user's deletion (dropped), and
 * its marker and user (an id merged into another user stands for that user). The interactions
 * of a merged job that ask in the same turn (all but those that waited for their decision) share
 * one round trip for the deletions and one for the markers, as a merged events job's requests do.
 */
function admission(deps: InteractionsProcessorDeps, jobTimestamp: number): Admit {
  let asking: { d: InteractionJob; id: string; resolve: (a: Awaited<ReturnType<Admit>>) => void; reject: (err: unknown) => void }[] = [];
  const flush = async () => {
    const batch = asking;
    asking = [];
    try {
      const [dropped, units] = await Promise.all([
        acceptedBeforeDeletion(
          deps.erased,
          batch.map(({ d }) => ({ projectId: d.projectId, userId: d.userId, receivedAt: typeof d.receivedAt === 'number' ? d.receivedAt : jobTimestamp })),
        ),
        deps.profiles.resolveUnits(batch.map(({ d, id }) => ({ projectId: d.projectId, userId: d.userId, id }))),
      ]);
      batch.forEach((b, i) => b.resolve({ dropped: dropped[i], ...units[i] }));
    } catch (err) {
      for (const b of batch) b.reject(err);
    }
  };
  return (d, id) =>
    new Promise((resolve, reject) => {
      if (asking.length === 0) queueMicrotask(() => void flush());
      asking.push({ d, id, resolve, reject });
    });
}

/** An interaction's steps, each answering an outcome or passing it on: its shape, its user and surface, its admission, its effects. */
async function interactionOutcome(
  input: InteractionJob,
  id: string,
  deps: InteractionsProcessorDeps,
  admit: Admit,
): Promise<{ outcome: JobOutcome; data: InteractionJob }> {
  let d = input;
  const wellFormed =
    d &&
    typeof d === 'object' &&
    typeof d.projectId === 'string' &&
    typeof d.treatmentTrackingId === 'string' &&
    typeof d.treatmentId === 'string' &&
    typeof d.interactionTimeMicros === 'string';
  if (!wellFormed) return { outcome: deadLetter('malformed interaction job payload'), data: d };
  if (d.resolve === true || typeof d.userId !== 'string' || typeof d.surface !== 'string') {
    const resolved = await resolveInteraction(d, deps);
    if (resolved.kind === 'deadLetter') return { outcome: resolved, data: d };
    // the completion handler (marker cut) and a later attempt see the resolved interaction; the
    // decision log never changes a stored decision, so resolving again on a retry gives the same answer
    d = resolved;
  }
  const { dropped, unit, applied: done } = await admit(d, id);
  if (dropped) return { outcome: drop('accepted before its user was deleted'), data: d };
  if (unit.userId !== d.userId) d = { ...d, userId: unit.userId };
  let outcome = ALREADY_APPLIED;
  if (!done) {
    const row = async (userId: string) => {
      // marked in flight first: a recompute between the row and the profile update reads the user again later
      await deps.profiles.markInFlight(d.projectId, userId, id);
      await deps.writer.write('interactions', [rowLine('interactions', toInteractionRow({ ...d, userId }, `j:${id}`, deps.now()))]);
    };
    await row(d.userId);
    const ops = deps.opsFor ? await deps.opsFor(d) : undefined;
    const r = await deps.profiles.applyEventsTo(d.projectId, d.userId, id, [{ ts: Number(BigInt(d.interactionTimeMicros) / 1000n), ops }], row);
    if (r.userId !== d.userId) d = { ...d, userId: r.userId };
    outcome = appliedOutcome(r.applied);
  }
  // an attempt that finds its profile applied still runs the ranking script (its own marker)
  if (deps.ranking) await deps.ranking.store.apply(d.projectId, id, deps.ranking.deltasFor(d));
  return { outcome, data: d };
}
