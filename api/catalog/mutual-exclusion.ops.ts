import { Type } from 'typebox';
import { ProjectId, Strict } from '../../shared/platform/http/common.schemas.js';
import { MutualExclusionGroupOut } from '../../shared/treatments/index.js';
import { operationsUsing } from '../http/v1-operation.js';
import type { ApiServices } from '../compose-api.js';

/** What the exclusion-group handler uses: the catalogue's groups. */
export type MutualExclusionOpsDeps = Pick<ApiServices, 'catalog'>;
const defineOperation = operationsUsing<MutualExclusionOpsDeps>();

/**
 * Groups are made by naming them on a treatment (InsertTreatment/UpdateTreatment
 * `mutualExclusionGroup`) and never deleted; this lists them, so a console or a script can offer
 * the existing names instead of risking a typo that silently makes a new group.
 */
export const getMutualExclusionGroups = defineOperation({
  operation: 'GetMutualExclusionGroups',
  summary: 'Every mutual exclusion group of the project, ascending mutualExclusionGroupId',
  permissions: ['TREATMENT_MANAGEMENT'] as const,
  body: Strict({ projectId: ProjectId }),
  response: Type.Object({ mutualExclusionGroups: Type.Array(MutualExclusionGroupOut, { description: 'ascending mutualExclusionGroupId' }) }),
  handler: async (body, _auth, ctx) => ({ mutualExclusionGroups: await ctx.catalog.mutualExclusionGroups.list(body.projectId) }),
});

export const mutualExclusionOperations = [getMutualExclusionGroups] as const;
