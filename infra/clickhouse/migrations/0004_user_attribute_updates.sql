-- Pub/Sub `UserAttribute` messages (spec "Publish/subscribe ingestion"). LogEvents carries
-- userProperties inside events (events.user_properties), but a UserAttribute message has no event,
-- so without this table the Redis profile would be its only copy. With it, a profile can be
-- rebuilt last-write-wins by update_ts from ClickHouse alone (D31, D34).
--
-- dedup_key is `m:<messageId>` (or `j:<jobId>` when it came through another queue job); a redelivery
-- collapses under ORDER BY (project_id, user_id, dedup_key). PARTITION BY month of update_ts is
-- safe because every copy carries the same updateTimestamp.
CREATE TABLE IF NOT EXISTS user_attribute_updates
(
    project_id      LowCardinality(String),
    user_id         String,
    dedup_key       String,
    update_ts       DateTime64(3, 'UTC'),
    user_properties String DEFAULT '{}' CODEC(ZSTD(3)),
    source          LowCardinality(String),
    ingest_ts       DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(ingest_ts)
PARTITION BY toYYYYMM(update_ts)
ORDER BY (project_id, user_id, dedup_key)
SETTINGS non_replicated_deduplication_window = 10000;
