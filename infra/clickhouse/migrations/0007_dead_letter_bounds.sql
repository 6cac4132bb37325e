-- Dead letters bounded and expiring (D58). A dead letter keeps at most 64 KiB of the payload it
-- was given (workers/ingestion/dead-letter-sink.ts cuts it); these columns say what the whole
-- payload was, so a cut payload can still be matched with its original:
--   payload_bytes  the size of the whole payload (0: a row written before this migration)
--   payload_sha256 the SHA-256 (hex) of the whole payload
--   user_ids       the users the payload names (userId, preLoginTempUserId), so DeleteUserData
--                  finds a user's dead letters whatever part of the payload was kept
--
-- Every dead letter expires 30 days after it was (last) received. The workers lower this to
-- RETENTION_DAYS at start-up when that is shorter (applyRetentionTtl), so a dead letter never
-- outlives the user data it holds.
ALTER TABLE dead_letters ADD COLUMN IF NOT EXISTS payload_bytes UInt64 DEFAULT 0;
ALTER TABLE dead_letters ADD COLUMN IF NOT EXISTS payload_sha256 String DEFAULT '';
ALTER TABLE dead_letters ADD COLUMN IF NOT EXISTS user_ids Array(String) DEFAULT [];
ALTER TABLE dead_letters MODIFY TTL toDateTime(receive_time) + INTERVAL 30 DAY DELETE;
