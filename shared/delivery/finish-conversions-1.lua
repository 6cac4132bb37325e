-- Marks claims counted (their ranking actions are in the ranking hash).
--   KEYS: the hash   ARGV: ('<T>:<S>', view ms) pairs

for i = 1, #ARGV, 2 do
  local c = 'c:' .. ARGV[i]
  if redis.call('HGET', KEYS[1], c) == ARGV[i + 1] .. ':p' then redis.call('HSET', KEYS[1], c, ARGV[i + 1] .. ':d') end
end
return 1
