-- The user's last view of each (treatment, surface), in the user's slot: field `v:<T>:<S>` = view
-- time (ms). A newer view replaces it (the latest view counts) and drops the views older than
-- VIEW_KEPT_MS before it, with their finished claims, so the hash holds the arms the user saw
-- in about a week. Repeating the script changes nothing.
--   KEYS: the hash   ARGV: '<T>:<S>', view ms, kept ms, TTL s

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
