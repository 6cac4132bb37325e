-- One batch of users of one field, as recomputed from the warehouse (see
-- workers/aggregation/recompute.ts for the rules: finished days are replaced, today and later
-- keep the larger count, distinct markers get their first-seen day, first/latest keep the extreme).
-- A count is left alone when the user has an ingest job between its rows and its profile update
-- (the read may or may not hold those rows, and the job adds them after), or a job that updated
-- the profile since the read began (whose rows the read may have missed): the user is returned,
-- and the caller reads it again once its jobs are done. First/latest keep the extreme either way.
--   KEYS: per user, its profile and its in-flight hash (RedisKeys.ingestInFlight)
--   ARGV[1]: the spec as JSON: kind ('dc', 'ft' or 'lt'), dailyCountPrefix and
--            distinctMarkerPrefix (field names of the field's daily counts and distinct
--            markers), field (the first/latest timestamp field), today, rangeStart, scan, ttl,
--            appliedField (the in-flight hash's stamp), readStart (epoch ms: a stamp from then
--            on defers the user), markedSince (epoch ms: older in-flight marks have lapsed)
--   then per user (in KEYS order): 'dc': n, (day, count) x n, m, (trackingId, day) x m;
--   'ft'/'lt': ms
--   returns the positions (1-based) of the users left for a second read
--- @include "keep-extreme"
local spec = cjson.decode(ARGV[1])
local dcPrefix = spec.dailyCountPrefix
local dmPrefix = spec.distinctMarkerPrefix
-- one HSET / HDEL per user with many fields, in chunks (unpack's stack limit), not one call per field
local function multi(cmd, prof, list)
  for s = 1, #list, 1000 do
    redis.call(cmd, prof, unpack(list, s, math.min(s + 999, #list)))
  end
end
-- whether an ingest job of the user is in flight, or updated the profile since the read began
local function busy(inflight)
  local all = redis.call('HGETALL', inflight)
  for j = 1, #all, 2 do
    local t = tonumber(all[j + 1]) or 0
    if all[j] == spec.appliedField then
      if t >= spec.readStart then return true end
    elseif t >= spec.markedSince then
      return true
    end
  end
  return false
end
local deferred = {}
local pos = 2
for u = 1, #KEYS / 2 do
  local prof = KEYS[2 * u - 1]
  local skip = spec.kind == 'dc' and busy(KEYS[2 * u])
  if skip then
    deferred[#deferred + 1] = u
    -- the user's arguments are passed over
    local nDays = tonumber(ARGV[pos])
    pos = pos + 1 + 2 * nDays
    local nMarks = tonumber(ARGV[pos])
    pos = pos + 1 + 2 * nMarks
  elseif spec.kind == 'dc' then
    if spec.scan then
      local stale = {}
      local all = redis.call('HGETALL', prof)
      for j = 1, #all, 2 do
        local name, val = all[j], all[j + 1]
        if string.sub(name, 1, #dcPrefix) == dcPrefix then
          if string.sub(name, #dcPrefix + 1) < spec.today then stale[#stale + 1] = name end
        elseif string.sub(name, 1, #dmPrefix) == dmPrefix then
          if #val == 8 and val < spec.rangeStart then stale[#stale + 1] = name end
        end
      end
      multi('HDEL', prof, stale)
    end
    local set = {}
    local nDays = tonumber(ARGV[pos])
    pos = pos + 1
    for d = 1, nDays do
      local day, c = ARGV[pos], ARGV[pos + 1]
      pos = pos + 2
      local name = dcPrefix .. day
      if day < spec.today then
        set[#set + 1] = name
        set[#set + 1] = c
      else
        local cur = tonumber(redis.call('HGET', prof, name) or '0') or 0
        if tonumber(c) > cur then redis.call('HSET', prof, name, c) end
      end
    end
    local nMarks = tonumber(ARGV[pos])
    pos = pos + 1
    for m = 1, nMarks do
      set[#set + 1] = dmPrefix .. ARGV[pos]
      set[#set + 1] = ARGV[pos + 1]
      pos = pos + 2
    end
    multi('HSET', prof, set)
  else
    keepExtreme(prof, spec.field, ARGV[pos], spec.kind == 'ft' and 'min' or 'max')
    pos = pos + 1
  end
  -- a profile written here for the first time must still expire; activity refreshes it elsewhere
  if not skip and redis.call('TTL', prof) == -1 then redis.call('EXPIRE', prof, spec.ttl) end
end
return deferred
