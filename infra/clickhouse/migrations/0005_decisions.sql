-- The decision log (D36): per GetTreatments response, one row per treatment returned or withheld
-- and surface. Written by the decision-log workers; a job completes only after its rows are here,
-- so a job may be retried any number of times and the table collapses the copies.
--
-- The identity of a row is (project_id, response_id, treatment_id, surface). user_id is part of
-- the sorting key too, ahead of response_id: a response belongs to exactly one user, so adding it
-- changes nothing about which rows collapse, and it makes one user's decisions (ListDecisions,
-- the RETURNED frequency caps) a prefix range of the key. Reads that need each decision once use
-- FINAL; the reports aggregate per user (distinct users, first decision time), which exact copies
-- of a row cannot change, so they read without it.
--
-- PARTITION BY month of decide_time: the service sets decide_time itself (the clock of the
-- process that answered), never a client, so no request can spread rows over many partitions,
-- and every copy of a row carries the same decide_time (same partition, so copies collapse).
--
-- Reports read one treatment across all users: the skip index on treatment_id lets them skip the
-- granules of other treatments.
CREATE TABLE IF NOT EXISTS decisions
(
    project_id     LowCardinality(String),
    user_id        String,
    response_id    String,
    treatment_id   String,
    version_number UInt32,
    surface        LowCardinality(String),
    rank           UInt32,
    outcome        LowCardinality(String),
    decide_time    DateTime64(3, 'UTC'),
    ingest_ts      DateTime64(3, 'UTC'),
    INDEX idx_treatment treatment_id TYPE bloom_filter(0.01) GRANULARITY 4
)
ENGINE = ReplacingMergeTree(ingest_ts)
PARTITION BY toYYYYMM(decide_time)
ORDER BY (project_id, user_id, response_id, treatment_id, surface)
SETTINGS non_replicated_deduplication_window = 10000;
