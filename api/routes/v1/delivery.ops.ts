import { randomUUID } from 'node:crypto';
import { Type, type Static } from 'typebox';
import { prepareRequest, requestNeedsProfile, selectTreatments } from '../../../shared/domain/delivery.js';
import { UnavailableError } from '../../../shared/errors.js';
import { Int64In, Int64Out, ProjectId, Strict, TimestampIn } from '../../../shared/schemas/common.js';
import type { DeliveryRuntime, ServiceContext } from '../../../shared/service-context.js';
import type { StoredProfile } from '../../../shared/stores/profile.store.js';
import { defineOperation, type V1Operation } from '../../v1-operation.js';
import type { DeliveryStats } from '../../../shared/metrics.js';

// ------------------------------------------------------------------------------------------------
// Wire shapes (spec GetTreatments, UserTreatment; D26a, D28)

/** D26a: exactly one value member; that rule (and duplicate keys) is checked by the domain so the 400 names the attribute. */
const ContextualAttributeIn = Strict({
  key: Type.String({ minLength: 1, maxLength: 256 }),
  stringValue: Type.Optional(Type.String({ maxLength: 65_536 })),
  integerValue: Type.Optional(Int64In),
  doubleValue: Type.Optional(Type.Number()),
  // real clients send booleans as 0/1 too
  boolValue: Type.Optional(Type.Union([Type.Boolean(), Type.Number()])),
  booleanValue: Type.Optional(Type.Union([Type.Boolean(), Type.Number()])),
  timestampValue: Type.Optional(TimestampIn),
  timestampMicrosValue: Type.Optional(Int64In),
});

const SurfaceIn = Strict({
  surface: Type.String({ minLength: 1, maxLength: 128 }),
  maximumTreatmentCount: Type.Optional(Int64In),
  minimumTreatmentCount: Type.Optional(Int64In),
});

export const GetTreatmentsRequest = Strict({
  projectId: ProjectId,
  userId: Type.String({ minLength: 1, maxLength: 256 }),
  contextualAttributes: Type.Optional(Type.Array(ContextualAttributeIn, { maxItems: 1000 })),
  surfaces: Type.Array(SurfaceIn, { maxItems: 100 }),
  languageCode: Type.Optional(Type.String({ maxLength: 64 })),
  maximumTreatmentCount: Type.Optional(Int64In),
});
export type GetTreatmentsBody = Static<typeof GetTreatmentsRequest>;

const UserTreatmentOut = Type.Object({
  treatmentId: Type.String(),
  treatmentTrackingId: Type.String(),
  surface: Type.String(),
  rank: Int64Out,
  treatmentType: Type.String(),
  treatmentContent: Type.String({ description: 'JSON object string: field name → value (D30)' }),
  contentLanguageCode: Type.String(),
});

export const GetTreatmentsResponse = Type.Object({
  responseId: Type.String(),
  userTreatments: Type.Optional(Type.Array(UserTreatmentOut, { description: 'absent when no treatment qualifies' })),
});

// ------------------------------------------------------------------------------------------------

export function requireDelivery(ctx: ServiceContext): DeliveryRuntime {
  if (ctx.delivery === undefined) throw new UnavailableError('delivery is not configured in this process');
  return ctx.delivery;
}

const NO_PROFILE: StoredProfile = Object.freeze({ userProperties: {}, fields: {} });

/**
 * The request path costs at most one Redis round trip, the user's profile (HGETALL), and none
 * when no treatment that could be served has rules or placeholders: the key, the project and
 * the plan come from memory, and ranking counters from a snapshot refreshed in the background.
 */
export const getTreatments = defineOperation({
  operation: 'GetTreatments',
  summary: 'Ranked, personalised treatments for a user on each requested surface',
  permissions: ['DELIVERY'],
  keyParam: 'api_key',
  alt: true,
  body: GetTreatmentsRequest,
  response: GetTreatmentsResponse,
  handler: async (body, _auth, ctx) => {
    const delivery = requireDelivery(ctx);
    const nowMs = ctx.now();
    const plan = await delivery.catalog.plan(body.projectId);
    // 400s before any Redis call
    const prepared = prepareRequest(plan, body);
    const [profile, stats] = await Promise.all([
      requestNeedsProfile(plan, prepared, nowMs) ? ctx.profiles.get(body.projectId, body.userId) : NO_PROFILE,
      delivery.rankingStats.view(body.projectId),
    ]);
    const { response } = selectTreatments(plan, body, profile, { policy: delivery.policy, stats }, nowMs, randomUUID(), { prepared });
    countOutcome(ctx.metrics.delivery, response.userTreatments?.length ?? 0);
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
export const deliveryOperations = [getTreatments] as unknown as V1Operation[];
