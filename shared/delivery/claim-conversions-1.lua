-- Claims the conversions of target-action events: a view of (T, S) is converted when one of T's
-- event times is 0 to window ms after it. A view converts once: the claim `c:<T>:<S>` =
-- '<view ms>:p' (pending: its ranking action may not be counted yet) commits with the check, and
-- becomes ':d' once counted. Pending claims of the given treatments are returned again (a retry,
-- or another event, finishes them; the ranking script's marker counts each once); while one is
-- pending on an arm, that arm claims nothing new.
--   KEYS: the hash   ARGV: window ms, then per treatment: id, n, event ms x n
--   returns { '<T>:<S>', view ms, ... }

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
