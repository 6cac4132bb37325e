-- Compare-and-delete of one hash field: removed only while it still holds the expected value.
--   KEYS[1]: the hash   ARGV: field, expected value
--   returns 1 when removed, 0 otherwise
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then return redis.call('HDEL', KEYS[1], ARGV[1]) end
return 0
