import type { ClickHouseClient } from '@clickhouse/client';

/** Who a decision was made for and on which surfaces a response returned (or withheld) a treatment. */
export interface DecisionFound {
  userId: string;
  /** Surfaces of the treatment in that response, the ones it was RETURNED on first. */
  surfaces: string[];
}

export type DecisionLookup = (projectId: string, responseId: string, treatmentId: string) => Promise<DecisionFound | undefined>;

/**
 * D49: the decision of a tracking id (`<treatmentId>_<responseId>`) in the decision log (D36).
 * A response belongs to one user; a treatment may appear on several surfaces of one response
 * (cut on one, returned on another): the RETURNED ones come first, then by surface name.
 */
export function clickhouseDecisionLookup(ch: ClickHouseClient): DecisionLookup {
  return async (projectId, responseId, treatmentId) => {
    const rs = await ch.query({
      query: `SELECT user_id, surface, max(outcome = 'RETURNED') AS returned FROM decisions
              WHERE project_id = {projectId:String} AND response_id = {responseId:String} AND treatment_id = {treatmentId:String}
              GROUP BY user_id, surface ORDER BY returned DESC, surface LIMIT 100`,
      query_params: { projectId, responseId, treatmentId },
      format: 'JSONEachRow',
    });
    const rows = await rs.json<{ user_id: string; surface: string }>();
    if (rows.length === 0) return undefined;
    return { userId: rows[0].user_id, surfaces: rows.filter((r) => r.user_id === rows[0].user_id).map((r) => r.surface) };
  };
}
