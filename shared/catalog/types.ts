import type { ModificationSource } from '../projects/index.js';

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
  /** Absent on types stored before it existed (= API) */
  modificationSource?: ModificationSource;
  createTime: string;
}

export interface MutualExclusionGroup {
  projectId: string;
  mutualExclusionGroupId: string;
  name: string;
}
