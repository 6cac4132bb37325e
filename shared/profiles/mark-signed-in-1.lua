-- Identity merge, before step (a): records in the user's profile that the user is the signed-in
-- side of a merge, so the claim script never makes it anyone's pre-login id. Runs in the user's
-- slot before the claim runs in the pre-login id's: once this mark is durable no later claim of
-- the user succeeds, and a claim that succeeded before made the user an alias, which is
-- returned instead of marking (the caller merges into the user it names).
--   KEYS[1]: the user's profile
--   ARGV: profile TTL (s), alias field, signed-in field, now (ms)
--   returns the user this profile is an alias of, or nil when the user is marked
local alias = redis.call('HGET', KEYS[1], ARGV[2])
if alias then return alias end
redis.call('HSETNX', KEYS[1], ARGV[3], ARGV[4])
redis.call('EXPIRE', KEYS[1], ARGV[1])
return false
