/** How long an ingest job can live: the numbers behind the queue options and every marker that must outlive a retry. */

/** Attempts of an ingest job: enough to ride out an outage of hours at the capped backoff. */
export const INGEST_JOB_ATTEMPTS = 100_000;
export const BACKOFF_CAP_MS = 30_000;
/** A failed job stays retryable from the dashboard this long. */
export const FAILED_JOB_KEPT_SECONDS = 30 * 24 * 3600;

/**
 * How long a job marker must outlive its job's first attempt: as long as the job can still be
 * retried (every attempt at the capped backoff) plus the time a failed job is kept (an operator
 * may retry it from the dashboard). When their job completes, markers are cut to a short grace;
 * this TTL only bounds the ones whose job failed or whose cut was lost.
 */
export const JOB_MARKER_TTL_SECONDS = Math.ceil((INGEST_JOB_ATTEMPTS * BACKOFF_CAP_MS) / 1000) + FAILED_JOB_KEPT_SECONDS;
