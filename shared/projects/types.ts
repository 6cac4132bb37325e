/**
 * Stored records of the management plane, kept in Redis as JSON. Timestamps are RFC 3339 UTC
 * strings (`toISOString()`), int64 ids decimal strings; the wire shapes are the TypeBox schemas.
 */

/** Where a management change came from (the web console sends TDS_CONSOLE). */
export type ModificationSource = 'API' | 'TDS_CONSOLE' | 'MODIFICATION_SOURCE_UNSPECIFIED';

export type Permission = 'DELIVERY' | 'LOG_EVENTS' | 'TREATMENT_MANAGEMENT';

export type DeliveryEndpoint = 'BASE' | 'ALT';

export interface Project {
  projectId: string;
  displayName: string;
  deliveryEndpoint: DeliveryEndpoint;
  createTime: string;
  /** 0–100 (two decimals); absent = 0 */
  globalHoldoutPercentage?: number;
}

export interface ApiKeyRecord {
  keyId: string;
  projectId: string;
  permissions: Permission[];
  description: string;
  createTime: string;
  revokeTime?: string;
  /** This key's request limit (per second, per API process); absent: RATE_LIMIT_PER_KEY. */
  requestsPerSecond?: number;
  /** sha256 hex of the secret part; the secret itself is never stored. */
  secretHash: string;
}
