import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { interactionTypesCounted, type AggregationTarget } from '../../shared/aggregation/index.js';
import { aggregationPage, aggregationPageEnds } from '../../shared/aggregation/aggregation-pages.warehouse.js';
import { utcDay, utcDayOffset, utcDayStartMs } from '../../shared/aggregation/index.js';
import type { AggregationKind, AggregationPageRow, AggregationRead, AggregationSource, DataFieldRecord } from '../../shared/aggregation/index.js';
import type { RedisKeys } from '../../shared/platform/redis/redis-keys.js';
import type { Warehouse } from '../../shared/platform/warehouse/warehouse.js';
import type { UserDeletionStore } from '../../shared/profiles/index.js';

/**
 * The reads of a recompute (workers/aggregation/recompute.ts): what a run depends on, the pages of
 * users it reads from ClickHouse, one field at a time, and each user's state as read.
 */

const DAY_MS = 86_400_000;

/**
 * Days before a window that are still read: users whose last matching event fell out of the
 * window less than this long ago are rewritten once more, which removes their stale day fields.
 */
const GRACE_DAYS = 7;

/** What a recompute reads of the pending deletions (profiles' UserDeletionStore). */
export type RecomputeDeletions = Pick<UserDeletionStore, 'pending' | 'deletedSince'>;

export interface RecomputeDeps {
  warehouse: Pick<Warehouse, 'query'>;
  redis: Redis;
  keys: RedisKeys;
  dataFields: { list(projectId: string): Promise<DataFieldRecord[]> };
  /** Users being deleted: their rows are not read, and they are not written back. */
  deletions: RecomputeDeletions;
  log: Logger;
  now: () => number;
  /** TTL given to a profile this run creates (an existing profile keeps its own). @defaultValue 400 days */
  profileTtlSeconds?: number;
}

/** What one user's profile gets for one field. */
export interface UserState {
  userId: string;
  /** day (yyyymmdd) → count, days of the window only (distinct counts) */
  days?: Record<string, number>;
  /** [day, count, day, count, …] of the window's days, as ClickHouse wrote them (plain counts) */
  dayPairs?: string[];
  /** tracking id → first-seen day (distinct counts) */
  marks?: Record<string, string>;
  /** epoch ms (first or latest timestamp) */
  ms?: string;
}

export type Kind = AggregationKind;

export function kindOf(target: AggregationTarget): Kind {
  switch (target.agg.key) {
    case 'dailyCountAggregation':
      return 'dc';
    case 'firstTimestampAggregation':
    case 'daysSinceFirstTimestampAggregation':
      return 'ft';
    default:
      return 'lt';
  }
}

/** The rows a field counts (the same matching rules as shared/aggregation/data-field-ops.ts); none for a type that counts nothing. */
export function fieldSource(target: AggregationTarget): AggregationSource | undefined {
  if (target.source === 'event') {
    return { table: 'events', eventName: target.params.eventSchemaName, properties: target.params.propertyValueByPropertyName ?? {} };
  }
  const interactionTypes = interactionTypesCounted(target.params.treatmentInteractionType);
  if (interactionTypes.length === 0) return undefined;
  return { table: 'interactions', interactionTypes, treatmentId: target.params.treatmentId, surface: target.params.surfaceName ?? target.params.surfaceId };
}

/** The days one page is computed for, fixed at the page's start. */
export interface PageClock {
  today: string;
  windowStart: string;
  /** first day read: the window plus the grace days */
  rangeStart: string;
  rangeStartMs: number;
}

function pageClock(nowMs: number, windowDays: number): PageClock {
  const back = windowDays - 1 + GRACE_DAYS;
  return {
    today: utcDay(nowMs),
    windowStart: utcDayOffset(nowMs, -(windowDays - 1)),
    rangeStart: utcDayOffset(nowMs, -back),
    rangeStartMs: utcDayStartMs(nowMs) - back * DAY_MS,
  };
}

/** Pages whose bounds one ClickHouse query finds (memory: this many pages of user ids). */
const PAGES_PER_BOUNDS_QUERY = 10;

/** The page bounds of one field's run, fetched PAGES_PER_BOUNDS_QUERY at a time. */
export class PageBounds {
  private queued: string[] = [];
  private more = true;

  constructor(
    private readonly deps: RecomputeDeps,
    private readonly run: FieldRun,
    private readonly pageUsers: number,
  ) {}

  /** The upper bound of the page after `after` (the bound returned last), or undefined at the end. */
  async next(after: string): Promise<string | undefined> {
    if (this.queued.length === 0 && this.more) {
      const clock = pageClock(this.deps.now(), this.run.target.agg.windowDays ?? 1);
      const { uppers, rest } = await aggregationPageEnds(this.deps.warehouse, readOf(this.run, clock), after, this.pageUsers, PAGES_PER_BOUNDS_QUERY);
      this.queued = uppers;
      this.more = rest;
    }
    return this.queued.shift();
  }
}

/** What the warehouse reads for a field's run at one page's clock. */
function readOf(run: FieldRun, clock: PageClock): AggregationRead {
  return { projectId: run.projectId, source: run.src, kind: run.kind, deletedUsers: run.deletedUsers, rangeStartMs: clock.rangeStartMs };
}

function userState(row: AggregationPageRow, clock: PageClock): UserState {
  const inWindow = (day: string) => day >= clock.windowStart;
  if (row.ms !== undefined) return { userId: row.user_id, ms: row.ms };
  const days: Record<string, number> = {};
  if (row.marks) {
    const marks: Record<string, string> = {};
    for (const [d, trk] of row.marks) {
      const day = String(d);
      marks[trk] = day;
      if (inWindow(day)) days[day] = (days[day] ?? 0) + 1;
    }
    return { userId: row.user_id, days, marks };
  }
  return { userId: row.user_id, dayPairs: row.dayPairs ?? [] };
}

export interface FieldRun {
  projectId: string;
  target: AggregationTarget;
  src: AggregationSource;
  kind: Kind;
  newField: boolean;
  /** Wall-clock ms before the field's reads began: users deleted after it are not written back. */
  startedAt: number;
  deletions: RecomputeDeletions;
  /** Users whose deletion is pending: their rows ingested up to it are not read. */
  deletedUsers: ReadonlyMap<string, number>;
}

export interface Page {
  after: string;
  upper: string;
  clock: PageClock;
  /** Wall-clock ms before the read began. */
  readStart: number;
  users: UserState[];
}

/** One page from ClickHouse: the users after `after`, up to the next bound, or undefined when none is left. */
export async function fetchPage(deps: RecomputeDeps, run: FieldRun, after: string, bounds: PageBounds): Promise<Page | undefined> {
  const upper = await bounds.next(after);
  if (upper === undefined) return undefined;
  return readPage(deps, run, after, upper);
}

/** The users of the range (after, upper], or only `userIds` of it. */
export async function readPage(deps: RecomputeDeps, run: FieldRun, after: string, upper: string, userIds?: readonly string[]): Promise<Page> {
  const clock = pageClock(deps.now(), run.target.agg.windowDays ?? 1);
  const distinct = run.target.source === 'treatment' && run.target.params.isDistinctInteraction === true;
  const readStart = Date.now();
  const rows = await aggregationPage(deps.warehouse, { ...readOf(run, clock), after, upper, distinct, windowStartDay: Number(clock.windowStart), userIds });
  return { after, upper, clock, readStart, users: rows.map((row) => userState(row, clock)) };
}
