export type TreatmentInteractionType =
  | 'TREATMENT_INTERACTION_TYPE_UNSPECIFIED'
  | 'SENT'
  | 'VIEWED'
  | 'CLICKED'
  | 'SNOOZED'
  | 'DISMISSED'
  | 'CTA_COMPLETED'
  | 'SWIPE';

/** A PropertyValue in its JSON form: exactly one member set. longValue is a decimal string. */
export type PropertyValue =
  | { longValue: string }
  | { doubleValue: number }
  | { stringValue: string }
  | { booleanValue: boolean }
  | { timestampValue: string };

/**
 * What an event carries besides its name and times, the same on every path (LogEvents body,
 * Pub/Sub payload, queued job, ClickHouse row mapping); each path adds its own timestamp form.
 */
export interface EventAttributes {
  insertId?: string;
  eventProperties?: Record<string, PropertyValue>;
  userProperties?: Record<string, PropertyValue>;
  sessionId?: string;
  preLoginTempUserId?: string;
  country?: string;
  region?: string;
  city?: string;
  ipAddress?: string;
  deviceId?: string;
  appVersionId?: string;
}
