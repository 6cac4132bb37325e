/** D46: where a management change came from (the web console sends TDS_CONSOLE). */
export type ModificationSource = 'API' | 'TDS_CONSOLE' | 'MODIFICATION_SOURCE_UNSPECIFIED';

/**
 * Stored records of the management plane. These are what the stores keep in Redis (as JSON);
 * the wire shapes of the API live in `shared/schemas/` and are produced from these by the
 * presenters. Timestamps are stored as RFC 3339 UTC strings (`toISOString()`), int64 ids as
 * decimal strings.
 */

export type Permission = 'DELIVERY' | 'LOG_EVENTS' | 'TREATMENT_MANAGEMENT';

export type DeliveryEndpoint = 'BASE' | 'ALT';

export interface Project {
  projectId: string;
  displayName: string;
  deliveryEndpoint: DeliveryEndpoint;
  createTime: string;
  /** D37: 0–100 (two decimals); absent = 0 */
  globalHoldoutPercentage?: number;
}

export interface ApiKeyRecord {
  keyId: string;
  projectId: string;
  permissions: Permission[];
  description: string;
  createTime: string;
  revokeTime?: string;
  /** sha256 hex of the secret part; the secret itself is never stored. */
  secretHash: string;
}

export interface Surface {
  projectId: string;
  name: string;
  description: string;
  createTime: string;
}

export type ContentFieldDataType = 'CONTENT_FIELD_DATA_TYPE_UNSPECIFIED' | 'STRING' | 'HTML';
export type DeliveryType = 'EMAIL' | 'IN_APP' | 'NOTIFICATION' | 'WEBHOOK';

export interface ContentFieldType {
  fieldName: string;
  maximumLengthAllowed: number;
  isPerLanguage: boolean;
  dataType: ContentFieldDataType;
}

export interface TreatmentType {
  treatmentTypeId: string;
  projectId: string;
  treatmentTypeName: string;
  deliveryType: DeliveryType;
  contentFieldTypes: ContentFieldType[];
  /** surface names */
  surfaces: string[];
  lastModifiedBy: string;
  lastModifiedTimestamp: string;
  /** D46: absent on types stored before it existed (= API) */
  modificationSource?: ModificationSource;
  createTime: string;
}

export interface ContentField {
  fieldName: string;
  stringValue: string;
}

export interface Content {
  contentByLanguage: { languageCode: { languageCode: string }; contentFields: ContentField[] }[];
  languageAgnosticContentFields: ContentField[];
}

export type Condition =
  | 'UNSPECIFIED_CONDITION'
  | 'LESS_THAN'
  | 'LESS_THAN_OR_EQUALS'
  | 'GREATER_THAN'
  | 'GREATER_THAN_OR_EQUALS'
  | 'EQUALS'
  | 'NOT_EQUALS'
  | 'IS_AFTER_CURRENT_TIMESTAMP_MINUS'
  | 'IS_BEFORE_CURRENT_TIMESTAMP_MINUS'
  | 'CONTAINS'
  | 'ANY_OF'
  | 'DOES_NOT_CONTAIN'
  | 'NOT_ANY_OF'
  | 'CONTAINS_ANY_OF'
  | 'DOES_NOT_CONTAIN_ANY_OF';

export type DataMissingBehaviour =
  | 'ELIGIBILITY_RULE_DATA_MISSING_BEHAVIOUR_UNSPECIFIED'
  | 'EVALUATE_TO_ELIGIBLE'
  | 'EVALUATE_TO_INELIGIBLE';

export interface EligibilityRule {
  dataFieldId: string;
  condition: Condition;
  rhsValue: string;
  dataMissingBehaviour: DataMissingBehaviour;
}

export interface TreatmentVersionRecord {
  /** 1, 2, 3 ... in creation order */
  versionNumber: number;
  /** set when the version was published (shouldPublish); unpublished versions are drafts */
  publishTime?: string;
  startTimestamp: string;
  /** unset: never ends */
  endTimestamp?: string;
  tags: string[];
  content: Content;
  eligibilityRules: EligibilityRule[];
  removedSurfaces: string[];
  /** int64 as decimal string */
  targetActionEventId?: string;
  createTime: string;
  lastModifiedTimestamp: string;
}

export interface TreatmentRecord {
  treatmentId: string;
  projectId: string;
  name: string;
  description: string;
  treatmentTypeId: string;
  externalTreatmentId?: string;
  mutualExclusionGroupId?: string;
  paused: boolean;
  lastModifiedBy: string;
  lastModifiedTimestamp: string;
  modificationSource: ModificationSource;
  createTime: string;
  versions: TreatmentVersionRecord[];
  // Delivery controls (D37, D39, D42, D43): treatment-level, so changing them creates no version.
  /** 0–100 (two decimals); absent = 0 */
  holdoutPercentage?: number;
  /** absent = none */
  qaUserIds?: string[];
  /** absent = false */
  isFallback?: boolean;
  frequencyCap?: FrequencyCap;
}

/** D43: a user whose count of `countOf` for the treatment in the window reached `maxCount` does not qualify. */
export interface FrequencyCap {
  maxCount: number;
  /** LAST_<n>D (D22) */
  windowName: string;
  countOf: 'VIEWED' | 'RETURNED';
}

export interface MutualExclusionGroup {
  projectId: string;
  mutualExclusionGroupId: string;
  name: string;
}

export type DataFieldType =
  | 'UNSPECIFIED_DATA_FIELD_TYPE'
  | 'INTEGER'
  | 'DOUBLE'
  | 'STRING'
  | 'BOOLEAN'
  | 'TIMESTAMP_SECONDS'
  | 'INTEGER_LIST'
  | 'DOUBLE_LIST'
  | 'STRING_LIST';

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

export type Aggregation =
  | { dailyCountAggregation: { windowName: string } }
  | { firstTimestampAggregation: Record<string, never> }
  | { latestTimestampAggregation: Record<string, never> }
  | { daysSinceFirstTimestampAggregation: Record<string, never> }
  | { daysSinceLastTimestampAggregation: Record<string, never> };

export type DataFieldParams =
  | { userAttributeDataFieldParams: { propertyName: string } }
  | {
      treatmentDataFieldParams: {
        treatmentInteractionType: TreatmentInteractionType;
        treatmentId?: string;
        surfaceId?: string;
        surfaceName?: string;
        isDistinctInteraction?: boolean;
      } & Aggregation;
    }
  | {
      eventDataFieldParams: {
        eventSchemaName: string;
        propertyValueByPropertyName?: Record<string, PropertyValue>;
      } & Aggregation;
    };

/**
 * A data field: either registered by name (InsertDataField; `name` set, source userProperty)
 * or resolved from params (GetDataFields; `params` set). Ids are shared across both kinds.
 */
export interface DataFieldRecord {
  dataFieldId: string;
  projectId: string;
  /** the name usable as a contextual attribute key; set for user-property fields */
  name?: string;
  dataFieldType: DataFieldType;
  /** canonical params for GetDataFields-resolved fields */
  params?: DataFieldParams;
  createTime: string;
}
