import type { Warehouse } from '../platform/warehouse/warehouse.js';
import { TABLE_COLUMNS } from '../platform/warehouse/tables.js';
import type { DecisionFound, LoggedDecision, ReportQuery } from './decisions.js';
import type { GroupCounts } from './report-stats.js';

/** One decision of the decision log; see infra/clickhouse/migrations/0005_decisions.sql. */
export interface DecisionRow {
  project_id: string;
  user_id: string;
  response_id: string;
  treatment_id: string;
  version_number: number;
  surface: string;
  rank: number;
  outcome: string;
  decide_time: string;
  ingest_ts: string;
}

// Compile-time check: every column the engine writes for this table is a field of its row type.
TABLE_COLUMNS.decisions satisfies readonly (keyof DecisionRow)[];

/*
 * The treatment report in one query, each table read once:
 * - u: the users with a decision for the treatment in the period, in the group of their first
 *   decision (RETURNED → TREATED, HOLDOUT / GLOBAL_HOLDOUT → HOLDOUT; QA deliveries are outside
 *   the experiment), and the time of that first decision. Without FINAL: copies of a decision
 *   row (a retried job) are identical, so they change neither the group nor the first time.
 * - i: VIEWED and CLICKED interactions for the treatment in the period, per user (FINAL: these
 *   are counted, so each interaction must be counted once).
 * - e: per user, the times of the target-action event from the period's start up to the last
 *   possible window end; a user converted when one falls in [first decision, first decision +
 *   window). Existence only, so copies of an event do not matter either.
 * The joins are by user_id, the prefix (after project_id) of every table's sorting key, so on a
 * cluster sharded by user they stay shard-local.
 */
const REPORT_SQL = `
WITH
  fromUnixTimestamp64Milli({startMs:Int64}, 'UTC') AS period_start,
  fromUnixTimestamp64Milli({endMs:Int64}, 'UTC') AS period_end
SELECT
  u.grp AS grp,
  count() AS users,
  sum(i.views) AS impressions,
  sum(i.clicks) AS clicks,
  countIf(arrayExists(x -> x >= u.first_time AND x < u.first_time + toIntervalDay({windowDays:UInt32}), e.ts)) AS conversions
FROM
(
  SELECT user_id,
         if(argMin(outcome, (decide_time, response_id)) = 'RETURNED', 'TREATED', 'HOLDOUT') AS grp,
         min(decide_time) AS first_time
  FROM decisions
  WHERE project_id = {projectId:String} AND treatment_id = {treatmentId:String}
    AND decide_time >= period_start AND decide_time < period_end
    AND outcome IN ('RETURNED', 'HOLDOUT', 'GLOBAL_HOLDOUT')
  GROUP BY user_id
) AS u
LEFT JOIN
(
  SELECT user_id, countIf(interaction_type = 'VIEWED') AS views, countIf(interaction_type = 'CLICKED') AS clicks
  FROM interactions FINAL
  WHERE project_id = {projectId:String} AND treatment_id = {treatmentId:String}
    AND interaction_type IN ('VIEWED', 'CLICKED')
    AND interaction_time >= period_start AND interaction_time < period_end
  GROUP BY user_id
) AS i ON i.user_id = u.user_id
LEFT JOIN
(
  SELECT user_id, groupArray(client_event_ts) AS ts
  FROM events
  WHERE {hasConversion:UInt8} = 1 AND project_id = {projectId:String} AND event_name = {eventName:String}
    AND client_event_ts >= period_start AND client_event_ts < period_end + toIntervalDay({windowDays:UInt32})
  GROUP BY user_id
) AS e ON e.user_id = u.user_id
GROUP BY grp
SETTINGS join_use_nulls = 0`;

/** The decision log's reads: a user's decisions, the decision of a tracking id, the treatment report. */
export class DecisionsWarehouse {
  constructor(private readonly warehouse: Pick<Warehouse, 'query'>) {}

  /** A user's decisions (a prefix range of the table's key), each once (FINAL), newest first. */
  async listDecisions(projectId: string, userId: string, limit: number): Promise<LoggedDecision[]> {
    type Row = { response_id: string; treatment_id: string; version_number: number; surface: string; rank: number; outcome: string; decide_time: string };
    const rows = await this.warehouse.query<Row>(
      `SELECT response_id, treatment_id, version_number, surface, rank, outcome, formatDateTime(decide_time, '%Y-%m-%dT%H:%i:%S.%fZ', 'UTC') AS decide_time
       FROM decisions FINAL WHERE project_id = {projectId:String} AND user_id = {userId:String}
       ORDER BY decisions.decide_time DESC, response_id, surface, rank, treatment_id LIMIT {limit:UInt32}`,
      { projectId, userId, limit },
    );
    return rows.map((r) => ({
      projectId,
      userId,
      responseId: r.response_id,
      treatmentId: r.treatment_id,
      versionNumber: Number(r.version_number),
      surface: r.surface,
      rank: String(r.rank),
      outcome: r.outcome as LoggedDecision['outcome'],
      decideTime: new Date(r.decide_time).toISOString(),
    }));
  }

  /**
   * The decision of a tracking id (`<treatmentId>_<responseId>`) in the decision log. A response
   * belongs to one user; a treatment may appear on several surfaces of one response (cut on one,
   * returned on another): the RETURNED ones come first, then by surface name. An arrow: handed
   * around as a DecisionLookup.
   */
  findDecision = async (projectId: string, responseId: string, treatmentId: string): Promise<DecisionFound | undefined> => {
    const rows = await this.warehouse.query<{ user_id: string; surface: string }>(
      `SELECT user_id, surface, max(outcome = 'RETURNED') AS returned FROM decisions
       WHERE project_id = {projectId:String} AND response_id = {responseId:String} AND treatment_id = {treatmentId:String}
       GROUP BY user_id, surface ORDER BY returned DESC, surface LIMIT 100`,
      { projectId, responseId, treatmentId },
    );
    if (rows.length === 0) return undefined;
    return { userId: rows[0].user_id, surfaces: rows.filter((r) => r.user_id === rows[0].user_id).map((r) => r.surface) };
  };

  /** Per group (TREATED, HOLDOUT, both always present): users, impressions, clicks, conversions. */
  async treatmentReport(q: ReportQuery): Promise<GroupCounts[]> {
    type Row = { grp: string; users: string | number; impressions: string | number; clicks: string | number; conversions: string | number };
    const rows = await this.warehouse.query<Row>(REPORT_SQL, {
      projectId: q.projectId,
      treatmentId: q.treatmentId,
      startMs: q.startMs,
      endMs: q.endMs,
      windowDays: q.attributionWindowDays,
      hasConversion: q.conversionEventName === undefined ? 0 : 1,
      eventName: q.conversionEventName ?? '',
    });
    return (['TREATED', 'HOLDOUT'] as const).map((group) => {
      const r = rows.find((x) => x.grp === group);
      const count = (n: string | number | undefined) => Number(n ?? 0);
      return { group, users: count(r?.users), impressions: count(r?.impressions), clicks: count(r?.clicks), conversions: count(r?.conversions) };
    });
  }
}
