import type { Redis } from 'ioredis';
import type { RedisKeys } from '../platform/redis/redis-keys.js';
import { RedisScript } from '../platform/redis/redis-script.js';

const DAY_MS = 86_400_000;

/** A target-action event converts a view when it happens 0 to 7 days after it. */
export const CONVERSION_WINDOW_MS = 7 * DAY_MS;

/**
 * Views are kept a day longer than the window (events may arrive late): the hash expires this
 * long after the user's last view, and a new view forgets the views this much older than itself.
 */
export const VIEW_KEPT_MS = CONVERSION_WINDOW_MS + DAY_MS;

/** One view of a treatment on a surface that a target-action event converted. */
export interface ConversionClaim {
  treatmentId: string;
  surface: string;
  /** the converted view's time (ms): with the user, the identity of the conversion */
  viewMs: number;
}

/*
 * The user's last view of each (treatment, surface), in the user's slot: field `v:<T>:<S>` = view
 * time (ms). A newer view replaces it (the latest view counts) and drops the views older than
 * VIEW_KEPT_MS before it, with their finished claims, so the hash holds the arms the user saw
 * in about a week. Repeating the script changes nothing.
 *   KEYS: the hash   ARGV: '<T>:<S>', view ms, kept ms, TTL s
 */
const RECORD_VIEW = new RedisScript(`
local f = 'v:' .. ARGV[1]
local t = tonumber(ARGV[2])
local cur = tonumber(redis.call('HGET', KEYS[1], f) or '-1')
if cur < t then
  redis.call('HSET', KEYS[1], f, ARGV[2])
  local oldest = t - tonumber(ARGV[3])
  local all = redis.call('HGETALL', KEYS[1])
  for i = 1, #all, 2 do
    if string.sub(all[i], 1, 2) == 'v:' and tonumber(all[i + 1]) < oldest then
      local c = 'c:' .. string.sub(all[i], 3)
      redis.call('HDEL', KEYS[1], all[i])
      local claim = redis.call('HGET', KEYS[1], c)
      if claim and string.sub(claim, -2) == ':d' then redis.call('HDEL', KEYS[1], c) end
    end
  end
end
redis.call('EXPIRE', KEYS[1], ARGV[4])
return 1
`);

/*
 * Claims the conversions of target-action events: a view of (T, S) is converted when one of T's
 * event times is 0 to window ms after it. A view converts once: the claim `c:<T>:<S>` =
 * '<view ms>:p' (pending: its ranking action may not be counted yet) commits with the check, and
 * becomes ':d' once counted. Pending claims of the given treatments are returned again (a retry,
 * or another event, finishes them; the ranking script's marker counts each once); while one is
 * pending on an arm, that arm claims nothing new.
 *   KEYS: the hash   ARGV: window ms, then per treatment: id, n, event ms x n
 *   returns { '<T>:<S>', view ms, ... }
 */
const CLAIM = new RedisScript(`
local window = tonumber(ARGV[1])
local times = {}
local pos = 2
while pos <= #ARGV do
  local n = tonumber(ARGV[pos + 1])
  local list = {}
  for i = 1, n do list[i] = tonumber(ARGV[pos + 1 + i]) end
  times[ARGV[pos]] = list
  pos = pos + 2 + n
end
local all = redis.call('HGETALL', KEYS[1])
local h = {}
for i = 1, #all, 2 do h[all[i]] = all[i + 1] end
local out = {}
for k, v in pairs(h) do
  local arm = string.sub(k, 3)
  local list = times[string.match(arm, '^([^:]*):')]
  if list then
    local kind = string.sub(k, 1, 2)
    if kind == 'c:' and string.sub(v, -2) == ':p' then
      out[#out + 1] = arm
      out[#out + 1] = string.sub(v, 1, -3)
    elseif kind == 'v:' then
      local claim = h['c:' .. arm]
      if not claim or (string.sub(claim, -2) == ':d' and string.sub(claim, 1, -3) ~= v) then
        local view = tonumber(v)
        for _, ts in ipairs(list) do
          if ts >= view and ts - view <= window then
            redis.call('HSET', KEYS[1], 'c:' .. arm, v .. ':p')
            out[#out + 1] = arm
            out[#out + 1] = v
            break
          end
        end
      end
    end
  end
end
return out
`);

/*
 * Marks claims counted (their ranking actions are in the ranking hash).
 *   KEYS: the hash   ARGV: ('<T>:<S>', view ms) pairs
 */
const FINISH = new RedisScript(`
for i = 1, #ARGV, 2 do
  local c = 'c:' .. ARGV[i]
  if redis.call('HGET', KEYS[1], c) == ARGV[i + 1] .. ':p' then redis.call('HSET', KEYS[1], c, ARGV[i + 1] .. ':d') end
end
return 1
`);

/**
 * Per user, the last views of treatments that have a target action, and which of them a
 * target-action event converted, so each view is converted (and counted as a ranking action) at
 * most once, however often the event is sent, retried or repeated.
 */
export class TargetActionViewStore {
  private readonly ttlSeconds: number;

  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    opts: { retentionDays?: number } = {},
  ) {
    // a user's data never outlives the retention period, even when it is shorter than the window
    this.ttlSeconds = Math.min(VIEW_KEPT_MS / 1000, (opts.retentionDays ?? 400) * 86_400);
  }

  async recordView(projectId: string, userId: string, treatmentId: string, surface: string, viewMs: number): Promise<void> {
    await RECORD_VIEW.run(this.redis, [this.keys.targetActionViews(projectId, userId)], [`${treatmentId}:${surface}`, Math.floor(viewMs), VIEW_KEPT_MS, this.ttlSeconds]);
  }

  /** The conversions of these event times (ms) per treatment: new claims and pending ones. */
  async claim(projectId: string, userId: string, eventTimes: ReadonlyMap<string, readonly number[]>): Promise<ConversionClaim[]> {
    if (eventTimes.size === 0) return [];
    const args: (string | number)[] = [CONVERSION_WINDOW_MS];
    for (const [treatmentId, times] of eventTimes) args.push(treatmentId, times.length, ...times.map(Math.floor));
    const raw = (await CLAIM.run(this.redis, [this.keys.targetActionViews(projectId, userId)], args)) as string[];
    const out: ConversionClaim[] = [];
    for (let i = 0; i < raw.length; i += 2) {
      // treatment ids are digits: the first `:` ends it (surface names may hold `:`)
      const cut = raw[i].indexOf(':');
      out.push({ treatmentId: raw[i].slice(0, cut), surface: raw[i].slice(cut + 1), viewMs: Number(raw[i + 1]) });
    }
    return out;
  }

  async finish(projectId: string, userId: string, claims: readonly ConversionClaim[]): Promise<void> {
    if (claims.length === 0) return;
    const args = claims.flatMap((c) => [`${c.treatmentId}:${c.surface}`, String(c.viewMs)]);
    await FINISH.run(this.redis, [this.keys.targetActionViews(projectId, userId)], args);
  }
}
