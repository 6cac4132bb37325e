/** GetTreatments' wire shapes: the one definition of its request and response, validated by the API and typed for the logic. */
import { Type, type Static } from 'typebox';
import { Int64In, Int64Out, ProjectId, Strict, TimestampIn } from '../platform/http/common.schemas.js';

/** Exactly one value member; that rule (and duplicate keys) is checked by the domain so the 400 names the attribute. */
export const ContextualAttributeIn = Strict({
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

export const SurfaceIn = Strict({
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
export type DeliveryRequest = Static<typeof GetTreatmentsRequest>;
export type SurfaceRequest = Static<typeof SurfaceIn>;
export type ContextualAttribute = Static<typeof ContextualAttributeIn>;

export const UserTreatmentOut = Type.Object({
  treatmentId: Type.String(),
  treatmentTrackingId: Type.String(),
  surface: Type.String(),
  rank: Int64Out,
  treatmentType: Type.String(),
  treatmentContent: Type.String({ description: 'JSON object string: field name → value' }),
  contentLanguageCode: Type.String(),
});

export const GetTreatmentsResponse = Type.Object({
  responseId: Type.String(),
  userTreatments: Type.Optional(Type.Array(UserTreatmentOut, { description: 'absent when no treatment qualifies' })),
});
export type UserTreatment = Static<typeof UserTreatmentOut>;
