import { createHash } from 'node:crypto';
import { toClickhouseDateTime64 } from '../platform/warehouse/clickhouse-datetime.js';
import { TABLE_COLUMNS } from '../platform/warehouse/tables.js';
import type { Warehouse } from '../platform/warehouse/warehouse.js';
import type { DeadLetter } from './types.js';

/** The `dead_letters` table: its rows (the dead-letter sink writes them) and ListDeadLetters' read. */

export type DeadLetterSource = 'pubsub' | 'log_events' | 'log_treatment_interaction' | 'decision_log';

export interface DeadLetterRow {
  project_id: string;
  message_id: string;
  source: DeadLetterSource;
  reason: string;
  receive_time: string;
  data_type: string;
  /** At most MAX_DEAD_LETTER_PAYLOAD_BYTES of the payload (the dead-letter sink cuts it). */
  payload_base64: string;
  /** Size of the whole payload, in bytes. */
  payload_bytes: number;
  /** SHA-256 (hex) of the whole payload. */
  payload_sha256: string;
  /** Users the payload names, for DeleteUserData. */
  user_ids: string[];
}

export interface DeadLetterInput {
  projectId: string;
  messageId: string;
  source: DeadLetterSource;
  reason: string;
  receiveMs: number;
  dataType?: string;
  payload: Uint8Array;
  /** The whole payload's size when `payload` is a part of it. @defaultValue payload's size */
  payloadBytes?: number;
  /** The whole payload's SHA-256 (hex). @defaultValue the hash of `payload` */
  payloadSha256?: string;
  userIds?: readonly string[];
}

export function toDeadLetterRow(input: DeadLetterInput): DeadLetterRow {
  return {
    project_id: input.projectId,
    message_id: input.messageId,
    source: input.source,
    reason: input.reason,
    receive_time: toClickhouseDateTime64(input.receiveMs),
    data_type: input.dataType ?? '',
    payload_base64: Buffer.from(input.payload).toString('base64'),
    payload_bytes: input.payloadBytes ?? input.payload.byteLength,
    payload_sha256: input.payloadSha256 ?? createHash('sha256').update(input.payload).digest('hex'),
    user_ids: [...(input.userIds ?? [])],
  };
}

// Compile-time check: every column the engine writes for this table is a field of its row type.
TABLE_COLUMNS.dead_letters satisfies readonly (keyof DeadLetterRow)[];

/** The newest dead letters of a project, each once (FINAL). */
export async function listDeadLetters(warehouse: Pick<Warehouse, 'query'>, projectId: string, limit: number): Promise<DeadLetter[]> {
  type Row = { message_id: string; source: string; reason: string; receive_time: string; data_type: string };
  const rows = await warehouse.query<Row & { payload_base64: string; payload_bytes: string; payload_sha256: string }>(
    `SELECT message_id, source, reason, formatDateTime(receive_time, '%Y-%m-%dT%H:%i:%S.%fZ', 'UTC') AS receive_time, data_type, payload_base64,
            toString(payload_bytes) AS payload_bytes, payload_sha256
     FROM dead_letters FINAL WHERE project_id = {projectId:String} ORDER BY receive_time DESC LIMIT {limit:UInt32}`,
    { projectId, limit },
  );
  return rows.map((r) => {
    const payloadBytes = Number(r.payload_bytes);
    // base64 of n bytes: 4 characters per 3 bytes, the last group padded
    const keptBytes = (r.payload_base64.length / 4) * 3 - (r.payload_base64.endsWith('==') ? 2 : r.payload_base64.endsWith('=') ? 1 : 0);
    const receiveTime = new Date(r.receive_time).toISOString();
    return {
      messageId: r.message_id,
      source: r.source,
      reason: r.reason,
      receiveTime,
      dataType: r.data_type,
      payloadBase64: r.payload_base64,
      payloadBytes,
      payloadSha256: r.payload_sha256,
      payloadTruncated: payloadBytes > keptBytes,
    };
  });
}
