-- Identity merge, step (d): what was merged leaves the pre-login id's profile; only the alias
-- stays, marked done.
--   KEYS[1]: the pre-login id's profile
--   ARGV: profile TTL (s), alias field, done field
--   returns 1 when cleared, 0 when the profile is no alias
local aliasField, doneField = ARGV[2], ARGV[3]
local alias = redis.call('HGET', KEYS[1], aliasField)
if not alias then return 0 end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], aliasField, alias, doneField, '1')
redis.call('EXPIRE', KEYS[1], ARGV[1])
return 1
