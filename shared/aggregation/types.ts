import type { RpcCall } from '../platform/rpc-call.js';
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

/** The rows that count for one data field: the same matching rules as the incremental path. */
export type AggregationSource =
  | { table: 'events'; eventName: string; properties: Readonly<Record<string, PropertyValue>> }
  | { table: 'interactions'; interactionTypes: readonly string[]; treatmentId?: string; surface?: string };

/** dc: counts per day; ft / lt: first / latest timestamp (all-time). */
export type AggregationKind = 'dc' | 'ft' | 'lt';

export interface AggregationRead {
  projectId: string;
  source: AggregationSource;
  kind: AggregationKind;
  /** Users whose deletion is pending → its time: their rows ingested up to then are left out. */
  deletedUsers: ReadonlyMap<string, number>;
  /** The first instant day counts read (the window plus grace days). */
  rangeStartMs: number;
}

export interface AggregationPageQuery extends AggregationRead {
  /** Users after this id … */
  after: string;
  /** … up to and including this one. */
  upper: string;
  /** Each tracking id counted once, on its first-seen day (distinct interaction counts). */
  distinct: boolean;
  /** The window's first day (yyyymmdd): day counts before it are not returned. */
  windowStartDay: number;
  /** Only these users of the range (a second read of users left for later). */
  userIds?: readonly string[];
}

/** One user's state: `ms` (ft / lt), `dayPairs` [day, count, …] (dc), or `marks` [(day, trackingId)] (distinct dc). */
export interface AggregationPageRow {
  user_id: string;
  ms?: string;
  dayPairs?: string[];
  marks?: [number | string, string][];
}

/** What RunAggregations answers. */
export interface AggregationRunCounts {
  dataFieldsRecomputed: number;
  usersUpdated: number;
}

/** What the API asks the workers role for (warehouse-rpc): RunAggregations recomputes every data field of a project. */
export const AGGREGATION_CALLS = {
  runAggregations: { name: 'runAggregations', answerTimeoutMs: 15 * 60_000 } as RpcCall<[projectId: string], AggregationRunCounts>,
};
