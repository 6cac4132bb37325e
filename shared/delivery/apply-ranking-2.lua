-- The ranking counters of one job, exactly once (guarded by the job's ranking marker).
--   KEYS[1]: the project's ranking hash   KEYS[2]: the job's ranking marker
--   ARGV: marker TTL (s), then (field, by) pairs
--   returns 1 when applied, -1 when applied before
if redis.call('EXISTS', KEYS[2]) == 1 then return -1 end
for i = 2, #ARGV, 2 do redis.call('HINCRBY', KEYS[1], ARGV[i], ARGV[i + 1]) end
redis.call('SET', KEYS[2], '1', 'EX', ARGV[1])
return 1
