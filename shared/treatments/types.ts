import type { ModificationSource } from '../projects/index.js';
import type { EligibilityRule } from '../rules/index.js';

export type { Condition, DataMissingBehaviour, EligibilityRule } from '../rules/index.js';

export interface ContentField {
  fieldName: string;
  stringValue: string;
}

export interface Content {
  contentByLanguage: { languageCode: { languageCode: string }; contentFields: ContentField[] }[];
  languageAgnosticContentFields: ContentField[];
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
  // Delivery controls (holdout, QA users, fallback, frequency cap): treatment-level, so changing them creates no version.
  /** 0–100 (two decimals); absent = 0 */
  holdoutPercentage?: number;
  /** absent = none */
  qaUserIds?: string[];
  /** absent = false */
  isFallback?: boolean;
  frequencyCap?: FrequencyCap;
}

/** A user whose count of `countOf` for the treatment in the window reached `maxCount` does not qualify. */
export interface FrequencyCap {
  maxCount: number;
  /** LAST_<n>D */
  windowName: string;
  countOf: 'VIEWED' | 'RETURNED';
}
