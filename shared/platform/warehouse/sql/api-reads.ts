import type { ClickHouseClient } from '@clickhouse/client';
import type { DeadLetter, DecisionFound, DecisionOut } from '../warehouse.js';

/** The newest dead letters of a project, each once (FINAL). */
export async function listDeadLetters(ch: ClickHouseClient, projectId: string, limit: number): Promise<DeadLetter[]> {
  const rs = await ch.query({
    query: `SELECT message_id, source, reason, formatDateTime(receive_time, '%Y-%m-%dT%H:%i:%S.%fZ', 'UTC') AS receive_time, data_type, payload_base64,
                   toString(payload_bytes) AS payload_bytes, payload_sha256
            FROM dead_letters FINAL WHERE project_id = {projectId:String} ORDER BY receive_time DESC LIMIT {limit:UInt32}`,
    query_params: { projectId, limit },
    format: 'JSONEachRow',
  });
  const rows = await rs.json<{ message_id: string; source: string; reason: string; receive_time: string; data_type: string; payload_base64: string; payload_bytes: string; payload_sha256: string }>();
  return rows.map((r) => {
    const payloadBytes = Number(r.payload_bytes);
    // base64 of n bytes: 4 characters per 3 bytes, the last group padded
    const keptBytes = (r.payload_base64.length / 4) * 3 - (r.payload_base64.endsWith('==') ? 2 : r.payload_base64.endsWith('=') ? 1 : 0);
    return { messageId: r.message_id, source: r.source, reason: r.reason, receiveTime: new Date(r.receive_time).toISOString(), dataType: r.data_type, payloadBase64: r.payload_base64, payloadBytes, payloadSha256: r.payload_sha256, payloadTruncated: payloadBytes > keptBytes };
  });
}

/** A user's decisions (a prefix range of the table's key), each once (FINAL), newest first. */
export async function listDecisions(ch: ClickHouseClient, projectId: string, userId: string, limit: number): Promise<DecisionOut[]> {
  const rs = await ch.query({
    query: `SELECT response_id, treatment_id, version_number, surface, rank, outcome, formatDateTime(decide_time, '%Y-%m-%dT%H:%i:%S.%fZ', 'UTC') AS decide_time
            FROM decisions FINAL WHERE project_id = {projectId:String} AND user_id = {userId:String}
            ORDER BY decisions.decide_time DESC, response_id, surface, rank, treatment_id LIMIT {limit:UInt32}`,
    query_params: { projectId, userId, limit },
    format: 'JSONEachRow',
  });
  const rows = await rs.json<{ response_id: string; treatment_id: string; version_number: number; surface: string; rank: number; outcome: string; decide_time: string }>();
  return rows.map((r) => ({
    projectId,
    userId,
    responseId: r.response_id,
    treatmentId: r.treatment_id,
    versionNumber: Number(r.version_number),
    surface: r.surface,
    rank: String(r.rank),
    outcome: r.outcome as DecisionOut['outcome'],
    decideTime: new Date(r.decide_time).toISOString(),
  }));
}

/**
 * The decision of a tracking id (`<treatmentId>_<responseId>`) in the decision log. A response
 * belongs to one user; a treatment may appear on several surfaces of one response (cut on one,
 * returned on another): the RETURNED ones come first, then by surface name.
 */
export async function findDecision(ch: ClickHouseClient, projectId: string, responseId: string, treatmentId: string): Promise<DecisionFound | undefined> {
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
}
