import type { WarehouseOps } from '../../shared/platform/warehouse/warehouse-rpc.js';
import type { Warehouse } from '../../shared/platform/warehouse/warehouse.js';
import { recomputeDataFields, type RecomputeDeps } from '../aggregation/recompute.js';

/** The operations the API asks for, run against this process's own warehouse (the workers role). */
export function directWarehouseOps(deps: RecomputeDeps & { warehouse: Warehouse }): WarehouseOps {
  const { warehouse } = deps;
  return {
    listDeadLetters: (projectId, limit) => warehouse.listDeadLetters(projectId, limit),
    listDecisions: (projectId, userId, limit) => warehouse.listDecisions(projectId, userId, limit),
    treatmentReport: (q) => warehouse.treatmentReport(q),
    runAggregations: async (projectId) => {
      const r = await recomputeDataFields({ ...deps, log: deps.log.child({ operation: 'RunAggregations' }) }, { projectId });
      return { dataFieldsRecomputed: r.dataFieldsRecomputed, usersUpdated: r.usersUpdated };
    },
  };
}
