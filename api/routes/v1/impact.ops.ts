import { ListDecisionsBody, ListDecisionsResponse } from '../../../shared/schemas/impact.schemas.js';
import { defineOperation, type V1Operation } from '../../v1-operation.js';

const MANAGEMENT = ['TREATMENT_MANAGEMENT'] as const;

/** D36: a user's decisions, newest first (debugging what a user was shown or withheld). */
export const listDecisions = defineOperation({
  operation: 'ListDecisions',
  summary: 'A user’s most recent decisions (treatments returned or withheld), newest first',
  permissions: MANAGEMENT,
  body: ListDecisionsBody,
  response: ListDecisionsResponse,
  handler: async (body, _auth, ctx) => {
    return { decisions: await ctx.warehouse.listDecisions(body.projectId, body.userId, body.limit ?? 20) };
  },
});

/** The measuring-impact operations (D35, D36, D38). */
export const impactOperations = [listDecisions] as unknown as V1Operation[];
