import { Type } from 'typebox';
import { canonicalUserOf, compileCatalogPlan } from '../../shared/delivery/index.js';
import { previewTreatment } from '../../shared/delivery/index.js';
import { NotFoundError } from '../../shared/platform/errors.js';
import { ProjectId, Strict } from '../../shared/platform/http/common.schemas.js';
import type { ApiServices } from '../compose-api.js';
import type { StoredProfile } from '../../shared/profiles/index.js';
import { operationsUsing } from '../http/v1-operation.js';
import { adminOperationsUsing } from '../http/admin-operation.js';
import { explain, ExplainTreatmentsResponse, RuleExplanationSchema } from './explain.admin.js';
import { ContextualAttributeIn, GetTreatmentsRequest, UserTreatmentOut } from '../../shared/delivery/index.js';

// PreviewTreatment and ExplainTreatments for TREATMENT_MANAGEMENT keys.

export const PreviewTreatmentRequest = Strict({
  projectId: ProjectId,
  treatmentId: Type.String({ minLength: 1, maxLength: 32 }),
  versionNumber: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, description: 'default: the newest version' })),
  userId: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
  languageCode: Type.Optional(Type.String({ maxLength: 64 })),
  contextualAttributes: Type.Optional(Type.Array(ContextualAttributeIn, { maxItems: 1000 })),
});

const EligibilityOut = Type.Object({
  eligible: Type.Boolean({ description: 'every rule met, not capped, not held out' }),
  versionNumber: Type.Integer(),
  versionStatus: Type.String(),
  rules: Type.Array(RuleExplanationSchema),
  heldOut: Type.Boolean(),
  globallyHeldOut: Type.Boolean(),
  capped: Type.Optional(Type.String({ description: 'e.g. "capped: 5 of 5 VIEWED in LAST_7D"' })),
});

/** What the preview handlers use: the stored records a plan is compiled from, the profile, and (explanations) delivery's catalogue and ranking. */
export type PreviewOpsDeps = Pick<ApiServices, 'now' | 'projects' | 'catalog' | 'treatments' | 'aggregation' | 'profiles' | 'delivery'>;
const defineOperation = operationsUsing<PreviewOpsDeps>();
const defineAdminOperation = adminOperationsUsing<PreviewOpsDeps>();

const NO_PROFILE: StoredProfile = Object.freeze({ userProperties: {}, fields: {} });

/**
 * Compiled from the stored records rather than the delivery cache: a preview right after an
 * edit shows the edit, and the cost (a few Redis reads) is a management call's, not delivery's.
 */
async function preview(body: { projectId: string; treatmentId: string; userId?: string } & Record<string, unknown>, ctx: PreviewOpsDeps) {
  const { projectId } = body;
  const [record, types, dataFields, project, profile] = await Promise.all([
    ctx.treatments.treatments.get(projectId, body.treatmentId),
    ctx.catalog.treatmentTypes.list(projectId),
    ctx.aggregation.dataFields.list(projectId),
    ctx.projects.projects.get(projectId),
    body.userId !== undefined ? ctx.profiles.profiles.get(projectId, body.userId) : NO_PROFILE,
  ]);
  if (record === undefined) throw new NotFoundError(`treatment ${body.treatmentId} does not exist in project ${projectId}`);
  const plan = compileCatalogPlan({
    projectId,
    treatments: [record],
    types,
    surfaces: [],
    dataFields,
    globalHoldoutPercentage: project?.globalHoldoutPercentage,
  });
  // holdouts of a merged pre-login id are its user's, as GetTreatments decides them
  const userId = body.userId === undefined ? undefined : canonicalUserOf(body.userId, profile);
  return previewTreatment(plan, { ...body, userId } as never, profile, ctx.now());
}

const PreviewTreatmentResponse = Type.Object({ userTreatment: UserTreatmentOut, eligibility: EligibilityOut });

export const previewTreatmentOperation = defineOperation({
  operation: 'PreviewTreatment',
  summary:
    'Render any version of a treatment for any user as GetTreatments would (treatmentTrackingId "preview"), with the per-rule evaluation; nothing is logged or counted',
  permissions: ['TREATMENT_MANAGEMENT'],
  body: PreviewTreatmentRequest,
  response: PreviewTreatmentResponse,
  handler: async (body, _auth, ctx) => preview(body, ctx),
});

/** The same for operators: `/admin/v1/PreviewTreatment` and `npm run admin -- preview-treatment`. */
export const previewTreatmentAdmin = defineAdminOperation({
  operation: 'PreviewTreatment',
  command: 'preview-treatment',
  summary: 'Render any version of a treatment for any user as GetTreatments would, with the rule evaluation (nothing logged or counted)',
  body: PreviewTreatmentRequest,
  response: PreviewTreatmentResponse,
  handler: async (body, ctx) => {
    await ctx.projects.projects.require(body.projectId);
    return preview(body, ctx);
  },
});

export const explainTreatmentsOperation = defineOperation({
  operation: 'ExplainTreatments',
  summary: 'Per requested surface and treatment: returned or not, and why (the admin ExplainTreatments, for management keys)',
  permissions: ['TREATMENT_MANAGEMENT'],
  body: GetTreatmentsRequest,
  response: ExplainTreatmentsResponse,
  handler: async (body, _auth, ctx) => explain(body, ctx),
});

/** PreviewTreatment, ExplainTreatments. */
export const previewOperations = [previewTreatmentOperation, explainTreatmentsOperation] as const;
