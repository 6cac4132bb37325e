/**
 * The decision log's record: what one GetTreatments response returned or withheld, per
 * treatment and surface. Delivery produces these (pure), the decision-log pipeline stores them
 * (queue → workers → the ClickHouse `decisions` table, one row per (responseId, treatmentId,
 * surface)), and reports, caps and interaction resolution read them.
 */
export type DecisionOutcome = 'RETURNED' | 'HOLDOUT' | 'GLOBAL_HOLDOUT' | 'QA';

export interface Decision {
  treatmentId: string;
  versionNumber: number;
  surface: string;
  /** 1..n within the surface; 0 when withheld (HOLDOUT, GLOBAL_HOLDOUT). */
  rank: number;
  outcome: DecisionOutcome;
}

export interface DecisionRecord {
  projectId: string;
  userId: string;
  responseId: string;
  decideTimeMs: number;
  decisions: Decision[];
}

/**
 * Where delivery hands its decisions. `record` never throws and is never awaited by the request
 * path: logging must not cost a response its latency (at most 10 % of delivery throughput).
 */
export interface DecisionSink {
  record(rec: DecisionRecord): void;
}

/** A sink that keeps nothing (processes or tests without a decision log). */
export const NO_DECISION_LOG: DecisionSink = { record: () => undefined };

/**
 * The GetTreatments responses of one event-loop turn (up to MAX_DECISION_RECORDS_PER_JOB), each
 * with its decisions. Identity of a stored row: (projectId, responseId, treatmentId, surface).
 */
export interface DecisionsJob {
  kind: 'decisions';
  records: DecisionRecord[];
}
