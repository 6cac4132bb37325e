-- Compare-and-set of management state: every check must still hold, then the writes, the
-- change-log entry, the version bump and the invalidation message apply together.
--   KEYS: every key the spec names (the spec refers to them by index)
--   ARGV[1]: the spec as JSON (see shared/platform/redis/atomic-write.ts)
--   returns 1 when applied, 0 when a check failed
local spec = cjson.decode(ARGV[1])
for _, c in ipairs(spec.checks) do
  local cur = redis.call('HGET', KEYS[c.key], c.field)
  if c.expect == cjson.null then
    if cur then return 0 end
  else
    if cur ~= c.expect then return 0 end
  end
end
if spec.expectString then
  local cur = redis.call('GET', KEYS[spec.expectString.key])
  if spec.expectString.value == cjson.null then
    if cur then return 0 end
  elseif cur ~= spec.expectString.value then return 0 end
end
for _, w in ipairs(spec.writes) do
  if w.value == cjson.null then redis.call('HDEL', KEYS[w.key], w.field)
  else redis.call('HSET', KEYS[w.key], w.field, w.value) end
end
if spec.change then
  local args = {}
  for k, v in pairs(spec.change.entry) do table.insert(args, k); table.insert(args, v) end
  redis.call('XADD', KEYS[spec.change.key], 'MAXLEN', '~', spec.change.maxlen, '*', unpack(args))
end
if spec.versionKey then redis.call('INCR', KEYS[spec.versionKey]) end
if spec.publish then redis.call('PUBLISH', spec.publish.channel, spec.publish.message) end
return 1
