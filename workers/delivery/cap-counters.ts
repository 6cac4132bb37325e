import type { InvalidationBus } from '../../shared/platform/redis/invalidation-bus.js';
import type { FrequencyCap, TreatmentRecord } from '../../shared/treatments/index.js';
import type { InteractionJob } from '../../shared/ingestion/index.js';
import type { DecisionRecord } from '../../shared/impact/index.js';
import { capCounterField, type ProfileOp } from '../../shared/profiles/index.js';
import { ProjectCatalogCache } from '../project-catalog-cache.js';
import type { InteractionOpsProvider } from '../ingestion/interactions.processor.js';

const DAY_MS = 86_400_000;

/** The treatments of a project with a frequency cap counting RETURNED decisions. */
export type ReturnedCaps = (projectId: string) => Promise<ReadonlySet<string>>;

export type TreatmentLoader = (projectId: string) => Promise<TreatmentRecord[]>;

/**
 * Per project, which treatments have a frequency cap counting VIEWED interactions or RETURNED
 * decisions, cached per process like the data fields (see ProjectCatalogCache).
 */
export class CapCache extends ProjectCatalogCache<ReadonlySet<string>> {
  constructor(kind: FrequencyCap['countOf'], load: TreatmentLoader, bus: InvalidationBus) {
    super(async (projectId) => new Set((await load(projectId)).filter((t) => t.frequencyCap?.countOf === kind).map((t) => t.treatmentId)), bus);
  }
}

/**
 * The VIEWED counter of a capped treatment, one profile field per UTC day of the interaction,
 * applied by the same exactly-once profile script as the job's other ops. Only treatments with a
 * VIEWED cap are counted, so profiles do not grow with every treatment a user ever saw.
 */
export function viewCapOps(capped: ReadonlySet<string>, job: InteractionJob): ProfileOp[] {
  if (job.interactionType !== 'VIEWED' || !capped.has(job.treatmentId)) return [];
  const day = Math.floor(Number(BigInt(job.interactionTimeMicros) / 1000n) / DAY_MS);
  return [['inc', capCounterField('VIEWED', job.treatmentId, day), 1]];
}

export function viewCapInteractionOps(cache: CapCache): InteractionOpsProvider {
  return async (job) => (job.interactionType === 'VIEWED' ? viewCapOps(await cache.get(job.projectId), job) : []);
}

/**
 * The RETURNED frequency-cap counters of a record: one per returned treatment and surface with a
 * RETURNED cap, on the decision's UTC day. Treatments without such a cap get no counter, so
 * profiles do not grow with every treatment a user was ever shown.
 */
export function returnedCapOps(rec: DecisionRecord, capped: ReadonlySet<string>): ProfileOp[] {
  if (capped.size === 0) return [];
  const day = Math.floor(rec.decideTimeMs / DAY_MS);
  const ops: ProfileOp[] = [];
  for (const d of rec.decisions) {
    if (d.outcome === 'RETURNED' && capped.has(d.treatmentId)) ops.push(['inc', capCounterField('RETURNED', d.treatmentId, day), 1]);
  }
  return ops;
}
