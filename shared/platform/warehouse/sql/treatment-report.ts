import type { ClickHouseClient } from '@clickhouse/client';
import type { GroupCounts } from '../../../impact/index.js';
import type { ReportQuery } from '../warehouse.js';

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

export async function treatmentReport(ch: ClickHouseClient, q: ReportQuery): Promise<GroupCounts[]> {
  const rs = await ch.query({
    query: REPORT_SQL,
    query_params: {
      projectId: q.projectId,
      treatmentId: q.treatmentId,
      startMs: q.startMs,
      endMs: q.endMs,
      windowDays: q.attributionWindowDays,
      hasConversion: q.conversionEventName === undefined ? 0 : 1,
      eventName: q.conversionEventName ?? '',
    },
    format: 'JSONEachRow',
  });
  const rows = await rs.json<{ grp: string; users: string | number; impressions: string | number; clicks: string | number; conversions: string | number }>();
  return (['TREATED', 'HOLDOUT'] as const).map((group) => {
    const r = rows.find((x) => x.grp === group);
    return { group, users: Number(r?.users ?? 0), impressions: Number(r?.impressions ?? 0), clicks: Number(r?.clicks ?? 0), conversions: Number(r?.conversions ?? 0) };
  });
}
