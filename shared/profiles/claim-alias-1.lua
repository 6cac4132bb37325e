-- Identity merge, step (a): claims a pre-login id's profile for the user it merges into. The
-- first claim wins and later ones get its owner back; also says whether the merge is still to
-- be finished (step (d) sets the done field). An id that is a user of its own is never claimed:
-- one that has been the signed-in side of a merge (the signed-in field, which mark-signed-in
-- writes before every claim the user makes) or that has merged ids of its own (`merged:` fields;
-- profiles merged into before the signed-in field existed have only those). The check and the
-- claim are one script, so no claim slips between them; the HSCAN runs only for a new claim.
--   KEYS[1]: the pre-login id's profile
--   ARGV: userId, profile TTL (s), alias field, done field, signed-in field, merged-marker prefix
--   returns { owner, 1 while the merge is not finished }, or { '', 0, reason } when refused
--   (reason: 'signed-in' or 'has-merged-ids')
local aliasField, doneField, signedInField, mergedPrefix = ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local cur = redis.call('HGET', KEYS[1], aliasField)
if not cur then
  if redis.call('HEXISTS', KEYS[1], signedInField) == 1 then return { '', 0, 'signed-in' } end
  local cursor = '0'
  repeat
    local page = redis.call('HSCAN', KEYS[1], cursor, 'MATCH', mergedPrefix .. '*', 'COUNT', 1000)
    cursor = page[1]
    if #page[2] > 0 then return { '', 0, 'has-merged-ids' } end
  until cursor == '0'
  redis.call('HSET', KEYS[1], aliasField, ARGV[1])
  redis.call('EXPIRE', KEYS[1], ARGV[2])
  cur = ARGV[1]
end
return { cur, 1 - redis.call('HEXISTS', KEYS[1], doneField) }
