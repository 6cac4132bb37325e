import type { PropertyValue } from '../rules/index.js';

export type TreatmentInteractionType =
  | 'TREATMENT_INTERACTION_TYPE_UNSPECIFIED'
  | 'SENT'
  | 'VIEWED'
  | 'CLICKED'
  | 'SNOOZED'
  | 'DISMISSED'
  | 'CTA_COMPLETED'
  | 'SWIPE';

export type { PropertyValue } from '../rules/index.js';

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
