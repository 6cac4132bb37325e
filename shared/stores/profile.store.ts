import type { Redis } from 'ioredis';
import type { PropertyValue } from '../domain/types.js';
import type { RedisKeys } from '../redis-keys.js';
import { createHash } from 'node:crypto';
import { RedisScript } from '../clients/redis-script.js';
import { BACKOFF_CAP_MS, INGEST_JOB_OPTIONS } from '../queues/queues.js';
import { isCluster } from '../clients/redis.js';

/**
 * D31: an insertId is de-duplicated for at least 7 days, whatever timestamp its retries carry.
 * Markers are kept per user and per UTC day of *arrival* (one set a user a day, however many
 * event days a request names); a day's set expires 8 days after that day ends, and a new event is
 * looked up in the sets of the last INSERT_MARKER_DAYS days. So a marker is found for 8 to 9 days
 * after it was stored, and each user costs at most 9 marker sets.
 */
export const INSERT_MARKER_TTL_SECONDS = 8 * 24 * 3600;
export const INSERT_MARKER_DAYS = 9;

/**
 * How long a job marker must outlive its job's first attempt: as long as the job can still be
 * retried (every attempt at the capped backoff) plus the time a failed job is kept (an operator
 * may retry it from the dashboard). When their job completes, markers are cut to a short grace
 * (`expireJobMarkers`); this TTL only bounds the ones whose job failed or whose cut was lost.
 */
export const JOB_MARKER_TTL_SECONDS = Math.ceil(((INGEST_JOB_OPTIONS.attempts ?? 1) * BACKOFF_CAP_MS) / 1000) + removeOnFailAgeSeconds();

function removeOnFailAgeSeconds(): number {
  const r = INGEST_JOB_OPTIONS.removeOnFail;
  return typeof r === 'object' && 'age' in r && r.age !== undefined ? r.age : 30 * 24 * 3600;
}

const DAY_MS = 86_400_000;

/**
 * The compact insertId marker: the first 8 bytes of SHA-1 of the de-duplication id as a signed
 * 64-bit decimal, so a day's set is a Redis intset (8 bytes per marker up to 512 markers a user
 * a day, `set-max-intset-entries`). Collisions within one user's day: about n²/2^65.
 */
export function insertMarker(dedupId: string): string {
  return createHash('sha1').update(dedupId).digest().readBigInt64BE(0).toString();
}

/**
 * The arrival days whose marker sets a job consults, newest (today, where new markers go) first,
 * as UTC `YYYY-MM-DD`, and when today's set expires (epoch s).
 */
export function insertMarkerDays(nowMs: number): { days: string[]; expireAt: number } {
  const today = Math.floor(nowMs / DAY_MS) * DAY_MS;
  const days = Array.from({ length: INSERT_MARKER_DAYS }, (_, i) => new Date(today - i * DAY_MS).toISOString().slice(0, 10));
  return { days, expireAt: (today + DAY_MS) / 1000 + INSERT_MARKER_TTL_SECONDS };
}

/**
 * A counter or extreme kept in the user's profile hash, applied with the event that causes it:
 * `inc` adds, `min`/`max` keep the extreme, `incnew` adds only the first time `marker` is seen
 * (distinct counts). Every op stays inside the user's hash (one slot); project-wide counters
 * (ranking) have their own script (`RankingCounterStore`).
 */
export type ProfileOp =
  | ['inc', string, number]
  | ['min', string, number]
  | ['max', string, number]
  | ['incnew', string, string, number];

export interface ProfileEvent {
  /**
   * Cross-job de-duplication id (`i:<insertId>`, or `m:<messageId>:<index>` for a Pub/Sub event
   * without one); absent: the event is only protected by the job marker.
   */
  dedupId?: string;
  /** Event time (ms): last-write-wins timestamp of its user properties. */
  ts: number;
  userProperties?: Record<string, PropertyValue>;
  ops?: ProfileOp[];
}

export interface StoredProfile {
  userProperties: Record<string, PropertyValue>;
  /** Raw numeric fields (aggregation state), by field name. */
  fields: Record<string, string>;
}

export interface ProfileStoreOptions {
  /** An untouched profile expires after this many days (D44 RETENTION_DAYS). @defaultValue 400 */
  retentionDays?: number;
  /** Wall clock (ms) naming the arrival day of markers; Redis expires them by its own clock. @defaultValue Date.now */
  wallClock?: () => number;
}

/*
 * One atomic script per job and user: the job marker, the per-insertId markers, the user-property
 * writes, the aggregate updates and the profile's TTL commit together or not at all. A retry of
 * the job after a crash at any point therefore has exactly the effect of one delivery (D34):
 * either the script ran (the job marker is there, the retry changes nothing) or it did not (the
 * retry applies it). Every key is in KEYS and carries the user's hash tag.
 *
 * Arguments are positional strings, not JSON (no cjson tables per event), and identical ops of
 * a job's events are grouped: a job of 100 events counted in one daily field costs one HINCRBY
 * of the number of new events, not 100. An op applies as many times as the new (not
 * de-duplicated) events of its group, which is what applying it event by event would do:
 * `inc` adds per event, `min`/`max` are idempotent, and an `incnew` repeated with the same
 * marker counts once either way.
 *   KEYS: profile, job marker, then (when an event has a de-duplication id) the marker sets of
 *         the last INSERT_MARKER_DAYS arrival days, today's first
 *   ARGV: jobTtl, profileTtl, today's set expireAt, n, marker x n ('' = none),
 *         groups, then per group: kind, a, b, c, k, event index x k (1-based),
 *         props, then per property: event index, ts, name, JSON value
 */
const APPLY = new RedisScript(`
local prof = KEYS[1]
local jobKey = KEYS[2]
if redis.call('EXISTS', jobKey) == 1 then return -1 end
local n = tonumber(ARGV[4])
local pos = 5
local older = {}
for j = 4, #KEYS do
  if redis.call('EXISTS', KEYS[j]) == 1 then older[#older + 1] = KEYS[j] end
end
local fresh = {}
local added = false
local applied = 0
for i = 1, n do
  local m = ARGV[pos]
  pos = pos + 1
  local new = true
  if m ~= '' then
    for _, key in ipairs(older) do
      if redis.call('SISMEMBER', key, m) == 1 then new = false break end
    end
    if new then
      new = redis.call('SADD', KEYS[3], m) == 1
      added = added or new
    end
  end
  if new then
    fresh[i] = true
    applied = applied + 1
  end
end
if added then redis.call('EXPIREAT', KEYS[3], ARGV[3]) end
local groups = tonumber(ARGV[pos])
pos = pos + 1
for g = 1, groups do
  local kind, a, b, c = ARGV[pos], ARGV[pos + 1], ARGV[pos + 2], ARGV[pos + 3]
  local k = tonumber(ARGV[pos + 4])
  local count = 0
  for j = 1, k do
    if fresh[tonumber(ARGV[pos + 4 + j])] then count = count + 1 end
  end
  pos = pos + 5 + k
  if count > 0 then
    if kind == 'inc' then
      redis.call('HINCRBY', prof, a, count == 1 and b or tonumber(b) * count)
    elseif kind == 'min' then
      local cur = redis.call('HGET', prof, a)
      if (not cur) or tonumber(b) < tonumber(cur) then redis.call('HSET', prof, a, b) end
    elseif kind == 'max' then
      local cur = redis.call('HGET', prof, a)
      if (not cur) or tonumber(b) > tonumber(cur) then redis.call('HSET', prof, a, b) end
    elseif kind == 'incnew' then
      if redis.call('HSETNX', prof, a, '1') == 1 then redis.call('HINCRBY', prof, b, c) end
    end
  end
end
local props = tonumber(ARGV[pos])
pos = pos + 1
for p = 1, props do
  local i, t, name, val = tonumber(ARGV[pos]), ARGV[pos + 1], ARGV[pos + 2], ARGV[pos + 3]
  pos = pos + 4
  if fresh[i] then
    local cur = redis.call('HGET', prof, 'ut:' .. name)
    if (not cur) or tonumber(cur) <= tonumber(t) then
      redis.call('HSET', prof, 'up:' .. name, val, 'ut:' .. name, t)
    end
  end
end
redis.call('EXPIRE', prof, ARGV[2])
redis.call('SET', jobKey, '1', 'EX', ARGV[1])
return applied
`);

/** The script's positional arguments (see APPLY) and whether it needs the marker sets in KEYS. */
export function applyArgs(events: readonly ProfileEvent[], opts: { profileTtl: number; markersExpireAt: number }): { needsMarkers: boolean; args: string[] } {
  const markers: string[] = [];
  const groups = new Map<string, { op: ProfileOp; events: number[] }>();
  const props: string[] = [];
  let needsMarkers = false;
  for (let i = 0; i < events.length; i++) {
    const e = events[i];
    if (e.dedupId === undefined) markers.push('');
    else {
      needsMarkers = true;
      markers.push(insertMarker(e.dedupId));
    }
    if (e.ops) {
      for (const op of e.ops) {
        const key = op.join('\u0000');
        const g = groups.get(key);
        if (g) g.events.push(i + 1);
        else groups.set(key, { op, events: [i + 1] });
      }
    }
    if (e.userProperties) {
      for (const name in e.userProperties) props.push(String(i + 1), String(e.ts), name, JSON.stringify(e.userProperties[name]));
    }
  }
  const args = [String(JOB_MARKER_TTL_SECONDS), String(opts.profileTtl), String(opts.markersExpireAt), String(events.length)];
  for (const x of markers) args.push(x);
  args.push(String(groups.size));
  for (const { op, events: idx } of groups.values()) {
    args.push(op[0], String(op[1]), String(op[2]), op[3] === undefined ? '' : String(op[3]), String(idx.length));
    for (const i of idx) args.push(String(i));
  }
  args.push(String(props.length / 4));
  for (const x of props) args.push(x);
  return { needsMarkers, args };
}

/** A job (or one request of a merged job) as applied to one user: the identity of its marker. */
export interface AppliedUnit {
  projectId: string;
  userId: string;
  id: string;
}

export class ProfileStore {
  private readonly profileTtl: number;
  private readonly wallClock: () => number;

  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    opts: ProfileStoreOptions = {},
  ) {
    this.profileTtl = (opts.retentionDays ?? 400) * 86_400;
    this.wallClock = opts.wallClock ?? Date.now;
  }

  /**
   * Applies the events of one job to one user's profile exactly once. Returns the number of
   * events applied (duplicates by insertId are skipped), or -1 when the job was applied before.
   */
  async applyEvents(projectId: string, userId: string, jobId: string, events: ProfileEvent[]): Promise<number> {
    const { days, expireAt } = insertMarkerDays(this.wallClock());
    const { needsMarkers, args } = applyArgs(events, { profileTtl: this.profileTtl, markersExpireAt: expireAt });
    const keys = [this.keys.profile(projectId, userId), this.keys.jobMarker(projectId, userId, jobId)];
    if (needsMarkers) for (const day of days) keys.push(this.keys.insertMarkers(projectId, userId, day));
    const res = await APPLY.run(this.redis, keys, args);
    return Number(res);
  }

  /**
   * Which of these units were applied already (their marker exists), in one round trip: a retried
   * job skips the ClickHouse insert of those (their rows were stored before their script ran).
   */
  async applied(units: readonly AppliedUnit[]): Promise<boolean[]> {
    if (units.length === 0) return [];
    // On a cluster the markers are in their users' slots (on several nodes): one command each,
    // which ioredis sends to the right node (a Cluster pipeline must stay on one node).
    if (isCluster(this.redis)) return Promise.all(units.map(async (u) => (await this.redis.exists(this.keys.jobMarker(u.projectId, u.userId, u.id))) === 1));
    const p = this.redis.pipeline();
    for (const u of units) p.exists(this.keys.jobMarker(u.projectId, u.userId, u.id));
    const res = (await p.exec()) ?? [];
    return res.map(([err, n]) => {
      if (err) throw err;
      return n === 1;
    });
  }

  /**
   * Shortens the markers of completed units to `graceSeconds` (best effort: their TTL is the
   * backstop). Not an immediate DEL: a job whose lock was lost (a worker blocked past its lock)
   * may still be running its first execution after another worker completed the job, and its
   * script must still find the marker; the grace covers that overlap.
   */
  async expireJobMarkers(units: readonly AppliedUnit[], extraKeys: readonly string[], graceSeconds: number): Promise<void> {
    if (units.length === 0 && extraKeys.length === 0) return;
    if (isCluster(this.redis)) {
      const keys = [...units.map((u) => this.keys.jobMarker(u.projectId, u.userId, u.id)), ...extraKeys];
      await Promise.all(keys.map((k) => this.redis.expire(k, graceSeconds)));
      return;
    }
    const p = this.redis.pipeline();
    // One command per key: each key is in its own user's slot (Redis Cluster forbids multi-slot commands).
    for (const u of units) p.expire(this.keys.jobMarker(u.projectId, u.userId, u.id), graceSeconds);
    for (const k of extraKeys) p.expire(k, graceSeconds);
    await p.exec();
  }

  async get(projectId: string, userId: string): Promise<StoredProfile> {
    const raw = await this.redis.hgetall(this.keys.profile(projectId, userId));
    return parseProfile(raw);
  }
}

export function parseProfile(raw: Record<string, string>): StoredProfile {
  const userProperties: Record<string, PropertyValue> = {};
  const fields: Record<string, string> = {};
  for (const [k, v] of Object.entries(raw)) {
    if (k.startsWith('up:')) userProperties[k.slice(3)] = JSON.parse(v) as PropertyValue;
    else if (!k.startsWith('ut:')) fields[k] = v;
  }
  return { userProperties, fields };
}
