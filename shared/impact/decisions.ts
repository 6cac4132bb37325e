import type { Static } from 'typebox';
import type { RpcCall } from '../platform/rpc-call.js';
import type { DecisionOut } from './impact.schemas.js';
import type { GroupCounts } from './report-stats.js';

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
  /**
   * True when delivery knew who `userId` stands for (it read the user's profile or alias at
   * decision time, following an identity merge); otherwise the workers look it up.
   */
  userResolved?: boolean;
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

/** A decision as it travels in a job: positional, so a batch of hundreds serialises and parses cheaply. */
export type PackedDecision = [treatmentId: string, versionNumber: number, surface: string, rank: number, outcome: DecisionOutcome];
export type PackedDecisionRecord = [projectId: string, userId: string, responseId: string, decideTimeMs: number, decisions: PackedDecision[], userResolved?: 1];

/**
 * GetTreatments responses, each with its decisions, batched by the producer. Identity of a stored
 * row: (projectId, responseId, treatmentId, surface). Jobs written by earlier versions carry
 * `records`; the producer now writes `packed`.
 */
export interface DecisionsJob {
  kind: 'decisions';
  records?: DecisionRecord[];
  packed?: PackedDecisionRecord[];
}

export function packDecisionRecord(r: DecisionRecord): PackedDecisionRecord {
  const decisions = r.decisions.map((d): PackedDecision => [d.treatmentId, d.versionNumber, d.surface, d.rank, d.outcome]);
  return r.userResolved === true
    ? [r.projectId, r.userId, r.responseId, r.decideTimeMs, decisions, 1]
    : [r.projectId, r.userId, r.responseId, r.decideTimeMs, decisions];
}

const OUTCOMES: ReadonlySet<string> = new Set<DecisionOutcome>(['RETURNED', 'HOLDOUT', 'GLOBAL_HOLDOUT', 'QA']);

function isDecision(d: unknown): d is Decision {
  const x = d as Decision;
  return (
    typeof x?.treatmentId === 'string' &&
    Number.isInteger(x.versionNumber) &&
    typeof x.surface === 'string' &&
    Number.isInteger(x.rank) &&
    OUTCOMES.has(x.outcome)
  );
}

function isRecord(r: unknown): r is DecisionRecord {
  const x = r as DecisionRecord;
  return (
    typeof x?.projectId === 'string' &&
    typeof x.userId === 'string' &&
    typeof x.responseId === 'string' &&
    Number.isFinite(x.decideTimeMs) &&
    Array.isArray(x.decisions) &&
    x.decisions.every(isDecision)
  );
}

function unpack(p: unknown): DecisionRecord | undefined {
  if (!Array.isArray(p) || p.length < 5 || p.length > 6 || !Array.isArray(p[4])) return undefined;
  const [projectId, userId, responseId, decideTimeMs, packed, userResolved] = p as PackedDecisionRecord;
  const decisions: Decision[] = [];
  for (const d of packed) {
    if (!Array.isArray(d)) return undefined;
    decisions.push({ treatmentId: d[0], versionNumber: d[1], surface: d[2], rank: d[3], outcome: d[4] });
  }
  const rec: DecisionRecord =
    userResolved === 1
      ? { projectId, userId, responseId, decideTimeMs, decisions, userResolved: true }
      : { projectId, userId, responseId, decideTimeMs, decisions };
  return isRecord(rec) ? rec : undefined;
}

/** The records of a job in either form; undefined when any of them is malformed (a poison job). */
export function decisionRecordsOf(job: DecisionsJob | undefined): DecisionRecord[] | undefined {
  if (Array.isArray(job?.packed)) {
    const out: DecisionRecord[] = [];
    for (const p of job.packed) {
      const rec = unpack(p);
      if (rec === undefined) return undefined;
      out.push(rec);
    }
    return out;
  }
  if (Array.isArray(job?.records)) return job.records.every(isRecord) ? job.records : undefined;
  return undefined;
}

/** One row of the decision log as ListDecisions answers it (rank as an int64 string): the wire shape. */
export type LoggedDecision = Static<typeof DecisionOut>;

/** What GetTreatmentReport asks; times in epoch ms, the period is [startMs, endMs). */
export interface ReportQuery {
  projectId: string;
  treatmentId: string;
  startMs: number;
  endMs: number;
  attributionWindowDays: number;
  /** the target action's event name; conversions are 0 without one */
  conversionEventName?: string;
}

/** Who a decision was made for and on which surfaces a response returned (or withheld) a treatment. */
export interface DecisionFound {
  userId: string;
  /** Surfaces of the treatment in that response, the ones it was RETURNED on first. */
  surfaces: string[];
}

/** The decision of a tracking id (`<treatmentId>_<responseId>`), if the decision log holds it. */
export type DecisionLookup = (projectId: string, responseId: string, treatmentId: string) => Promise<DecisionFound | undefined>;

/** The decision log's reads the API asks the workers role for (warehouse-rpc). */
export const IMPACT_CALLS = {
  /** A user's decisions, newest first. */
  listDecisions: { name: 'listDecisions', answerTimeoutMs: 30_000 } as RpcCall<[projectId: string, userId: string, limit: number], LoggedDecision[]>,
  /** Per group (TREATED, HOLDOUT, both always present): users, impressions, clicks, conversions. */
  treatmentReport: { name: 'treatmentReport', answerTimeoutMs: 60_000 } as RpcCall<[q: ReportQuery], GroupCounts[]>,
};
