import type { InvalidationBus } from '../../shared/clients/invalidation-bus.js';
import { capCounterField } from '../../shared/domain/decisions.js';
import type { FrequencyCap, TreatmentRecord } from '../../shared/domain/types.js';
import type { InteractionJob } from '../../shared/queues/queues.js';
import type { ProfileOp } from '../../shared/stores/profile.store.js';
import type { InteractionOpsProvider } from '../ingest/interactions.processor.js';

const DAY_MS = 86_400_000;

export type TreatmentLoader = (projectId: string) => Promise<TreatmentRecord[]>;

/**
 * Per project, which treatments have a frequency cap counting VIEWED interactions (D43), cached
 * per process like the data fields: a treatment change publishes a `catalog` invalidation, a bus
 * (re)connect publishes `all`, and while the bus is not listening the cache is bypassed.
 */
export class ViewCapCache {
  private readonly entries = new Map<string, Promise<ReadonlySet<string>>>();
  private readonly unsubscribe: () => void;

  constructor(
    private readonly load: TreatmentLoader,
    private readonly bus: InvalidationBus,
  ) {
    this.unsubscribe = bus.on((msg) => {
      if (msg.kind === 'all') this.entries.clear();
      else if (msg.kind === 'catalog' && msg.projectId !== undefined) this.entries.delete(msg.projectId);
    });
  }

  async get(projectId: string): Promise<ReadonlySet<string>> {
    if (!this.bus.isListening) return this.capped(projectId);
    const cached = this.entries.get(projectId);
    if (cached) return cached;
    const loading = this.capped(projectId);
    this.entries.set(projectId, loading);
    loading.catch(() => {
      if (this.entries.get(projectId) === loading) this.entries.delete(projectId);
    });
    return loading;
  }

  close(): void {
    this.unsubscribe();
    this.entries.clear();
  }

  private async capped(projectId: string): Promise<ReadonlySet<string>> {
    return new Set((await this.load(projectId)).filter((t) => countsViews(t.frequencyCap)).map((t) => t.treatmentId));
  }
}

function countsViews(cap: FrequencyCap | undefined): boolean {
  return cap?.countOf === 'VIEWED';
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

export function viewCapInteractionOps(cache: ViewCapCache): InteractionOpsProvider {
  return async (job) => (job.interactionType === 'VIEWED' ? viewCapOps(await cache.get(job.projectId), job) : []);
}
