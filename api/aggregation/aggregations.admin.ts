import { Type } from 'typebox';
import { ProjectId, Strict } from '../../shared/platform/http/common.schemas.js';
import { AGGREGATION_CALLS } from '../../shared/aggregation/index.js';
import { adminOperationsUsing } from '../http/admin-operation.js';
import type { ApiServices } from '../compose-api.js';

/** What RunAggregations uses: the project check and the warehouse. */
export type AggregationAdminDeps = Pick<ApiServices, 'projects' | 'warehouse'>;
const defineAdminOperation = adminOperationsUsing<AggregationAdminDeps>();

/**
 * Recomputes every aggregation of a project from ClickHouse now, in the process that owns
 * ClickHouse (the workers role, reached through the rpc queue from API processes), and answers
 * when it is done (the same code as the hourly run; safe to overlap with it). For a very large
 * project the call lasts as long as the recompute: operators may prefer to wait for the schedule.
 */
export const runAggregations = defineAdminOperation({
  operation: 'RunAggregations',
  command: 'run-aggregations',
  summary: 'Recompute every data-field aggregation of a project from ClickHouse now',
  body: Strict({ projectId: ProjectId }),
  response: Type.Object({ dataFieldsRecomputed: Type.Integer(), usersUpdated: Type.Integer() }),
  handler: async (body, ctx) => {
    await ctx.projects.projects.require(body.projectId);
    return ctx.warehouse.call(AGGREGATION_CALLS.runAggregations, body.projectId);
  },
});

export const aggregationAdminOperations = [runAggregations] as const;
