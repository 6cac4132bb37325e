-- Identity merge, step (c): applies a pre-login id's profile (read in step (b)) to the user's,
-- once: the merged marker field commits with the changes, so a retry changes nothing. User
-- properties are last-write-wins by timestamp (a tie keeps the user's); other fields merge by
-- the rule of their prefix (sum, min or max), and a field of no rule is kept when the user has
-- none. The pre-login id's insert markers join the user's (same arrival days), so an event
-- re-sent under the user after the merge is still a duplicate. The merge leaves the user's
-- in-flight hash (marked before the pre-login rows were copied under the user) and stamps it
-- `@applied` in the same step, as an ingest job does: a recompute reading meanwhile tells it
-- (workers/aggregation/recompute.ts). In the user's slot.
--   KEYS: the user's profile, its in-flight hash, then its insert marker sets of `days` days
--   ARGV: tempUserId, profile TTL (s), now (ms),
--         merged-marker prefix, user-property prefix, its timestamp prefix, alias field, done field,
--         the merge's in-flight field, the hash's stamp field, its TTL (ms),
--         r, (prefix, rule) x r,
--         days, (marker-set expireAt, n, member x n) x days,
--         then the pre-login profile's field/value pairs
--   returns 1 when applied now, 0 when applied before
--- @include "keep-extreme"
local prof = KEYS[1]
local inflight = KEYS[2]
local mark = ARGV[4] .. ARGV[1]
-- the merge is done with the user whatever follows (applied now or before); atomic, so no
-- reader sees the mark cleared before the counters moved
redis.call('HDEL', inflight, ARGV[9])
if redis.call('HEXISTS', prof, mark) == 1 then return 0 end
local upPrefix, utPrefix, aliasField, doneField = ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local rules = {}
local pos = 13
for r = 1, tonumber(ARGV[12]) do
  rules[r] = { ARGV[pos], ARGV[pos + 1] }
  pos = pos + 2
end
local days = tonumber(ARGV[pos])
pos = pos + 1
for d = 1, days do
  local expireAt, n = ARGV[pos], tonumber(ARGV[pos + 1])
  pos = pos + 2
  for s = pos, pos + n - 1, 1000 do
    redis.call('SADD', KEYS[2 + d], unpack(ARGV, s, math.min(s + 999, pos + n - 1)))
  end
  if n > 0 and redis.call('TTL', KEYS[2 + d]) < 0 then redis.call('EXPIREAT', KEYS[2 + d], expireAt) end
  pos = pos + n
end
local src = {}
for i = pos, #ARGV, 2 do src[ARGV[i]] = ARGV[i + 1] end
local function startsWith(f, prefix) return string.sub(f, 1, #prefix) == prefix end
local function ruleOf(f)
  for _, r in ipairs(rules) do
    if startsWith(f, r[1]) then return r[2] end
  end
  return nil
end
for f, v in pairs(src) do
  if startsWith(f, upPrefix) then
    local tf = utPrefix .. string.sub(f, #upPrefix + 1)
    local t = tonumber(src[tf] or '0') or 0
    local cur = redis.call('HGET', prof, tf)
    if (not cur) or tonumber(cur) < t then redis.call('HSET', prof, f, v, tf, src[tf] or '0') end
  elseif startsWith(f, utPrefix) or f == aliasField or f == doneField then
    -- with its user property / not merged
  else
    local rule = ruleOf(f)
    if rule == 'sum' then
      redis.call('HINCRBY', prof, f, v)
    elseif rule == 'min' or rule == 'max' then
      keepExtreme(prof, f, v, rule)
    else
      redis.call('HSETNX', prof, f, v)
    end
  end
end
redis.call('HSET', prof, mark, ARGV[3])
redis.call('EXPIRE', prof, ARGV[2])
redis.call('HSET', inflight, ARGV[10], ARGV[3])
if redis.call('PTTL', inflight) < 0 then redis.call('PEXPIRE', inflight, ARGV[11]) end
return 1
