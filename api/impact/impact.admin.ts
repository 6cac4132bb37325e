import { defineAdminOperation, type AdminOperation } from '../http/admin-operation.js';
import type { V1Operation } from '../http/v1-operation.js';
import type { AuthContext } from '../../shared/projects/index.js';
import { getEventSchemas, getTreatmentReport, insertEventSchema, listDecisions } from './impact.ops.js';

/**
 * The measuring-impact operations for operators and the CLI (`npm run admin -- get-treatment-report
 * --project-id p --treatment-id 1`): the same schema and handler as the `/v1` operation, with the
 * admin token instead of a project key. Their handlers read neither the key nor the request.
 */
function asAdmin(op: V1Operation, command: string): AdminOperation {
  return defineAdminOperation({
    operation: op.operation,
    command,
    summary: op.summary,
    body: op.body,
    response: op.response,
    handler: async (body, ctx) => {
      await ctx.projects.require((body as { projectId: string }).projectId);
      return op.handler(body, undefined as unknown as AuthContext, ctx, undefined as never);
    },
  });
}

export const impactAdminOperations: AdminOperation[] = [
  asAdmin(insertEventSchema as unknown as V1Operation, 'insert-event-schema'),
  asAdmin(getEventSchemas as unknown as V1Operation, 'get-event-schemas'),
  asAdmin(listDecisions as unknown as V1Operation, 'list-decisions'),
  asAdmin(getTreatmentReport as unknown as V1Operation, 'get-treatment-report'),
];
