import { Type } from 'typebox';
import { UnavailableError } from '../../../shared/errors.js';
import { ProjectId, Strict } from '../../../shared/schemas/common.js';
import { recomputeDataFields } from '../../../workers/aggregate/recompute.js';
import { defineAdminOperation } from '../../admin-operation.js';

/**
 * Recomputes every aggregation of a project from ClickHouse now, in this process, and answers
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
    await ctx.projects.require(body.projectId);
    if (!ctx.clickhouse) throw new UnavailableError('ClickHouse is not configured in this process');
    const deps = { clickhouse: ctx.clickhouse, redis: ctx.redis, keys: ctx.keys, dataFields: ctx.dataFields, log: ctx.log.child({ operation: 'RunAggregations' }), now: ctx.now };
    return recomputeDataFields(deps, { projectId: body.projectId });
  },
});

export const aggregationAdminOperations = [runAggregations];
