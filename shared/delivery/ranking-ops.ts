import type { InteractionJob } from '../ingestion/index.js';
import { actionsField, viewsField } from './ranking/ranking-policy.js';

/** Interactions that count as the target action of a view. */
const ACTION_TYPES: ReadonlySet<string> = new Set(['CLICKED', 'CTA_COMPLETED']);

/** A ranking counter update: HINCRBY `field` of the project's ranking hash by `by`. */
export type RankingDelta = [field: string, by: number];

/**
 * The counter updates of one interaction, for the interactions worker (applied exactly once by
 * `RankingCounterStore.apply`, guarded by the job's ranking marker). The API admits only
 * interactions on surfaces and treatments of the catalogue, so the hash holds at most
 * 2 fields per (surface, treatment) pair of the project.
 */
export function rankingOps(job: InteractionJob): RankingDelta[] {
  if (job.interactionType === 'VIEWED') return [[viewsField(job.surface, job.treatmentId), 1]];
  if (ACTION_TYPES.has(job.interactionType)) return [[actionsField(job.surface, job.treatmentId), 1]];
  return [];
}
