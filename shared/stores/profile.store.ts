import type { Redis } from 'ioredis';
import type { PropertyValue } from '../domain/types.js';
import type { RedisKeys } from '../redis-keys.js';
import { RedisScript } from '../clients/redis-script.js';

/** D31: de-duplication markers live at least 7 days in the fast path (ClickHouse keeps them for ever). */
export const DEDUP_TTL_SECONDS = 8 * 24 * 3600;

/**
 * A counter or extreme kept in the user's profile hash, applied with the event that causes it:
 * `inc` adds, `min`/`max` keep the extreme, `incnew` adds only the first time `marker` is seen
 * (distinct counts), `ginc` adds to a project-wide hash. `ginc` names a key outside the user's
 * hash slot: fine on one Redis, and the reason the service runs on a single primary, not a Redis Cluster.
 */
export type ProfileOp =
  | ['inc', string, number]
  | ['min', string, number]
  | ['max', string, number]
  | ['incnew', string, string, number]
  /** HINCRBY on another hash (project-wide statistics such as the ranking policy's counters). */
  | ['ginc', string, string, number];

export interface ProfileEvent {
  /** Cross-job de-duplication (insertId); absent: the event is only protected by the job marker. */
  dedupId?: string;
  /** Last-write-wins timestamp (ms) of the user properties it carries. */
  ts: number;
  userProperties?: Record<string, PropertyValue>;
  ops?: ProfileOp[];
}

export interface StoredProfile {
  userProperties: Record<string, PropertyValue>;
  /** Raw numeric fields (aggregation state), by field name. */
  fields: Record<string, string>;
}

/*
 * One atomic script per job and user: the job marker, the per-insertId markers, the user-property
 * writes and the aggregate updates commit together or not at all. A retry of the job after a
 * crash at any point therefore has exactly the effect of one delivery (D34): either the script
 * ran (the job marker is there, the retry changes nothing) or it did not (the retry applies it).
 *
 * Arguments are positional strings, not JSON (no cjson tables per event), and identical ops of
 * a job's events are grouped: a job of 100 events counted in one daily field costs one HINCRBY
 * of the number of new events, not 100. An op applies as many times as the new (not
 * de-duplicated) events of its group, which is what applying it event by event would do:
 * `inc`/`ginc` add per event, `min`/`max` are idempotent, and an `incnew` repeated with the same
 * marker counts once either way.
 *   ARGV: dedupPrefix, ttl, n, dedupId x n ('' = none),
 *         groups, then per group: kind, a, b, c, k, event index x k (1-based),
 *         props, then per property: event index, ts, name, JSON value
 */
const APPLY = new RedisScript(`
local prof = KEYS[1]
local jobKey = KEYS[2]
if redis.call('EXISTS', jobKey) == 1 then return -1 end
local prefix = ARGV[1]
local ttl = ARGV[2]
local n = tonumber(ARGV[3])
local fresh = {}
local applied = 0
for i = 1, n do
  local d = ARGV[3 + i]
  if d == '' or redis.call('SET', prefix .. d, '1', 'NX', 'EX', ttl) then
    fresh[i] = true
    applied = applied + 1
  end
end
local pos = 4 + n
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
    elseif kind == 'ginc' then
      redis.call('HINCRBY', a, b, count == 1 and c or tonumber(c) * count)
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
redis.call('SET', jobKey, '1', 'EX', ttl)
return applied
`);

/** The script's positional arguments for a job's events (see APPLY). */
export function applyArgs(dedupPrefix: string, events: readonly ProfileEvent[]): string[] {
  const args = [dedupPrefix, String(DEDUP_TTL_SECONDS), String(events.length)];
  const groups = new Map<string, { op: ProfileOp; events: number[] }>();
  const props: string[] = [];
  for (let i = 0; i < events.length; i++) {
    const e = events[i];
    args.push(e.dedupId !== undefined ? `i:${e.dedupId}` : '');
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
  args.push(String(groups.size));
  for (const { op, events: idx } of groups.values()) {
    args.push(op[0], String(op[1]), String(op[2]), op[3] === undefined ? '' : String(op[3]), String(idx.length));
    for (const i of idx) args.push(String(i));
  }
  args.push(String(props.length / 4));
  for (const x of props) args.push(x);
  return args;
}

export class ProfileStore {
  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
  ) {}

  /**
   * Applies the events of one job to one user's profile exactly once. Returns the number of
   * events applied (duplicates by insertId are skipped), or -1 when the job was applied before.
   */
  async applyEvents(projectId: string, userId: string, jobId: string, events: ProfileEvent[]): Promise<number> {
    const res = await APPLY.run(
      this.redis,
      [this.keys.profile(projectId, userId), this.keys.dedup(projectId, userId, `j:${jobId}`)],
      applyArgs(this.keys.dedup(projectId, userId, ''), events),
    );
    return Number(res);
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
