import { randomUUID } from 'node:crypto';
import { GetTreatmentsRequest, GetTreatmentsResponse, prepareRequest, resolveRequestUser, selectTreatments } from '../../shared/delivery/index.js';
import { operationsUsing } from '../http/v1-operation.js';
import type { ApiServices } from '../compose-api.js';
import type { DeliveryStats } from '../../shared/platform/metrics.js';

/** What GetTreatments uses: the compiled catalogue, ranking, the profile, and the decision log. */
export type DeliveryOpsDeps = Pick<ApiServices, 'now' | 'metrics' | 'profiles' | 'delivery' | 'impact'>;
const defineOperation = operationsUsing<DeliveryOpsDeps>();

/**
 * The request path costs at most one Redis round trip, the user's profile (HGETALL), and none
 * when no treatment that could be served has rules or placeholders: the key, the project and
 * the plan come from memory, and ranking counters from a snapshot refreshed in the background.
 * A pre-login id merged into a user is decided and logged as that user (`resolveRequestUser`:
 * the profile read follows the merge; without one, the alias is read only when a holdout or a
 * QA list makes the answer depend on who the user is).
 */
export const getTreatments = defineOperation({
  operation: 'GetTreatments',
  summary: 'Ranked, personalised treatments for a user on each requested surface',
  permissions: ['DELIVERY'],
  keyParam: 'api_key',
  alt: true,
  body: GetTreatmentsRequest,
  response: GetTreatmentsResponse,
  /*
   * The engine's JSON.stringify, not the schema's compiled serializer: each returned treatment's
   * content is a JSON object string of hundreds of characters to escape, which fast-json-stringify
   * escapes one character at a time in JavaScript (2–3 % of the API's time per request) and the
   * engine natively. The text is the same: `selectTreatments` builds the answer with exactly the
   * schema's members, in its order (test/unit/delivery-response-json.test.ts compares real answers).
   */
  responseJson: (response) => JSON.stringify(response),
  handler: async (body, _auth, ctx) => {
    const nowMs = ctx.now();
    const plan = await ctx.delivery.catalogPlans.plan(body.projectId);
    // 400s before any Redis call
    const prepared = prepareRequest(plan, body);
    const [{ prepared: forUser, profile, resolved }, stats] = await Promise.all([
      resolveRequestUser(plan, prepared, nowMs, ctx.profiles.profiles),
      ctx.delivery.rankingStats.view(body.projectId),
    ]);
    const result = selectTreatments(plan, body, profile, { policy: ctx.delivery.rankingPolicy, stats }, nowMs, randomUUID(), { prepared: forUser });
    const { response } = result;
    countOutcome(ctx.metrics.delivery, response.userTreatments?.length ?? 0);
    // Off the request path: `record` only buffers; the records of this turn go to Redis together.
    const { decisions } = result;
    const { responseId } = response;
    ctx.impact.decisionLog.record({ projectId: body.projectId, userId: forUser.userId, responseId, decideTimeMs: nowMs, decisions, userResolved: resolved });
    return response;
  },
});

/** Plain increments: the figures are read only when Prometheus scrapes. */
function countOutcome(stats: DeliveryStats, returned: number): void {
  if (returned > 0) {
    stats.withTreatments++;
    stats.treatmentsReturned += returned;
  } else stats.empty++;
}

/** GetTreatments. */
export const deliveryOperations = [getTreatments] as const;
