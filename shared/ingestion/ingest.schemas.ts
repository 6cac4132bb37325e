import { Type } from 'typebox';
import { Int64In, ProjectId, Strict, TimestampIn, Empty } from '../platform/http/common.schemas.js';

/** PropertyValue: exactly one member (the union of one-member strict objects enforces it). */
export const PropertyValueIn = Type.Union(
  [
    Strict({ longValue: Int64In }),
    Strict({ doubleValue: Type.Number() }),
    Strict({ stringValue: Type.String({ maxLength: 8192 }) }),
    Strict({ booleanValue: Type.Boolean() }),
    Strict({ timestampValue: TimestampIn }),
  ],
  { description: 'exactly one of longValue, doubleValue, stringValue, booleanValue, timestampValue' },
);

const PropertyName = '^.{1,256}$';
export const PropertyMap = Type.Record(Type.String({ pattern: PropertyName }), PropertyValueIn, { maxProperties: 256 });

const Short = Type.String({ maxLength: 256 });

export const ExternalEventIn = Strict({
  eventName: Type.String({ minLength: 1, maxLength: 256 }),
  clientEventTimestamp: TimestampIn,
  insertId: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
  eventProperties: Type.Optional(PropertyMap),
  userProperties: Type.Optional(PropertyMap),
  serverReceivedTimestamp: Type.Optional(TimestampIn),
  preLoginTempUserId: Type.Optional(Short),
  sessionId: Type.Optional(Short),
  country: Type.Optional(Short),
  region: Type.Optional(Short),
  city: Type.Optional(Short),
  ipAddress: Type.Optional(Short),
  deviceId: Type.Optional(Short),
  appVersionId: Type.Optional(Short),
});

export const MAX_EVENTS_PER_REQUEST = 1000;

export const LogEventsRequest = Strict({
  projectId: ProjectId,
  userId: Type.String({ minLength: 1, maxLength: 256 }),
  events: Type.Array(ExternalEventIn, { minItems: 1, maxItems: MAX_EVENTS_PER_REQUEST }),
});

export const INTERACTION_TYPES = ['VIEWED', 'CLICKED', 'SNOOZED', 'DISMISSED', 'CTA_COMPLETED', 'SWIPE'] as const;
export const EMAIL_INTERACTION_TYPES = [
  'DELIVERY_SENT',
  'DELIVERED',
  'BOUNCED',
  'HARD_BOUNCED',
  'SOFT_BOUNCED',
  'DROPPED',
  'SPAM_REPORTED',
  'UNSUBSCRIBED',
  'GROUP_UNSUBSCRIBED',
  'GROUP_RESUBSCRIBED',
] as const;

export type InteractionType = (typeof INTERACTION_TYPES)[number] | (typeof EMAIL_INTERACTION_TYPES)[number];

export const LogTreatmentInteractionRequest = Strict({
  projectId: ProjectId,
  /** Optional; omitted, the workers read it from the decision log by the tracking id's response id. */
  userId: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
  treatmentTrackingId: Type.String({ minLength: 3, maxLength: 256 }),
  /** Optional; omitted, it is the tracking id's part before the first `_`. */
  treatmentId: Type.Optional(Type.String({ minLength: 1, maxLength: 32 })),
  /** Optional; omitted, the workers read it from the decision log. */
  surface: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
  // Unsafe only names the static type (a union built from an array is typed `never`); the schema is the union of constants
  interactionType: Type.Unsafe<InteractionType>(Type.Union([...INTERACTION_TYPES, ...EMAIL_INTERACTION_TYPES].map((t) => Type.Literal(t)))),
  interactionTimeMicros: Int64In,
  actionName: Type.Optional(Type.String({ maxLength: 256 })),
});

export const EmptyResponse = Empty;
