import { LogEventsRequest, LogTreatmentInteractionRequest, EMAIL_INTERACTION_TYPES, EmptyResponse } from '../../shared/ingestion/index.js';
import { invalidField, InvalidArgumentError } from '../../shared/platform/errors.js';
import { int64String } from '../../shared/platform/int64.js';
import type { DeliveryType } from '../../shared/catalog/index.js';
import { operationsUsing } from '../http/v1-operation.js';
import type { ApiServices } from '../compose-api.js';
import type { InteractionJob } from '../../shared/ingestion/index.js';
import { acceptedTimeProblem, acceptedTimes, checkTrackingId, normalizeEvents } from '../../shared/ingestion/event-input.codec.js';

/** What the ingestion handlers use: the producers and their backlog, and the catalogue an interaction is checked against. */
export type IngestOpsDeps = Pick<ApiServices, 'now' | 'config' | 'ingestion' | 'impact' | 'delivery' | 'catalog' | 'treatments'>;
const defineOperation = operationsUsing<IngestOpsDeps>();

export const logEvents = defineOperation({
  operation: 'LogEvents',
  summary: 'Ingest events of one user; answers {} once they are durably queued',
  permissions: ['LOG_EVENTS'],
  keyParam: 'api-key',
  gzip: true,
  body: LogEventsRequest,
  response: EmptyResponse,
  handler: async (body, _auth, ctx) => {
    const events = normalizeEvents(body.events, acceptedTimes(ctx.now(), ctx.config.retentionDays));
    const full = ctx.ingestion.ingestBacklog.admission();
    if (full) throw full;
    const job = { kind: 'events' as const, projectId: body.projectId, userId: body.userId, events, origin: { source: 'api' as const }, receivedAt: ctx.now() };
    await ctx.ingestion.ingest.logEvents.enqueue(job, { weight: events.length });
    return {};
  },
});

const EMAIL_TYPES: ReadonlySet<string> = new Set(EMAIL_INTERACTION_TYPES);

/**
 * The treatment's delivery type (null: no such treatment), from the compiled catalogue delivery
 * already keeps in memory, so an interaction costs no Redis read beyond its enqueue. A treatment
 * created in the last second may not be compiled yet: only then are the stores asked.
 */
async function treatmentDeliveryType(
  ctx: Pick<ApiServices, 'delivery' | 'treatments' | 'catalog'>,
  projectId: string,
  treatmentId: string,
): Promise<DeliveryType | undefined | null> {
  const planned = (await ctx.delivery.catalogPlans.plan(projectId)).treatmentsById.get(treatmentId);
  if (planned) return planned.type?.deliveryType;
  const treatment = await ctx.treatments.treatments.get(projectId, treatmentId);
  if (!treatment) return null;
  return (await ctx.catalog.treatmentTypes.get(projectId, treatment.treatmentTypeId))?.deliveryType;
}

/**
 * Whether the surface is registered in the project: from the compiled catalogue, and only when it
 * is not there (a surface created in the last second) from the store. Interactions on unknown
 * surfaces are refused, so the ranking counters only grow with the catalogue.
 */
async function surfaceExists(ctx: Pick<ApiServices, 'delivery' | 'catalog'>, projectId: string, surface: string): Promise<boolean> {
  if ((await ctx.delivery.catalogPlans.plan(projectId)).surfaces.has(surface)) return true;
  return (await ctx.catalog.surfaces.get(projectId, surface)) !== undefined;
}

export const logTreatmentInteraction = defineOperation({
  operation: 'LogTreatmentInteraction',
  summary: 'Record what a user did with a returned treatment',
  permissions: ['DELIVERY'],
  keyParam: 'api-key',
  gzip: true,
  body: LogTreatmentInteractionRequest,
  response: EmptyResponse,
  handler: async (body, _auth, ctx) => {
    const full = ctx.ingestion.ingestBacklog.admission();
    if (full) throw full;
    // An omitted treatmentId is the tracking id's; a given one must be the tracking id's (400)
    const treatmentId = checkTrackingId(body.treatmentTrackingId, body.treatmentId);
    const micros = int64String('interactionTimeMicros', body.interactionTimeMicros);
    // the interaction's time is its row's partition key: bounded like an event's
    const timeProblem = acceptedTimeProblem(Number(BigInt(micros) / 1000n), acceptedTimes(ctx.now(), ctx.config.retentionDays));
    if (timeProblem !== undefined) throw invalidField('interactionTimeMicros', `${timeProblem}; microseconds since the epoch`);
    const idField = body.treatmentId === undefined ? 'treatmentTrackingId' : 'treatmentId';
    const deliveryType = await treatmentDeliveryType(ctx, body.projectId, treatmentId);
    if (deliveryType === null) throw invalidField(idField, `treatment "${treatmentId}" does not exist in project "${body.projectId}"`);
    if (body.surface !== undefined && !(await surfaceExists(ctx, body.projectId, body.surface)))
      throw invalidField('surface', `surface "${body.surface}" is not registered in project "${body.projectId}"`);
    if (EMAIL_TYPES.has(body.interactionType) && deliveryType !== 'EMAIL') {
      throw invalidField('interactionType', `${body.interactionType} applies only to treatments whose delivery type is EMAIL`);
    }
    // userId or surface omitted: the workers read them from the decision log (API processes
    // never open ClickHouse); the job carries what was given, to be checked against the decision.
    const resolve = body.userId === undefined || body.surface === undefined;
    if (resolve && !ctx.impact.decisionLogEnabled) {
      const missing = (['userId', 'treatmentId', 'surface'] as const).filter((f) => body[f] === undefined);
      throw new InvalidArgumentError(
        `${missing.join(', ')} required: without a decision log (DECISION_LOG=off) an interaction must name its user, treatment and surface`,
        missing.map((field) => ({ field, description: 'required when DECISION_LOG=off' })),
      );
    }
    await ctx.ingestion.ingest.interactions.enqueue({
      kind: 'interaction',
      projectId: body.projectId,
      ...(body.userId !== undefined ? { userId: body.userId } : {}),
      treatmentId,
      treatmentTrackingId: body.treatmentTrackingId,
      ...(body.surface !== undefined ? { surface: body.surface } : {}),
      ...(resolve ? { resolve: true as const } : {}),
      interactionType: body.interactionType,
      interactionTimeMicros: micros,
      actionName: body.actionName,
      receivedAt: ctx.now(),
    } as InteractionJob);
    return {};
  },
});

export const ingestOperations = [logEvents, logTreatmentInteraction] as const;
