import { randomUUID } from 'node:crypto';
import { Type, type Static } from 'typebox';
import { canonicalUserOf, selectTreatments } from '../../shared/delivery/index.js';
import { greedy } from '../../shared/delivery/index.js';
import type { ApiServices } from '../compose-api.js';
import { adminOperationsUsing } from '../http/admin-operation.js';
import { GetTreatmentsRequest, GetTreatmentsResponse } from '../../shared/delivery/index.js';

/** What ExplainTreatments uses: the project check, the profile, and delivery's catalogue and ranking. */
export type ExplainAdminDeps = Pick<ApiServices, 'projects' | 'profiles' | 'delivery' | 'now'>;
const defineAdminOperation = adminOperationsUsing<ExplainAdminDeps>();

const RuleExplanationOut = Type.Object({
  dataFieldId: Type.String(),
  dataFieldName: Type.Optional(Type.String()),
  condition: Type.String(),
  rhsValue: Type.String(),
  dataMissingBehaviour: Type.String(),
  value: Type.Optional(Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Array(Type.Union([Type.String(), Type.Number()]))])),
  source: Type.String({ description: 'contextualAttribute, profile or missing' }),
  outcome: Type.Object({ result: Type.Boolean(), reason: Type.String() }),
});

const TreatmentExplanationOut = Type.Object({
  treatmentId: Type.String(),
  name: Type.String(),
  returned: Type.Boolean(),
  rank: Type.Optional(Type.String()),
  outcome: Type.String({ description: 'in words: returned, QA, fallback, held out, globally held out, "capped: 5 of 5 VIEWED in LAST_7D", not returned' }),
  status: Type.String(),
  servedVersionNumber: Type.Optional(Type.Integer()),
  reasons: Type.Array(Type.String(), {
    description:
      'why it was not returned: TYPE_MISSING, TYPE_LACKS_SURFACE, NOT_LIVE, SURFACE_REMOVED, NO_CONTENT_FOR_LANGUAGE, FREQUENCY_CAPPED, RULE_NOT_MET, RETURNED_ON_EARLIER_SURFACE, MUTUAL_EXCLUSION, MAXIMUM_COUNT_REACHED, HELD_OUT, MINIMUM_COUNT_NOT_MET, GLOBAL_HOLDOUT, FALLBACK_NOT_NEEDED',
  }),
  blockedBy: Type.Optional(Type.String({ description: 'the surface it was returned on, or the treatment of its mutual exclusion group that was' })),
  contentLanguageCode: Type.Optional(Type.String()),
  score: Type.Optional(Type.Number()),
  rules: Type.Array(RuleExplanationOut),
});

export const RuleExplanationSchema = RuleExplanationOut;

const ExplanationOut = Type.Object({
  languageCode: Type.String(),
  rankingPolicy: Type.String(),
  surfaces: Type.Array(
    Type.Object({
      surface: Type.String(),
      maximumTreatmentCount: Type.Integer(),
      minimumTreatmentCount: Type.Integer(),
      treatments: Type.Array(TreatmentExplanationOut),
    }),
  ),
});

/**
 * Why a user gets (or does not get) each treatment: the GetTreatments pipeline run over every
 * treatment of the project with the reasons kept. Ranking uses the posterior mean of the current
 * counters (`greedy`) instead of a random draw, so the same question gets the same answer.
 */
export const ExplainTreatmentsResponse = Type.Object({ response: GetTreatmentsResponse, explanation: ExplanationOut });

/** One handler for the admin operation and `/v1/ExplainTreatments`; nothing is logged or counted. */
export async function explain(body: Static<typeof GetTreatmentsRequest>, ctx: ExplainAdminDeps): Promise<Static<typeof ExplainTreatmentsResponse>> {
  await ctx.projects.projects.require(body.projectId);
  const [plan, profile, stats] = await Promise.all([
    ctx.delivery.catalogPlans.plan(body.projectId),
    ctx.profiles.profiles.get(body.projectId, body.userId),
    ctx.delivery.rankingStats.read(body.projectId),
  ]);
  // a merged pre-login id is explained as the user it stands for, as GetTreatments decides it
  const request = { ...body, userId: canonicalUserOf(body.userId, profile) };
  const result = selectTreatments(plan, request, profile, { policy: greedy(), stats }, ctx.now(), randomUUID(), { explain: true });
  return { response: result.response, explanation: result.explanation! };
}

export const explainTreatments = defineAdminOperation({
  operation: 'ExplainTreatments',
  command: 'explain-treatments',
  summary: 'Per requested surface and treatment: returned or not, and why (GetTreatments request body)',
  body: GetTreatmentsRequest,
  response: ExplainTreatmentsResponse,
  handler: async (body, ctx) => explain(body, ctx),
});

export const explainAdminOperations = [explainTreatments] as const;
