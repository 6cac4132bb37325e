import type { RpcCall } from '../platform/rpc-call.js';
import type { PropertyValue } from '../rules/index.js';

export type TreatmentInteractionType =
  'TREATMENT_INTERACTION_TYPE_UNSPECIFIED' | 'SENT' | 'VIEWED' | 'CLICKED' | 'SNOOZED' | 'DISMISSED' | 'CTA_COMPLETED' | 'SWIPE';

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

/** A dead letter as ListDeadLetters answers it. */
export interface DeadLetter {
  messageId: string;
  source: string;
  reason: string;
  receiveTime: string;
  dataType: string;
  /** At most 64 KiB of the payload. */
  payloadBase64: string;
  /** The whole payload's size and SHA-256 (hex); 0 and '' for a dead letter stored before they were recorded. */
  payloadBytes: number;
  payloadSha256: string;
  /** Whether payloadBase64 holds only the beginning of the payload. */
  payloadTruncated: boolean;
}

/** Ingestion's reads the API asks the workers role for (warehouse-rpc). */
export const INGESTION_CALLS = {
  listDeadLetters: { name: 'listDeadLetters', answerTimeoutMs: 30_000 } as RpcCall<[projectId: string, limit: number], DeadLetter[]>,
};
