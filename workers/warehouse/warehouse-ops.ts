import type { ClickHouseClient } from '@clickhouse/client';
import type { DeadLetter, WarehouseOps } from '../../shared/queues/warehouse-rpc.js';
import { recomputeDataFields, type RecomputeDeps } from '../aggregate/recompute.js';

/** The warehouse operations run against this process's own ClickHouse (the workers role). */
export function directWarehouseOps(deps: RecomputeDeps & { clickhouse: ClickHouseClient }): WarehouseOps {
  return {
    listDeadLetters: (projectId, limit) => listDeadLetters(deps.clickhouse, projectId, limit),
    runAggregations: async (projectId) => {
      const r = await recomputeDataFields({ ...deps, log: deps.log.child({ operation: 'RunAggregations' }) }, { projectId });
      return { dataFieldsRecomputed: r.dataFieldsRecomputed, usersUpdated: r.usersUpdated };
    },
  };
}

async function listDeadLetters(ch: ClickHouseClient, projectId: string, limit: number): Promise<DeadLetter[]> {
  const rs = await ch.query({
    query: `SELECT message_id, source, reason, formatDateTime(receive_time, '%Y-%m-%dT%H:%i:%S.%fZ', 'UTC') AS receive_time, data_type, payload_base64
            FROM dead_letters FINAL WHERE project_id = {projectId:String} ORDER BY receive_time DESC LIMIT {limit:UInt32}`,
    query_params: { projectId, limit },
    format: 'JSONEachRow',
  });
  const rows = await rs.json<{ message_id: string; source: string; reason: string; receive_time: string; data_type: string; payload_base64: string }>();
  return rows.map((r) => ({ messageId: r.message_id, source: r.source, reason: r.reason, receiveTime: new Date(r.receive_time).toISOString(), dataType: r.data_type, payloadBase64: r.payload_base64 }));
}
