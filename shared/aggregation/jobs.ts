/**
 * Recompute (or backfill) data-field values from ClickHouse; without `projectId`, one recompute per
 * project. `redis_restart`: Redis restarted and may have lost its last writes to the profiles.
 */
export interface AggregationJob {
  kind: 'recompute';
  projectId?: string;
  dataFieldIds?: string[];
  reason: 'schedule' | 'backfill' | 'manual' | 'redis_restart';
}
