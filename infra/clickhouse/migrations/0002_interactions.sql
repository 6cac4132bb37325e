-- Store of record of LogTreatmentInteraction calls (D32, D34). The spec allows the same
-- treatmentTrackingId to be logged again for recurring interactions, so the natural identity of a
-- row is the call, not (trackingId, type): dedup_key is `j:<jobId>` for an API call (the
-- workers supply it), and ORDER BY (project_id, user_id, dedup_key) makes a retried job collapse
-- into one row. Treatment aggregations (counts by type, optionally per treatment or surface, and
-- distinct treatment_tracking_id) are always per user, which is a prefix range of the key.
--
-- PARTITION BY month of interaction_time is safe for the same reason as in 0001_events.sql: every
-- copy of one call carries the same interactionTimeMicros, so copies never span partitions.
CREATE TABLE IF NOT EXISTS interactions
(
    project_id            LowCardinality(String),
    user_id               String,
    treatment_id          String,
    treatment_tracking_id String,
    surface               LowCardinality(String),
    interaction_type      LowCardinality(String),
    interaction_time      DateTime64(6, 'UTC'),
    action_name           String DEFAULT '',
    dedup_key             String,
    ingest_ts             DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(ingest_ts)
PARTITION BY toYYYYMM(interaction_time)
ORDER BY (project_id, user_id, dedup_key)
SETTINGS non_replicated_deduplication_window = 10000;
