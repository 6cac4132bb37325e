import type { Redis } from 'ioredis';
import type { PropertyValue } from '../ingestion/index.js';
import type { RedisKeys } from '../platform/redis/redis-keys.js';
import { createHash } from 'node:crypto';
import { UnrecoverableError } from 'bullmq';
import { RedisScript } from '../platform/redis/redis-script.js';
import { BACKOFF_CAP_MS, INGEST_JOB_OPTIONS } from '../platform/queues.js';
import { isCluster } from '../platform/redis/redis.js';

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
  /** D48: the pre-login ids merged into this profile. */
  mergedFrom?: string[];
  /** D48: the user this id was merged into (the profile is that user's). */
  mergedInto?: string;
}

/** D48: field of a merged pre-login id's profile naming the user it was merged into. */
export const ALIAS_FIELD = '@alias';
/** D48: field of a user's profile marking a pre-login id merged into it (value: merge time, ms). */
export const MERGED_PREFIX = 'merged:';
/** Alias hops followed at most (an alias of an alias: a pre-login id merged into a user later merged again). */
const MAX_ALIAS_HOPS = 4;

/*
 * D48 step (a): claims the pre-login id's profile for the user it merges into. The first claim
 * wins and later ones get its owner back; also says whether the merge is still to be finished
 * (step d sets `@done`). In the pre-login id's slot.
 *   KEYS: the pre-login id's profile   ARGV: userId, profileTtl
 *   returns { owner, 1 while the merge is not finished }
 */
const CLAIM = new RedisScript(`
local cur = redis.call('HGET', KEYS[1], '@alias')
if not cur then
  redis.call('HSET', KEYS[1], '@alias', ARGV[1])
  redis.call('EXPIRE', KEYS[1], ARGV[2])
  cur = ARGV[1]
end
return { cur, 1 - redis.call('HEXISTS', KEYS[1], '@done') }
`);

/*
 * D48 step (c): applies a pre-login id's profile (read in step b) to the user's, once: the marker
 * field \`merged:<T>\` commits with the changes, so a retry changes nothing. User properties are
 * last-write-wins by timestamp (a tie keeps the user's), daily and cap counters are added,
 * first/latest timestamps keep the min/max, distinct markers and earlier merge markers are kept
 * when the user has none; the pre-login id's insertId markers join the user's (same arrival days),
 * so an event re-sent under the user after the merge is still a duplicate. In the user's slot.
 *   KEYS: the user's profile, then the user's insert marker sets of ARGV[3] days
 *   ARGV: tempUserId, profileTtl, days, (marker-set expireAt, n, member x n) x days, now, then field/value pairs
 */
const MERGE = new RedisScript(`
local prof = KEYS[1]
local mark = 'merged:' .. ARGV[1]
if redis.call('HEXISTS', prof, mark) == 1 then return 0 end
local pos = 4
for d = 1, tonumber(ARGV[3]) do
  local expireAt, n = ARGV[pos], tonumber(ARGV[pos + 1])
  pos = pos + 2
  for s = pos, pos + n - 1, 1000 do
    redis.call('SADD', KEYS[1 + d], unpack(ARGV, s, math.min(s + 999, pos + n - 1)))
  end
  if n > 0 and redis.call('TTL', KEYS[1 + d]) < 0 then redis.call('EXPIREAT', KEYS[1 + d], expireAt) end
  pos = pos + n
end
local now = ARGV[pos]
pos = pos + 1
local src = {}
for i = pos, #ARGV, 2 do src[ARGV[i]] = ARGV[i + 1] end
for f, v in pairs(src) do
  local head = string.sub(f, 1, 3)
  if head == 'up:' then
    local tf = 'ut:' .. string.sub(f, 4)
    local t = tonumber(src[tf] or '0') or 0
    local cur = redis.call('HGET', prof, tf)
    if (not cur) or tonumber(cur) < t then redis.call('HSET', prof, f, v, tf, src[tf] or '0') end
  elseif head == 'ut:' or f == '@alias' or f == '@done' then
    -- with its up: field / not merged
  elseif head == 'dc:' or string.sub(f, 1, 4) == 'cap:' then
    redis.call('HINCRBY', prof, f, v)
  elseif head == 'ft:' then
    local cur = redis.call('HGET', prof, f)
    if (not cur) or tonumber(v) < tonumber(cur) then redis.call('HSET', prof, f, v) end
  elseif head == 'lt:' then
    local cur = redis.call('HGET', prof, f)
    if (not cur) or tonumber(v) > tonumber(cur) then redis.call('HSET', prof, f, v) end
  else
    redis.call('HSETNX', prof, f, v)
  end
end
redis.call('HSET', prof, mark, now)
redis.call('EXPIRE', prof, ARGV[2])
return 1
`);

/*
 * D48 step (d): what was merged leaves the pre-login id's profile; only the alias stays (for the
 * retention period), so delivery, ingestion and recomputes of the id reach the user's profile.
 *   KEYS: the pre-login id's profile   ARGV: profileTtl
 */
const CLEAR = new RedisScript(`
local alias = redis.call('HGET', KEYS[1], '@alias')
if not alias then return 0 end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], '@alias', alias, '@done', '1')
redis.call('EXPIRE', KEYS[1], ARGV[1])
return 1
`);

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
 * A profile holding `@alias` (its user was merged into another one, D48) is not written: the
 * script returns -2 and `applyEvents` applies the job to the alias's profile instead.
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
-- D48: the user was merged into another one: the caller applies the job there
if redis.call('HEXISTS', prof, '@alias') == 1 then return -2 end
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
    return (await this.applyEventsTo(projectId, userId, jobId, events)).applied;
  }

  /**
   * `applyEvents`, also saying whose profile the job went to: a user merged into another one
   * (D48) is an alias, and the job is applied (with its marker) to the profile it points to,
   * after `onAlias` (which stores what the caller keeps per user, e.g. its rows) has run.
   */
  async applyEventsTo(projectId: string, userId: string, jobId: string, events: ProfileEvent[], onAlias?: (userId: string) => Promise<void>): Promise<{ applied: number; userId: string }> {
    const { days, expireAt } = insertMarkerDays(this.wallClock());
    const { needsMarkers, args } = applyArgs(events, { profileTtl: this.profileTtl, markersExpireAt: expireAt });
    let user = userId;
    for (let hop = 0; ; hop++) {
      const keys = [this.keys.profile(projectId, user), this.keys.jobMarker(projectId, user, jobId)];
      if (needsMarkers) for (const day of days) keys.push(this.keys.insertMarkers(projectId, user, day));
      const res = Number(await APPLY.run(this.redis, keys, args));
      if (res !== -2) return { applied: res, userId: user };
      const next = await this.redis.hget(this.keys.profile(projectId, user), ALIAS_FIELD);
      // a cycle (two ids merged into each other by racing first events) can never be applied
      if (next === null || next === user || hop >= MAX_ALIAS_HOPS) throw new UnrecoverableError(`profile of user "${user}" is an alias that cannot be followed (a cycle of merged ids)`);
      user = next;
      // before the marker commits there: whatever the caller stores under the user (its rows)
      await onAlias?.(user);
    }
  }

  /**
   * D48: the user each unit's id stands for (its alias, followed) and whether the unit was
   * applied there, in one round trip when no id is an alias (one more per hop otherwise).
   */
  async resolveUnits(units: readonly AppliedUnit[]): Promise<{ unit: AppliedUnit; applied: boolean }[]> {
    const out = units.map((unit) => ({ unit, applied: false }));
    let todo = out.map((_, i) => i);
    for (let hop = 0; todo.length > 0; hop++) {
      const answers = await this.markersAndAliases(todo.map((i) => out[i].unit));
      const next: number[] = [];
      todo.forEach((i, j) => {
        const [applied, alias] = answers[j];
        out[i].applied = applied;
        if (!applied && alias !== null && alias !== out[i].unit.userId && hop < MAX_ALIAS_HOPS) {
          out[i].unit = { ...out[i].unit, userId: alias };
          next.push(i);
        }
      });
      todo = next;
    }
    return out;
  }

  private async markersAndAliases(units: readonly AppliedUnit[]): Promise<[boolean, string | null][]> {
    if (units.length === 0) return [];
    if (isCluster(this.redis)) {
      return Promise.all(units.map(async (u) => {
        const [n, alias] = await Promise.all([this.redis.exists(this.keys.jobMarker(u.projectId, u.userId, u.id)), this.redis.hget(this.keys.profile(u.projectId, u.userId), ALIAS_FIELD)]);
        return [n === 1, alias] as [boolean, string | null];
      }));
    }
    const p = this.redis.pipeline();
    for (const u of units) {
      p.exists(this.keys.jobMarker(u.projectId, u.userId, u.id));
      p.hget(this.keys.profile(u.projectId, u.userId), ALIAS_FIELD);
    }
    const res = (await p.exec()) ?? [];
    for (const [err] of res) if (err) throw err;
    return units.map((_, i) => [res[2 * i][1] === 1, (res[2 * i + 1][1] as string | null) ?? null]);
  }

  /** D48: the user an id stands for: itself, or the user it was merged into (followed). */
  async canonicalUser(projectId: string, userId: string): Promise<string> {
    let user = userId;
    for (let hop = 0; hop < MAX_ALIAS_HOPS; hop++) {
      const next = await this.redis.hget(this.keys.profile(projectId, user), ALIAS_FIELD);
      if (next === null || next === user) break;
      user = next;
    }
    return user;
  }

  /** D48 (a): claims `tempUserId` for `userId`; returns the owner (the first claim's user) and whether the merge is still to be finished. */
  async claimAlias(projectId: string, tempUserId: string, userId: string): Promise<{ owner: string; pending: boolean }> {
    const [owner, left] = (await CLAIM.run(this.redis, [this.keys.profile(projectId, tempUserId)], [userId, this.profileTtl])) as [string, number];
    return { owner, pending: Number(left) > 0 };
  }

  /** D48 (b)+(c): reads the pre-login id's profile and insert markers and applies them to the user's profile once. True: applied now. */
  async mergeProfile(projectId: string, tempUserId: string, userId: string): Promise<boolean> {
    const { days, expireAt } = insertMarkerDays(this.wallClock());
    const [raw, ...sets] = await Promise.all([
      this.redis.hgetall(this.keys.profile(projectId, tempUserId)),
      ...days.map((d) => this.redis.smembers(this.keys.insertMarkers(projectId, tempUserId, d))),
    ]);
    const args: string[] = [tempUserId, String(this.profileTtl), String(days.length)];
    days.forEach((_, i) => {
      // a day's set expires 8 days after that day ends, like the user's own (today's: expireAt)
      args.push(String(expireAt - i * 86_400), String(sets[i].length), ...sets[i]);
    });
    args.push(String(this.wallClock()));
    for (const [f, v] of Object.entries(raw)) if (f !== ALIAS_FIELD) args.push(f, v);
    const keys = [this.keys.profile(projectId, userId), ...days.map((d) => this.keys.insertMarkers(projectId, userId, d))];
    return Number(await MERGE.run(this.redis, keys, args)) === 1;
  }

  /** D48 (d): leaves only the alias in the pre-login id's profile. */
  async clearMerged(projectId: string, tempUserId: string): Promise<void> {
    await CLEAR.run(this.redis, [this.keys.profile(projectId, tempUserId)], [this.profileTtl]);
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

  /** The user's profile; for an id merged into another user (D48), that user's (one more read, only then). */
  async get(projectId: string, userId: string): Promise<StoredProfile> {
    let raw = await this.redis.hgetall(this.keys.profile(projectId, userId));
    let mergedInto: string | undefined;
    for (let hop = 0; raw[ALIAS_FIELD] !== undefined && hop < MAX_ALIAS_HOPS; hop++) {
      mergedInto = raw[ALIAS_FIELD];
      raw = await this.redis.hgetall(this.keys.profile(projectId, mergedInto));
    }
    const profile = parseProfile(raw);
    if (mergedInto !== undefined) profile.mergedInto = mergedInto;
    return profile;
  }
}

export function parseProfile(raw: Record<string, string>): StoredProfile {
  const userProperties: Record<string, PropertyValue> = {};
  const fields: Record<string, string> = {};
  let mergedFrom: string[] | undefined;
  for (const [k, v] of Object.entries(raw)) {
    if (k.startsWith('up:')) userProperties[k.slice(3)] = JSON.parse(v) as PropertyValue;
    else if (k.startsWith(MERGED_PREFIX)) (mergedFrom ??= []).push(k.slice(MERGED_PREFIX.length));
    else if (!k.startsWith('ut:') && k !== ALIAS_FIELD && k !== '@done') fields[k] = v;
  }
  return mergedFrom ? { userProperties, fields, mergedFrom: mergedFrom.sort() } : { userProperties, fields };
}
