-- The decision log's writers send one row per response, its decisions in parallel arrays, to a
-- table that stores nothing (ENGINE = Null); the materialized view below turns each such row into
-- one row of `decisions` per decision (ARRAY JOIN), in the same insert. `decisions` stays what
-- D36 asks for and what every reader reads: one row per (response, treatment, surface).
--
-- Why: a response's project, user, response id and times were written, and parsed by the engine,
-- once per decision. `bench/engine-insert-cost.ts decisions 20 25000` (inserts of 25,000 decisions
-- in responses of 3, three alternating pairs): 6.78, 7.12 and 5.94 µs of the process's CPU a
-- decision sent as rows of `decisions`, 5.68, 4.98 and 5.02 through this table; under GetTreatments
-- load the background process spent 26-27 µs a request against 31-40 (docs/benchmarks.md, stop 52).
--
-- The arrays are made together (decisionRowsChunk) and always have one length; a response
-- without decisions makes no row. Exactly once is `decisions`' own: its
-- ReplacingMergeTree key collapses the copies a retried insert writes.
CREATE TABLE IF NOT EXISTS decisions_input
(
    project_id     String,
    user_id        String,
    response_id    String,
    treatment_id   Array(String),
    version_number Array(UInt32),
    surface        Array(String),
    rank           Array(UInt32),
    outcome        Array(String),
    decide_time    DateTime64(3, 'UTC'),
    ingest_ts      DateTime64(3, 'UTC')
)
ENGINE = Null;

CREATE MATERIALIZED VIEW IF NOT EXISTS decisions_input_mv TO decisions AS
SELECT project_id, user_id, response_id, treatment_id, version_number, surface, rank, outcome, decide_time, ingest_ts
FROM decisions_input
ARRAY JOIN treatment_id, version_number, surface, rank, outcome;
