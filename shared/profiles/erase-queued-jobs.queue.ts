import type { Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { INGEST_QUEUES, queueHandle } from './user-deletion.queue.js';

/**
 * DeleteUserData and the ingest jobs Redis keeps for retries: a failed job stays up to 30 days
 * (the dashboard can retry it), a delayed one waits out its backoff (a ClickHouse outage can hold
 * jobs for hours). Their payloads hold the user's events, properties and interactions, so the
 * deletion erases them: a job of the user alone is removed, a job shared with other users (a
 * merged LogEvents or interactions job, a decisions batch) is rewritten without the user's part.
 *
 * Safe for exactly-once: only what the user's tombstone would drop anyway is erased (requests and
 * records of the user's ids accepted up to the deletion), so a retry of a rewritten job does for
 * the others exactly what it would have done. A merged job keeps each request at its index, with
 * the user's events emptied (an interaction: emptied of what the user did), because a request's
 * identity (`<jobId>.<index>`: its marker and the de-duplication keys of its events) is its
 * position. Active jobs are left to the deletion's
 * in-flight wait; waiting ones are dropped by the tombstone when they run, then removed.
 */

/** What erasing the users does to one job's data. */
export type JobErasure = { kind: 'keep' } | { kind: 'remove' } | { kind: 'rewrite'; data: unknown };

export interface ErasedIds {
  projectId: string;
  userIds: ReadonlySet<string>;
  /** Requests and records accepted up to this time (epoch ms) are erased; later ones are a new profile's. */
  deletedAtMs: number;
}

type Rec = Record<string, unknown>;

const isObject = (v: unknown): v is Rec => v !== null && typeof v === 'object' && !Array.isArray(v);

/** A request, an interaction or a decision record of one of the users, accepted up to the deletion. */
function erasedUnit(r: unknown, e: ErasedIds, jobTimestamp: number): boolean {
  if (!isObject(r) || r.projectId !== e.projectId || typeof r.userId !== 'string' || !e.userIds.has(r.userId)) return false;
  const at = typeof r.receivedAt === 'number' ? r.receivedAt : typeof r.decideTimeMs === 'number' ? r.decideTimeMs : jobTimestamp;
  return at <= e.deletedAtMs;
}

/** A merged job's request of an erased user: its identity and acceptance time, none of its events. */
function erasedRequest(r: Rec): Rec {
  return { kind: r.kind, projectId: r.projectId, userId: r.userId, events: [], origin: r.origin, receivedAt: r.receivedAt };
}

/**
 * A merged job's interaction of an erased user: its identity and acceptance time, nothing of what
 * the user did (treatment, type, time, action); well-formed, so its tombstone drops it.
 */
function erasedInteraction(r: Rec): Rec {
  return {
    kind: r.kind,
    projectId: r.projectId,
    userId: r.userId,
    treatmentId: '',
    treatmentTrackingId: '',
    surface: '',
    interactionType: '',
    interactionTimeMicros: '0',
    receivedAt: r.receivedAt,
  };
}

/** A merged job (its items at `field`): kept, removed when every item is the users', else rewritten with theirs emptied in place. */
function erasedMerged(data: Rec, field: string, emptied: (r: Rec) => Rec, e: ErasedIds, jobTimestamp: number): JobErasure {
  const items = data[field] as unknown[];
  const mine = items.map((r) => erasedUnit(r, e, jobTimestamp));
  if (!mine.includes(true)) return { kind: 'keep' };
  if (!mine.includes(false)) return { kind: 'remove' };
  return { kind: 'rewrite', data: { ...data, [field]: items.map((r, i) => (mine[i] ? emptied(r as Rec) : r)) } };
}

/** Pure: what becomes of a job's data (any ingest queue's) when these users are erased. */
export function jobErasure(data: unknown, e: ErasedIds, jobTimestamp: number): JobErasure {
  if (!isObject(data)) return { kind: 'keep' };
  // an isolated job wraps the original payload
  if (data.kind === undefined && data.data !== undefined) {
    const inner = jobErasure(data.data, e, jobTimestamp);
    return inner.kind === 'rewrite' ? { kind: 'rewrite', data: { ...data, data: inner.data } } : inner;
  }
  // the user's part goes; it stays at its index (the others' identity), and its tombstone drops it
  if (data.kind === 'eventsBatch' && Array.isArray(data.requests)) return erasedMerged(data, 'requests', erasedRequest, e, jobTimestamp);
  if (data.kind === 'interactionsBatch' && Array.isArray(data.interactions)) return erasedMerged(data, 'interactions', erasedInteraction, e, jobTimestamp);
  // a decisions job's records, positional: [projectId, userId, responseId, decideTimeMs, decisions]
  if (Array.isArray(data.packed)) {
    const unit = (r: unknown) => (Array.isArray(r) ? { projectId: r[0], userId: r[1], decideTimeMs: r[3] } : undefined);
    const packed = data.packed.filter((r) => !erasedUnit(unit(r), e, jobTimestamp));
    if (packed.length === data.packed.length) return { kind: 'keep' };
    return packed.length === 0 ? { kind: 'remove' } : { kind: 'rewrite', data: { ...data, packed } };
  }
  if (Array.isArray(data.records)) {
    const records = data.records.filter((r) => !erasedUnit(r, e, jobTimestamp));
    if (records.length === data.records.length) return { kind: 'keep' };
    return records.length === 0 ? { kind: 'remove' } : { kind: 'rewrite', data: { ...data, records } };
  }
  return erasedUnit(data, e, jobTimestamp) ? { kind: 'remove' } : { kind: 'keep' };
}

/** Jobs read per page, and at most per queue and state (failed jobs are capped at 10,000 per queue). */
const PAGE = 100;
export const MAX_ERASURE_SCAN = 20_000;

export interface QueuedErasure {
  removed: number;
  rewritten: number;
  /** Jobs that changed state meanwhile (picked up by a worker): their tombstone drops the user's part. */
  skipped: number;
}

/** Erases the users from the failed and delayed jobs of every ingest queue (see above). */
export async function eraseQueuedJobs(connection: Redis, redisPrefix: string, e: ErasedIds): Promise<QueuedErasure> {
  const out: QueuedErasure = { removed: 0, rewritten: 0, skipped: 0 };
  for (const name of INGEST_QUEUES) {
    const queue = queueHandle(connection, redisPrefix, name);
    for (const state of ['failed', 'delayed'] as const) {
      // read first, then change: removing while paging would shift the pages
      const found: { job: Job; erasure: JobErasure }[] = [];
      for (let start = 0; start < MAX_ERASURE_SCAN; start += PAGE) {
        const jobs = await queue.getJobs(state, start, start + PAGE - 1, true);
        for (const job of jobs) {
          const erasure = job ? jobErasure(job.data, e, job.timestamp) : { kind: 'keep' as const };
          if (erasure.kind !== 'keep') found.push({ job: job as Job, erasure });
        }
        if (jobs.length < PAGE) break;
      }
      for (const { job, erasure } of found) await apply(job, erasure, out);
    }
  }
  return out;
}

async function apply(job: Job, erasure: JobErasure, out: QueuedErasure): Promise<void> {
  try {
    if (erasure.kind === 'remove') {
      await job.remove();
      out.removed++;
    } else if (erasure.kind === 'rewrite') {
      await job.updateData(erasure.data);
      out.rewritten++;
    }
  } catch {
    // locked by a worker (it was promoted and picked up) or gone: the tombstone covers it
    out.skipped++;
  }
}
