import { aggregationTarget, type AggregationTarget } from '../../shared/aggregation/index.js';
import { redisScript } from '../../shared/platform/redis/script-loader.js';
import { isCluster } from '../../shared/platform/redis/redis.js';
import { dailyCountPrefix, distinctMarkerPrefix, firstTsKey, latestTsKey } from '../../shared/profiles/index.js';
import { IN_FLIGHT_APPLIED, IN_FLIGHT_TTL_MS } from '../../shared/profiles/index.js';
import {
  fetchPage,
  fieldSource,
  kindOf,
  PageBounds,
  readPage,
  type FieldRun,
  type Kind,
  type Page,
  type RecomputeDeps,
  type UserState,
} from './recompute-reads.js';

export type { RecomputeDeletions, RecomputeDeps } from './recompute-reads.js';

/**
 * Recomputes aggregation state in the profiles from ClickHouse, the store of record:
 * the scheduler runs it every hour (windows move as days pass, late or lost incremental updates
 * are repaired), the backfill runs it for a field created after its events, and operators run
 * it on demand. The warehouse reads one field at a time, a page of users at a time (bounded
 * memory), and a run is resumable from the page cursor.
 */

export interface RecomputeRequest {
  projectId: string;
  /** Unset: every data field of the project that has an aggregation. */
  dataFieldIds?: string[];
  /** The backfill of fields just created (no stale state of theirs to remove). */
  newFields?: boolean;
}

/** Where a run stands; a run given it as `resumeFrom` continues after the last finished page. */
export interface RecomputeCursor {
  dataFieldIds: string[];
  fieldIndex: number;
  /** Users up to and including this id are done for the current field. */
  afterUserId: string;
  usersUpdated: number;
}

export interface RecomputeProgress {
  /** fields finished / fields in the run */
  done: number;
  total: number;
  usersUpdated: number;
}

export interface RecomputeOptions {
  resumeFrom?: RecomputeCursor;
  /** Called after every page, once its profiles are written (persist the cursor here). */
  onCheckpoint?: (cursor: RecomputeCursor, progress: RecomputeProgress) => Promise<void>;
  /** Users per ClickHouse page. @defaultValue 10000 */
  pageUsers?: number;
  /** Users per Redis script call. @defaultValue 1000 */
  batchUsers?: number;
  /**
   * How long the run may spend, in all, reading again the users it left because an ingest job of
   * theirs was between its rows and its profile update; those still busy after it are left to the
   * next run. @defaultValue 60000
   */
  secondReadsMs?: number;
}

export interface RecomputeResult {
  dataFieldsRecomputed: number;
  /** Profiles written, summed over the fields. */
  usersUpdated: number;
  /** Users whose counts were left as they were (ingest jobs of theirs kept running), summed over the fields. */
  usersLeft: number;
}

/**
 * A job that updated a profile this long before a read began may still be counted as after it
 * (the workers' and the scheduler's clocks may differ by that much).
 */
const CLOCK_MARGIN_MS = 250;

/*
 * One call per batch of users of one field. Days before today are replaced by the recomputed
 * counts (ClickHouse is the truth for finished days; days outside the window are dropped); today
 * and later keep the larger of the stored and the recomputed count, because incremental updates
 * that raced with the query must not be lost (the next run settles the day once it is over).
 * Distinct markers get their first-seen day; day-stamped markers older than the range are dropped
 * (markers written by the incremental path hold 1 and are kept: the next run stamps them).
 * First/latest keep the extreme of the stored and recomputed values.
 */
const WRITE = redisScript(new URL('./write-recomputed.lua', import.meta.url));

/**
 * The script's arguments: the spec, then per user (in KEYS order) positional strings, no JSON to
 * decode per user: `dc`: n, (day, count) x n, m, (trackingId, day) x m; `ft`/`lt`: ms.
 */
function writeArgs(spec: object, kind: Kind, users: readonly UserState[]): string[] {
  const args = [JSON.stringify(spec)];
  for (const u of users) {
    if (kind !== 'dc') {
      args.push(u.ms ?? '');
      continue;
    }
    if (u.dayPairs) {
      args.push(String(u.dayPairs.length / 2));
      for (const x of u.dayPairs) args.push(x);
    } else {
      const days = Object.entries(u.days ?? {});
      args.push(String(days.length));
      for (const [day, c] of days) args.push(day, String(c));
    }
    const marks = Object.entries(u.marks ?? {});
    args.push(String(marks.length));
    for (const [trk, day] of marks) args.push(trk, day);
  }
  return args;
}

/** Writes a batch of users; returns those left for a second read (ingest jobs of theirs in flight). */
async function writeBatch(deps: RecomputeDeps, run: FieldRun, page: Page, users: UserState[]): Promise<string[]> {
  if (users.length === 0) return [];
  const clock = page.clock;
  // A new field's backfill skips the scan for stale entries: it has none but what the incremental
  // path wrote since its creation, and the window sums ignore days outside the window anyway.
  const id = run.target.field.dataFieldId;
  const fields = {
    dailyCountPrefix: dailyCountPrefix(id),
    distinctMarkerPrefix: distinctMarkerPrefix(id),
    field: run.kind === 'ft' ? firstTsKey(id) : latestTsKey(id),
  };
  const spec = {
    ...fields,
    kind: run.kind,
    today: clock.today,
    rangeStart: clock.rangeStart,
    scan: !run.newField,
    ttl: deps.profileTtlSeconds ?? 400 * 86_400,
    appliedField: IN_FLIGHT_APPLIED,
    readStart: page.readStart - CLOCK_MARGIN_MS,
    markedSince: deps.now() - IN_FLIGHT_TTL_MS,
  };
  const keysOf = (u: UserState) => [deps.keys.profile(run.projectId, u.userId), deps.keys.ingestInFlight(run.projectId, u.userId)];
  if (isCluster(deps.redis)) {
    // On a Redis Cluster each user's profile is in its own slot (`{<project>:<user>}`) and a script
    // may touch one slot only: one call per user, all in flight at once (ioredis sends each to its node).
    const left = await Promise.all(users.map((u) => WRITE.run(deps.redis, keysOf(u), writeArgs(spec, run.kind, [u]))));
    return users.filter((_, i) => (left[i] as number[]).length > 0).map((u) => u.userId);
  }
  const left = (await WRITE.run(deps.redis, users.flatMap(keysOf), writeArgs(spec, run.kind, users))) as number[];
  return left.map((position) => users[position - 1].userId);
}

/** Batches of a page in flight at once: Redis runs one script at a time, this hides the round trips. */
const WRITES_IN_FLIGHT = 4;

/** Writes a page; returns the users left for a second read. */
async function writePage(deps: RecomputeDeps, run: FieldRun, page: Page, batchUsers: number): Promise<string[]> {
  // a user deleted while this run read ClickHouse: the page may hold its rows; not written back
  const deleted = await run.deletions.deletedSince(run.projectId, run.startedAt);
  const users = deleted.size === 0 ? page.users : page.users.filter((u) => !deleted.has(u.userId));
  const batches: UserState[][] = [];
  for (let i = 0; i < users.length; i += batchUsers) batches.push(users.slice(i, i + batchUsers));
  let next = 0;
  const left: string[] = [];
  const lane = async () => {
    while (next < batches.length) left.push(...(await writeBatch(deps, run, page, batches[next++])));
  };
  await Promise.all(Array.from({ length: Math.min(WRITES_IN_FLIGHT, batches.length) }, lane));
  return left;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The users a page left (an ingest job of theirs between its rows and its profile update, or one
 * that updated the profile while the page was read) are read and written again once those jobs
 * are done, waiting longer each round, until `untilMs` (performance.now()); returns how many are
 * still left, for the next run to settle.
 */
async function secondReads(deps: RecomputeDeps, run: FieldRun, page: Page, userIds: string[], batchUsers: number, untilMs: number): Promise<number> {
  let left = userIds;
  for (let wait = 50; left.length > 0 && performance.now() + wait < untilMs; wait = Math.min(wait * 2, 1000)) {
    await sleep(wait);
    const again = await readPage(deps, run, page.after, page.upper, left);
    left = await writePage(deps, run, again, batchUsers);
  }
  return left.length;
}

async function targetsOf(deps: RecomputeDeps, req: RecomputeRequest, ids: string[] | undefined): Promise<AggregationTarget[]> {
  const targets = (await deps.dataFields.list(req.projectId)).map(aggregationTarget).filter((t): t is AggregationTarget => t !== undefined);
  if (ids === undefined) return targets;
  const byId = new Map(targets.map((t) => [t.field.dataFieldId, t]));
  return ids.map((id) => byId.get(id)).filter((t): t is AggregationTarget => t !== undefined);
}

/** Recomputes the fields of `req` (all aggregations of the project by default) from ClickHouse. */
export async function recomputeDataFields(deps: RecomputeDeps, req: RecomputeRequest, opts: RecomputeOptions = {}): Promise<RecomputeResult> {
  const sizes = { pageUsers: opts.pageUsers ?? 10_000, batchUsers: opts.batchUsers ?? 1000 };
  const secondReadsUntil = performance.now() + (opts.secondReadsMs ?? 60_000);
  let usersLeft = 0;
  const targets = await targetsOf(deps, req, opts.resumeFrom?.dataFieldIds ?? req.dataFieldIds);
  const cursor: RecomputeCursor = opts.resumeFrom
    ? { ...opts.resumeFrom }
    : { dataFieldIds: targets.map((t) => t.field.dataFieldId), fieldIndex: 0, afterUserId: '', usersUpdated: 0 };
  const log = deps.log.child({ projectId: req.projectId });
  if (opts.resumeFrom) log.info({ cursor }, 'recompute resumed');
  for (; cursor.fieldIndex < targets.length; cursor.fieldIndex++, cursor.afterUserId = '') {
    const target = targets[cursor.fieldIndex];
    const dataFieldId = target.field.dataFieldId;
    const { deletions } = deps;
    const startedAt = Date.now() - 1;
    const src = fieldSource(target);
    const deletedUsers = src ? await deletions.pending(req.projectId) : new Map<string, number>();
    const started = performance.now();
    let fieldUsers = 0;
    // a field whose interaction type counts nothing (UNSPECIFIED) has no rows to read
    if (src !== undefined) {
      const run: FieldRun = {
        projectId: req.projectId,
        target,
        src,
        kind: kindOf(target),
        newField: req.newFields === true,
        startedAt,
        deletions,
        deletedUsers,
      };
      // The next page is read from ClickHouse while this one is written to Redis.
      const bounds = new PageBounds(deps, run, sizes.pageUsers);
      let reading = fetchPage(deps, run, cursor.afterUserId, bounds);
      for (let page = 1; ; page++) {
        const done = await reading;
        if (!done) break;
        reading = fetchPage(deps, run, done.upper, bounds);
        // a failed write ends the run; the read under way must not become an unhandled rejection
        reading.catch(() => undefined);
        const left = await writePage(deps, run, done, sizes.batchUsers);
        const stillLeft = left.length > 0 ? await secondReads(deps, run, done, left, sizes.batchUsers, secondReadsUntil) : 0;
        usersLeft += stillLeft;
        cursor.afterUserId = done.upper;
        cursor.usersUpdated += done.users.length - stillLeft;
        fieldUsers += done.users.length - stillLeft;
        await opts.onCheckpoint?.({ ...cursor }, { done: cursor.fieldIndex, total: targets.length, usersUpdated: cursor.usersUpdated });
        if (page % 5 === 0) log.info({ dataFieldId, pages: page, users: fieldUsers, afterUserId: cursor.afterUserId }, 'recompute progress');
      }
    }
    log.info(
      { dataFieldId, users: fieldUsers, ms: Math.round(performance.now() - started), field: cursor.fieldIndex + 1, fields: targets.length },
      'data field recomputed',
    );
  }
  await opts.onCheckpoint?.({ ...cursor }, { done: targets.length, total: targets.length, usersUpdated: cursor.usersUpdated });
  if (usersLeft > 0) log.info({ usersLeft }, 'recompute left users whose ingest jobs kept running as they were; the next run settles them');
  return { dataFieldsRecomputed: targets.length, usersUpdated: cursor.usersUpdated, usersLeft };
}
