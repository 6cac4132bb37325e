import { normalizeDataFieldParams, type DataFieldParamsInput, type NormalizedParams } from '../aggregation/index.js';
import type { TreatmentInteractionType } from '../ingestion/index.js';

/**
 * The data fields every new surface comes with, so a rule such as "seen fewer than 3 things
 * on this surface today" needs no set-up. They go through the same normalisation as GetDataFields
 * params, so asking GetDataFields for the same thing later returns the same dataFieldId.
 */
export const PROVISIONED_INTERACTION_TYPES: readonly TreatmentInteractionType[] = ['VIEWED', 'CLICKED', 'DISMISSED'];

const AGGREGATIONS: readonly DataFieldParamsInput['treatmentDataFieldParams'][] = [
  { treatmentInteractionType: 'VIEWED', dailyCountAggregation: { windowName: 'LAST_1D' } },
  { treatmentInteractionType: 'VIEWED', dailyCountAggregation: { windowName: 'LAST_7D' } },
  { treatmentInteractionType: 'VIEWED', daysSinceLastTimestampAggregation: {} },
];

/** The 9 params entries of a surface: VIEWED, CLICKED, DISMISSED × daily count LAST_1D, LAST_7D, days since last. */
export function surfaceDataFieldParams(surfaceName: string): NormalizedParams[] {
  return PROVISIONED_INTERACTION_TYPES.flatMap((treatmentInteractionType) =>
    AGGREGATIONS.map((aggregation) =>
      normalizeDataFieldParams({ treatmentDataFieldParams: { ...aggregation!, treatmentInteractionType, surfaceName } }, 'surface'),
    ),
  );
}
