-- Messages that could not be ingested and must never be silently dropped nor redelivered for ever
-- (D33): they are acknowledged and kept here with the reason, and with the raw payload so that
-- they can be replayed once the cause is fixed.
--
-- A redelivered message (the ack was lost) is the same dead letter: ORDER BY
-- (project_id, source, message_id) collapses the copies, keeping the latest receive_time.
-- No PARTITION BY on purpose: a redelivery has a later receive_time, and partitioning by it could
-- put the two copies in different partitions, which ReplacingMergeTree never collapses.
CREATE TABLE IF NOT EXISTS dead_letters
(
    project_id     LowCardinality(String),
    message_id     String,
    source         LowCardinality(String),
    reason         String,
    receive_time   DateTime64(3, 'UTC'),
    data_type      String DEFAULT '',
    payload_base64 String DEFAULT '' CODEC(ZSTD(3))
)
ENGINE = ReplacingMergeTree(receive_time)
ORDER BY (project_id, source, message_id)
SETTINGS non_replicated_deduplication_window = 1000;
