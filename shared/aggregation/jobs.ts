/** Recompute (or backfill) data-field values from ClickHouse. */
export interface AggregationJob {
  kind: 'recompute';
  projectId?: string;
  dataFieldIds?: string[];
  reason: 'schedule' | 'backfill' | 'manual';
}
