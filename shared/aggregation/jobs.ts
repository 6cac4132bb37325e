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

/** Consumer group of the aggregation worker on the data-field-created stream. */
export const BACKFILL_GROUP = 'backfill';

/** One backfill job per field: a repeated enqueue of the same field is a no-op. */
export function backfillJobId(projectId: string, dataFieldId: string): string {
  return `backfill-${projectId}-${dataFieldId}`;
}
