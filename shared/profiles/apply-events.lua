-- The events of one job applied to one user's profile, exactly once: the job marker, the
-- insert markers, the user-property writes, the aggregate updates and the profile's TTL commit
-- together (see shared/profiles/profile-ops.ts for the argument layout and why ops are grouped).
-- A profile holding the alias field (its user was merged into another one) is not written.
-- The job leaves the user's in-flight hash (set before its rows were stored) and stamps it
-- `@applied`, in the same step: a recompute reading meanwhile tells it (workers/aggregation/recompute.ts).
--   KEYS: profile, job marker, in-flight hash, then (when an event has a de-duplication id) the
--         insert marker sets of the last arrival days, today's first
--   ARGV: alias field, user-property prefix, its timestamp prefix,
--         job TTL (s), profile TTL (s), today's set expireAt, n, marker x n ('' = none),
--         groups, then per group: kind, a, b, c, k, event index x k (1-based),
--         props, then per property: event index, ts, name, JSON value; last: the in-flight
--         hash's stamp field, its TTL (ms), now (epoch ms)
--   returns the number of events applied, -1 when the job was applied before, -2 when the
--   profile is an alias (the caller applies the job to the user it names)
--- @include "keep-extreme"
local prof = KEYS[1]
local jobKey = KEYS[2]
local inflight = KEYS[3]
local aliasField, upPrefix, utPrefix = ARGV[1], ARGV[2], ARGV[3]
-- the job is done with this user whatever follows (applied now or before, or an alias's: the
-- caller marks the user it names); the script is atomic, so no reader sees it cleared early
redis.call('HDEL', inflight, jobKey)
if redis.call('EXISTS', jobKey) == 1 then return -1 end
if redis.call('HEXISTS', prof, aliasField) == 1 then return -2 end
local n = tonumber(ARGV[7])
local pos = 8
-- Which events are new: each distinct marker is looked up with one SMISMEMBER per existing
-- set (today's, then the older days') and the new ones added with one SADD, instead of a call
-- per event and set: the same answer (a marker found in any set, or met earlier in this job, is
-- not new), at a few calls per job
local fresh = {}
local applied = 0
local todo, todoIdx, seen = {}, {}, {}
for i = 1, n do
  local m = ARGV[pos + i - 1]
  if m == '' then
    fresh[i] = true
    applied = applied + 1
  elseif not seen[m] then
    seen[m] = true
    todo[#todo + 1] = m
    todoIdx[#todoIdx + 1] = i
  end
end
pos = pos + n
-- unpack's stack is bounded: members go in slices
local SLICE = 1000
local function lookup(key, members)
  local found = {}
  for s = 1, #members, SLICE do
    local r = redis.call('SMISMEMBER', key, unpack(members, s, math.min(s + SLICE - 1, #members)))
    for k = 1, #r do found[s + k - 1] = r[k] == 1 end
  end
  return found
end
if #todo > 0 then
  for j = 4, #KEYS do
    if #todo == 0 then break end
    if redis.call('EXISTS', KEYS[j]) == 1 then
      local found = lookup(KEYS[j], todo)
      local keep, keepIdx = {}, {}
      for k = 1, #todo do
        if not found[k] then
          keep[#keep + 1] = todo[k]
          keepIdx[#keepIdx + 1] = todoIdx[k]
        end
      end
      todo, todoIdx = keep, keepIdx
    end
  end
  for k = 1, #todoIdx do fresh[todoIdx[k]] = true end
  applied = applied + #todo
  for s = 1, #todo, SLICE do
    redis.call('SADD', KEYS[4], unpack(todo, s, math.min(s + SLICE - 1, #todo)))
  end
  if #todo > 0 then redis.call('EXPIREAT', KEYS[4], ARGV[6]) end
end
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
    elseif kind == 'min' or kind == 'max' then
      keepExtreme(prof, a, b, kind)
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
    local cur = redis.call('HGET', prof, utPrefix .. name)
    if (not cur) or tonumber(cur) <= tonumber(t) then
      redis.call('HSET', prof, upPrefix .. name, val, utPrefix .. name, t)
    end
  end
end
redis.call('EXPIRE', prof, ARGV[5])
redis.call('SET', jobKey, '1', 'EX', ARGV[4])
redis.call('HSET', inflight, ARGV[#ARGV - 2], ARGV[#ARGV])
if redis.call('PTTL', inflight) < 0 then redis.call('PEXPIRE', inflight, ARGV[#ARGV - 1]) end
return applied
