import type { Job } from 'bullmq';
import { eventDedupKey, eventRowsChunk, toUserAttributeUpdateRow } from '../../shared/ingestion/event-rows.warehouse.js';
import type { EventsBatchJob, EventsJob, EventsQueueJob, UserAttributesJob } from '../../shared/ingestion/index.js';
import type { AppliedUnit, ProfileEvent, ProfileStore } from '../../shared/profiles/index.js';
import { toClickhouseDateTime64 } from '../../shared/platform/warehouse/clickhouse-datetime.js';
import { rowLine } from '../../shared/platform/warehouse/tables.js';
import type { ClickhouseBatchWriter } from '../warehouse/clickhouse-batch-writer.js';
import { ALREADY_APPLIED, appliedOutcome, deadLetter, drop, outcomeOf, settle, storedOf, type JobOutcome } from './job-outcome.js';
import type { IdentityMerger } from '../profiles/identity-merge.js';

/** Contributes aggregate updates for an event (the incremental data-field path plugs in here). */
export type EventOpsProvider = (projectId: string, userId: string, events: EventsJob['events']) => Promise<ProfileEvent['ops'][]>;

export interface EventsProcessorDeps {
  writer: ClickhouseBatchWriter;
  profiles: ProfileStore;
  now: () => number;
  opsFor?: EventOpsProvider;
  /** Events of a request applied for the first time, of its total (duplicates by insertId are the rest). */
  onApplied?: (applied: number, total: number) => void;
  /** Stores a request of a merged job that can never be stored, with the reason (the job's other requests go on). */
  deadLetter?: (request: EventsJob, id: string, reason: string) => Promise<void>;
  /** Deleted users: a request accepted before its user's deletion is dropped. */
  erased?: ErasedUsers;
  /** Merges a pre-login id's activity into the user of an event that carries both. */
  identity?: IdentityMerger;
}

/** The tombstones of deleted users (shared/profiles/user-deletion.store.ts). */
export interface ErasedUsers {
  deletedAt(refs: readonly { projectId: string; userId: string }[]): Promise<(number | undefined)[]>;
}

/**
 * Which of these requests were accepted before their user was deleted (they must not bring
 * the user's rows or profile back). One round trip for all of them; none without deletions.
 */
export async function acceptedBeforeDeletion(
  erased: ErasedUsers | undefined,
  refs: readonly { projectId: string; userId: string; receivedAt: number }[],
): Promise<boolean[]> {
  if (!erased || refs.length === 0) return refs.map(() => false);
  const at = await erased.deletedAt(refs);
  return refs.map((r, i) => at[i] !== undefined && r.receivedAt <= at[i]!);
}

const receivedAtOf = (data: { receivedAt?: unknown }, job: Job | { timestamp?: number }): number =>
  typeof data.receivedAt === 'number' ? data.receivedAt : (job.timestamp ?? 0);

/** An events request's rows as one chunk (eventRowsChunk); events without insertId are keyed by its id or message. */
export function eventRowsOf(job: EventsJob, jobId: string, ingestMs: number): string {
  const carrier = job.origin.source === 'pubsub' ? { messageId: job.origin.messageId } : { jobId };
  return eventRowsChunk(job, job.events, (e, i) => eventDedupKey(e.insertId, carrier, i), toClickhouseDateTime64(ingestMs), job.origin.source);
}

/** A dead letter when the payload is not a request of one user; undefined when it is. */
function checkShape(data: EventsJob | UserAttributesJob): JobOutcome | undefined {
  if (!data || typeof data !== 'object' || typeof data.projectId !== 'string' || typeof data.userId !== 'string') {
    return deadLetter('malformed job payload: projectId and userId are required');
  }
  if (data.kind === 'events' && !Array.isArray(data.events)) return deadLetter('malformed job payload: events must be a list');
  return undefined;
}

/**
 * Order matters for exactly-once: the in-flight mark (so a recompute of the user's data fields in
 * between does not count the rows twice), rows (ClickHouse collapses repeats on the de-duplication
 * key), then the profile script (guarded by the job marker; it clears the mark), then the job completes. A crash
 * between any two steps makes BullMQ retry the job, and every step is a no-op the second time.
 * Before the rows, one round trip reads the markers: a request whose marker is there was applied
 * (its rows were stored before its script ran), so a retry inserts nothing for it again.
 * Returns the events applied for the first time (-1: a single job that had been applied before);
 * a job that can never be stored throws UnrecoverableError (`settle`).
 */
export async function processEventsJob(job: Job<EventsQueueJob>, deps: EventsProcessorDeps): Promise<number> {
  return settle(await eventsJobOutcome(job, deps));
}

/** The job's steps, each answering an outcome or passing the request on: its shape, its admission, its effects. */
async function eventsJobOutcome(job: Job<EventsQueueJob>, deps: EventsProcessorDeps): Promise<JobOutcome> {
  const jobId = job.id!;
  const data = job.data;
  if (data?.kind === 'eventsBatch') return processBatch(data, jobId, deps, job);
  const decided = checkShape(data) ?? (await admission(data, jobId, deps, job));
  if (decided) return decided;
  if (data.kind === 'userAttributes') return processUserAttributes(data, jobId, deps);
  return processEvents(data, jobId, deps);
}

/**
 * A request accepted before its user's deletion is dropped, and one whose marker is there was
 * applied by an earlier attempt; any other goes on as the user its id stands for (an id merged
 * into another user stands for that user: its rows and profile go there).
 */
async function admission(data: EventsJob | UserAttributesJob, jobId: string, deps: EventsProcessorDeps, job: Job): Promise<JobOutcome | undefined> {
  const [[dropped], [r]] = await Promise.all([
    acceptedBeforeDeletion(deps.erased, [{ projectId: data.projectId, userId: data.userId, receivedAt: receivedAtOf(data, job) }]),
    deps.profiles.resolveUnits([{ projectId: data.projectId, userId: data.userId, id: jobId }]),
  ]);
  if (dropped) return drop('accepted before its user was deleted');
  if (r.applied) return ALREADY_APPLIED;
  data.userId = r.unit.userId;
  return undefined;
}

/** The identities of a job's markers (one per request of a merged job), for the pre-check and their deletion at completion. */
export function eventsJobUnits(data: EventsQueueJob | undefined, jobId: string): AppliedUnit[] {
  if (!data || typeof data !== 'object') return [];
  if (data.kind === 'eventsBatch') {
    if (!Array.isArray(data.requests)) return [];
    return data.requests.flatMap((r, i) => (isUserJob(r) ? [{ projectId: r.projectId, userId: r.userId, id: `${jobId}.${i}` }] : []));
  }
  return isUserJob(data) ? [{ projectId: data.projectId, userId: data.userId, id: jobId }] : [];
}

function isUserJob(r: unknown): r is { projectId: string; userId: string } {
  return !!r && typeof r === 'object' && typeof (r as EventsJob).projectId === 'string' && typeof (r as EventsJob).userId === 'string';
}

/** The de-duplication id of an event across jobs: its insertId, else (Pub/Sub) its message and position. */
function dedupIdOf(data: EventsJob, e: EventsJob['events'][number], index: number): string | undefined {
  if (e.insertId !== undefined) return `i:${e.insertId}`;
  return data.origin?.source === 'pubsub' ? `m:${data.origin.messageId}:${index}` : undefined;
}

/** One request (or message) with the identity `id`: its marker and its derived de-duplication keys. */
async function processEvents(data: EventsJob, id: string, deps: EventsProcessorDeps): Promise<JobOutcome> {
  // The first accepted event carrying userId U and preLoginTempUserId T merges T into U
  // (each step repeatable: a retry of this job merges once), before this job's own effects.
  if (deps.identity) {
    const temps = new Set<string>();
    for (const e of data.events)
      if (typeof e.preLoginTempUserId === 'string' && e.preLoginTempUserId !== '' && e.preLoginTempUserId !== data.userId) temps.add(e.preLoginTempUserId);
    for (const t of temps) await deps.identity.merge(data.projectId, t, data.userId);
  }
  // rows stored but not yet counted in the profile: a recompute meanwhile reads this user again later
  await deps.profiles.markInFlight(data.projectId, data.userId, id);
  await deps.writer.writeChunk('events', eventRowsOf(data, id, deps.now()), data.events.length);
  const ops = deps.opsFor ? await deps.opsFor(data.projectId, data.userId, data.events) : [];
  const profileEvents: ProfileEvent[] = data.events.map((e, i) => ({
    dedupId: dedupIdOf(data, e, i),
    ts: e.clientEventTs,
    userProperties: e.userProperties,
    ops: ops[i],
  }));
  // the user was merged into another one since the job started: its rows go there too
  const { applied, userId } = await deps.profiles.applyEventsTo(data.projectId, data.userId, id, profileEvents, async (to) => {
    await deps.profiles.markInFlight(data.projectId, to, id);
    await deps.writer.writeChunk('events', eventRowsOf({ ...data, userId: to }, id, deps.now()), data.events.length);
  });
  data.userId = userId;
  if (applied >= 0) deps.onApplied?.(applied, data.events.length);
  return appliedOutcome(applied);
}

/**
 * Each request of a merged job is processed as if it were a job of id `<jobId>.<index>`, all at
 * once (their rows share the batch writer's inserts). A request that can never be stored becomes
 * a dead letter on its own and the others complete; any other failure fails the job, and its
 * retry redoes only the requests whose marker is missing.
 */
async function processBatch(data: EventsBatchJob, jobId: string, deps: EventsProcessorDeps, job: Job): Promise<JobOutcome> {
  if (!Array.isArray(data.requests)) return deadLetter('malformed job payload: requests must be a list');
  const units = data.requests.map((r, i) =>
    isUserJob(r) ? { projectId: r.projectId, userId: r.userId, id: `${jobId}.${i}`, receivedAt: receivedAtOf(r, job) } : undefined,
  );
  const present = units.filter((u) => u !== undefined);
  // Ids merged into another user stand for that user; a request accepted before its
  // user's deletion is skipped like one applied before
  const [done, dropped] = await Promise.all([deps.profiles.resolveUnits(present), acceptedBeforeDeletion(deps.erased, present)]);
  let k = 0;
  const skip = units.map((u, i) => {
    if (u === undefined) return false;
    const j = k++;
    const r = done[j];
    data.requests[i].userId = r.unit.userId;
    return r.applied || dropped[j];
  });
  const stored = await Promise.all(
    data.requests.map(async (request, i) => {
      if (skip[i]) return 0;
      const id = `${jobId}.${i}`;
      const outcome = await outcomeOf(async () => checkShape(request) ?? processEvents(request, id, deps));
      if (outcome.kind !== 'deadLetter') return storedOf(outcome);
      // without a sink of its own, the request fails the job, which is filed whole
      if (!deps.deadLetter) return settle(outcome);
      await deps.deadLetter(request, id, outcome.reason);
      return 0;
    }),
  );
  return { kind: 'ok', stored: stored.reduce((n, a) => n + a, 0) };
}

async function processUserAttributes(data: UserAttributesJob, jobId: string, deps: EventsProcessorDeps): Promise<JobOutcome> {
  const row = toUserAttributeUpdateRow(
    { projectId: data.projectId, userId: data.userId, userProperties: data.userProperties, updateTimestamp: new Date(data.updateTs).toISOString() },
    `m:${data.messageId}`,
    { source: 'pubsub', ingestMs: deps.now() },
  );
  await deps.writer.write('user_attribute_updates', [rowLine('user_attribute_updates', row)]);
  return appliedOutcome(await deps.profiles.applyEvents(data.projectId, data.userId, jobId, [{ ts: data.updateTs, userProperties: data.userProperties }]));
}
