-- RETENTION_DAYS (D44): rows older than the retention are deleted by ClickHouse itself (TTL),
-- counted from the time the row is about (the event, the interaction, the decision, the update),
-- the same clock that bounds what LogEvents accepts.
--
-- A TTL is static DDL, so this migration states the default, 400 days. At start-up, after the
-- migrations, the workers process compares each table's TTL with the configured RETENTION_DAYS
-- and runs `ALTER TABLE … MODIFY TTL` when they differ (workers/profiles/user-data.ts,
-- applyRetentionTtl); changing RETENTION_DAYS therefore needs no new migration.
--
-- toDateTime(): a TTL expression must be a Date or DateTime. ReplacingMergeTree drops expired
-- rows during merges (and in the periodic TTL merge), so a row may outlive its TTL by a few hours.
-- dead_letters has no TTL here: it is bounded by what is rejected, and an operator needs the
-- payloads to replay them.
ALTER TABLE events MODIFY TTL toDateTime(client_event_ts) + INTERVAL 400 DAY DELETE;
ALTER TABLE interactions MODIFY TTL toDateTime(interaction_time) + INTERVAL 400 DAY DELETE;
ALTER TABLE decisions MODIFY TTL toDateTime(decide_time) + INTERVAL 400 DAY DELETE;
ALTER TABLE user_attribute_updates MODIFY TTL toDateTime(update_ts) + INTERVAL 400 DAY DELETE;
