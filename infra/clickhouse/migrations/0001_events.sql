-- Store of record of every ingested event (D31, D33, D34). Written by the ingestion workers only
-- after a job's rows are here does the job complete, so a job may be retried any number of times:
-- the table must collapse the copies.
--
-- ORDER BY is the de-duplication key of a ReplacingMergeTree: rows with an equal sorting key are
-- collapsed into one (the one with the greatest ingest_ts) by merges and by FINAL. D31 makes
-- (projectId, userId, insertId) the identity of an event, so the key is
-- (project_id, user_id, dedup_key), where dedup_key is `i:<insertId>` when the client sent one and
-- `j:<jobId>:<index>` / `m:<messageId>:<index>` otherwise (the workers derive it; the prefixes
-- keep a client's insertId from ever equalling a derived key).
-- event_name is deliberately NOT in the key: with an insertId, a client that re-sends the same
-- insertId under another name would otherwise be stored twice, while D31 says it is one event.
-- Per-user reads (the common case: one user's aggregations) are a prefix range of this key; a
-- recompute GROUP BY (project_id, user_id) reads in key order (optimize_aggregation_in_order);
-- reads by event name across users use the skip index below.
--
-- PARTITION BY month of client_event_ts: ReplacingMergeTree only collapses rows inside one
-- partition. That is safe here because a retried job, a redelivered message or a client retry
-- carries the same clientEventTimestamp, so every copy lands in the same month. (A client that
-- reuses an insertId for an event in ANOTHER month is outside D31's contract: the fast path drops
-- it for 7 days; after that both would be kept.) Because a duplicate can never span partitions,
-- readers may add `SETTINGS do_not_merge_across_partitions_select_final = 1` to FINAL queries,
-- which lets FINAL work one partition at a time (much cheaper on the full recompute).
--
-- non_replicated_deduplication_window enables block-level insert de-duplication on a single node
-- (insertRows sends an insert_deduplication_token that hashes the rows), so a byte-identical retried
-- insert usually leaves no duplicate part at all; FINAL stays the guarantee.
CREATE TABLE IF NOT EXISTS events
(
    project_id             LowCardinality(String),
    user_id                String,
    event_name             LowCardinality(String),
    dedup_key              String,
    insert_id              String DEFAULT '',
    client_event_ts        DateTime64(3, 'UTC'),
    server_received_ts     Nullable(DateTime64(3, 'UTC')),
    ingest_ts              DateTime64(3, 'UTC'),
    event_properties       String DEFAULT '{}' CODEC(ZSTD(3)),
    user_properties        String DEFAULT '{}' CODEC(ZSTD(3)),
    session_id             String DEFAULT '',
    pre_login_temp_user_id String DEFAULT '',
    country                String DEFAULT '',
    region                 String DEFAULT '',
    city                   String DEFAULT '',
    ip_address             String DEFAULT '',
    device_id              String DEFAULT '',
    app_version_id         String DEFAULT '',
    source                 LowCardinality(String),
    INDEX idx_event_name event_name TYPE set(100) GRANULARITY 4
)
ENGINE = ReplacingMergeTree(ingest_ts)
PARTITION BY toYYYYMM(client_event_ts)
ORDER BY (project_id, user_id, dedup_key)
SETTINGS non_replicated_deduplication_window = 10000;
