import type { Redis } from 'ioredis';
import type { PropertyValue } from '../domain/types.js';
import type { RedisKeys } from '../redis-keys.js';

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
 */
const APPLY = `
local prof = KEYS[1]
local jobKey = KEYS[2]
local dedupPrefix = ARGV[1]
local ttl = tonumber(ARGV[2])
if redis.call('EXISTS', jobKey) == 1 then return -1 end
local evs = cjson.decode(ARGV[3])
local applied = 0
for _, e in ipairs(evs) do
  local fresh = true
  if e.d then
    fresh = redis.call('SET', dedupPrefix .. e.d, '1', 'NX', 'EX', ttl) and true or false
  end
  if fresh then
    applied = applied + 1
    if e.u then
      for name, val in pairs(e.u) do
        local cur = redis.call('HGET', prof, 'ut:' .. name)
        if (not cur) or tonumber(cur) <= e.t then
          redis.call('HSET', prof, 'up:' .. name, val, 'ut:' .. name, e.t)
        end
      end
    end
    if e.o then
      for _, op in ipairs(e.o) do
        local kind = op[1]
        if kind == 'inc' then
          redis.call('HINCRBY', prof, op[2], op[3])
        elseif kind == 'min' then
          local cur = redis.call('HGET', prof, op[2])
          if (not cur) or tonumber(op[3]) < tonumber(cur) then redis.call('HSET', prof, op[2], op[3]) end
        elseif kind == 'max' then
          local cur = redis.call('HGET', prof, op[2])
          if (not cur) or tonumber(op[3]) > tonumber(cur) then redis.call('HSET', prof, op[2], op[3]) end
        elseif kind == 'ginc' then
          redis.call('HINCRBY', op[2], op[3], op[4])
        elseif kind == 'incnew' then
          if redis.call('HSETNX', prof, op[2], '1') == 1 then redis.call('HINCRBY', prof, op[3], op[4]) end
        end
      end
    end
  end
end
redis.call('SET', jobKey, '1', 'EX', ttl)
return applied
`;

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
    const payload = events.map((e) => {
      const o: Record<string, unknown> = { t: e.ts };
      if (e.dedupId !== undefined) o.d = `i:${e.dedupId}`;
      if (e.userProperties && Object.keys(e.userProperties).length > 0) {
        const u: Record<string, string> = {};
        for (const [k, v] of Object.entries(e.userProperties)) u[k] = JSON.stringify(v);
        o.u = u;
      }
      if (e.ops && e.ops.length > 0) o.o = e.ops;
      return o;
    });
    const res = await this.redis.eval(
      APPLY,
      2,
      this.keys.profile(projectId, userId),
      this.keys.dedup(projectId, userId, `j:${jobId}`),
      this.keys.dedup(projectId, userId, ''),
      String(DEDUP_TTL_SECONDS),
      JSON.stringify(payload),
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
