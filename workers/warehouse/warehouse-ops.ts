import { AGGREGATION_CALLS } from '../../shared/aggregation/index.js';
import { IMPACT_CALLS } from '../../shared/impact/index.js';
import { DecisionsWarehouse } from '../../shared/impact/decisions.warehouse.js';
import { INGESTION_CALLS } from '../../shared/ingestion/index.js';
import { listDeadLetters } from '../../shared/ingestion/dead-letters.warehouse.js';
import { RpcHandlers } from '../../shared/platform/warehouse/warehouse-rpc.js';
import type { Warehouse } from '../../shared/platform/warehouse/warehouse.js';
import { recomputeDataFields, type RecomputeDeps } from '../aggregation/recompute.js';

/**
 * The calls the API asks for (each declared by its feature), answered against this process's own
 * warehouse: by the workers role over the rpc queue, or directly in a process with ClickHouse.
 */
export function warehouseCalls(deps: RecomputeDeps & { warehouse: Warehouse }): RpcHandlers {
  const { warehouse } = deps;
  const decisions = new DecisionsWarehouse(warehouse);
  return new RpcHandlers()
    .register(INGESTION_CALLS.listDeadLetters, (projectId, limit) => listDeadLetters(warehouse, projectId, limit))
    .register(IMPACT_CALLS.listDecisions, (projectId, userId, limit) => decisions.listDecisions(projectId, userId, limit))
    .register(IMPACT_CALLS.treatmentReport, (q) => decisions.treatmentReport(q))
    .register(AGGREGATION_CALLS.runAggregations, async (projectId) => {
      // an operator waits for the answer: users kept busy by ingest jobs beyond 5 s are left to the next run
      const r = await recomputeDataFields({ ...deps, log: deps.log.child({ operation: 'RunAggregations' }) }, { projectId }, { secondReadsMs: 5000 });
      return { dataFieldsRecomputed: r.dataFieldsRecomputed, usersUpdated: r.usersUpdated };
    });
}
