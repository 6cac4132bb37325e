-- Identity merge, step (a): claims a pre-login id's profile for the user it merges into. The
-- first claim wins and later ones get its owner back; also says whether the merge is still to
-- be finished (step (d) sets the done field).
--   KEYS[1]: the pre-login id's profile
--   ARGV: userId, profile TTL (s), alias field, done field
--   returns { owner, 1 while the merge is not finished }
local aliasField, doneField = ARGV[3], ARGV[4]
local cur = redis.call('HGET', KEYS[1], aliasField)
if not cur then
  redis.call('HSET', KEYS[1], aliasField, ARGV[1])
  redis.call('EXPIRE', KEYS[1], ARGV[2])
  cur = ARGV[1]
end
return { cur, 1 - redis.call('HEXISTS', KEYS[1], doneField) }
