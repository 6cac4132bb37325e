import type { TreatmentInteractionType } from '../ingestion/index.js';
import type { DataFieldType, PropertyValue } from '../rules/index.js';

export type { DataFieldType } from '../rules/index.js';


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
