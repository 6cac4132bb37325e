import { conversionRate, IMPACT_CALLS, upliftOf } from '../../shared/impact/index.js';
import { parseRfc3339 } from '../../shared/platform/rfc3339.js';
import { FailedPreconditionError, InvalidArgumentError, NotFoundError, type ErrorDetail } from '../../shared/platform/errors.js';
import { int64String } from '../../shared/platform/int64.js';
import { GetTreatmentReportBody, GetTreatmentReportResponse, ListDecisionsBody, ListDecisionsResponse } from '../../shared/impact/index.js';
import { operationsUsing } from '../http/v1-operation.js';
import type { ApiServices } from '../compose-api.js';

/** What the impact handlers use: the warehouse's reads, whether a decision log is kept, the treatment and its target action's name. */
export type ImpactOpsDeps = Pick<ApiServices, 'now' | 'warehouse' | 'impact' | 'treatments' | 'catalog'>;
const defineOperation = operationsUsing<ImpactOpsDeps>();

const MANAGEMENT = ['TREATMENT_MANAGEMENT'] as const;

/** The decision log's readers answer 400 on a deployment that keeps none. */
function requireDecisionLog(ctx: Pick<ApiServices, 'impact'>, operation: string): void {
  if (ctx.impact.decisionLogEnabled) return;
  throw new FailedPreconditionError(`${operation} needs the decision log, which this deployment turns off (DECISION_LOG=off)`);
}

/** A user's decisions, newest first (debugging what a user was shown or withheld). */
export const listDecisions = defineOperation({
  operation: 'ListDecisions',
  summary: 'A user’s most recent decisions (treatments returned or withheld), newest first',
  permissions: MANAGEMENT,
  body: ListDecisionsBody,
  response: ListDecisionsResponse,
  handler: async (body, _auth, ctx) => {
    requireDecisionLog(ctx, 'ListDecisions');
    return { decisions: await ctx.warehouse.call(IMPACT_CALLS.listDecisions, body.projectId, body.userId, body.limit ?? 20) };
  },
});

function periodOf(body: { startTimestamp?: string; endTimestamp?: string }, nowMs: number): { startMs: number; endMs: number } {
  const problems: ErrorDetail[] = [];
  const parse = (field: 'startTimestamp' | 'endTimestamp', dflt: number): number => {
    const text = body[field];
    if (text === undefined) return dflt;
    const ms = parseRfc3339(text);
    if (ms === undefined) {
      problems.push({ field, description: `"${text}" is not a valid RFC 3339 timestamp` });
      return dflt;
    }
    return Math.floor(ms);
  };
  const startMs = parse('startTimestamp', 0);
  const endMs = parse('endTimestamp', nowMs);
  if (problems.length === 0 && endMs <= startMs) problems.push({ field: 'endTimestamp', description: 'must be after startTimestamp' });
  if (problems.length > 0) throw new InvalidArgumentError(`invalid report period: ${problems.map((p) => `${p.field}: ${p.description}`).join('; ')}`, problems);
  return { startMs, endMs };
}

/**
 * TREATED vs HOLDOUT for one treatment over a period (default: everything up to now),
 * counted in ClickHouse (through the workers role); rates and uplift only with a target action.
 */
export const getTreatmentReport = defineOperation({
  operation: 'GetTreatmentReport',
  summary: 'Users, impressions, clicks and conversions of a treatment’s TREATED and HOLDOUT groups, with the uplift and its 95 % interval',
  permissions: MANAGEMENT,
  body: GetTreatmentReportBody,
  response: GetTreatmentReportResponse,
  handler: async (body, _auth, ctx) => {
    requireDecisionLog(ctx, 'GetTreatmentReport');
    const treatmentId = int64String('treatmentId', body.treatmentId);
    const nowMs = ctx.now();
    const { startMs, endMs } = periodOf(body, nowMs);
    const treatment = await ctx.treatments.treatments.get(body.projectId, treatmentId);
    if (!treatment) throw new NotFoundError(`treatment ${treatmentId} does not exist in project ${body.projectId}`);
    // The target action of the newest version is the treatment's current goal.
    const eventId = treatment.versions[treatment.versions.length - 1]?.targetActionEventId;
    const conversionEventName = eventId === undefined ? undefined : (await ctx.catalog.eventSchemas.getById(body.projectId, eventId))?.eventName;
    const attributionWindowDays = body.attributionWindowDays ?? 7;
    const query = { projectId: body.projectId, treatmentId, startMs, endMs, attributionWindowDays, conversionEventName };
    const counts = await ctx.warehouse.call(IMPACT_CALLS.treatmentReport, query);
    const withGoal = conversionEventName !== undefined;
    const groups = counts.map((g) => {
      const rate = conversionRate(g);
      return {
        group: g.group,
        users: g.users,
        impressions: g.impressions,
        clicks: g.clicks,
        ...(withGoal ? { conversions: g.conversions } : {}),
        ...(withGoal && rate !== undefined ? { conversionRate: rate } : {}),
      };
    });
    const treated = counts.find((g) => g.group === 'TREATED')!;
    const holdout = counts.find((g) => g.group === 'HOLDOUT')!;
    const uplift = withGoal ? upliftOf(treated, holdout) : undefined;
    return {
      report: {
        treatmentId,
        ...(withGoal ? { conversionEventName } : {}),
        groups,
        ...(uplift ? { uplift } : {}),
        computeTime: new Date(ctx.now()).toISOString(),
      },
    };
  },
});

/** The measuring-impact operations: decision log, treatment reports. */
export const impactOperations = [listDecisions, getTreatmentReport] as const;
