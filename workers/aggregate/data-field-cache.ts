import type { InvalidationBus } from '../../shared/clients/invalidation-bus.js';
import { eventOps, interactionOps } from '../../shared/domain/data-field-ops.js';
import type { DataFieldRecord } from '../../shared/domain/types.js';
import type { EventOpsProvider } from '../ingest/events.processor.js';
import type { InteractionOpsProvider } from '../ingest/interactions.processor.js';

export type DataFieldLoader = (projectId: string) => Promise<DataFieldRecord[]>;

/**
 * A project's data fields, cached per process so that the incremental aggregation path costs no
 * Redis round trip per job in steady state. Every change of a project's data fields publishes a
 * `catalog` invalidation; a (re)connect of the bus publishes `all`. While the bus is not
 * listening, messages could be missed, so the cache is bypassed rather than trusted.
 */
export class DataFieldCache {
  /** An invalidation deletes the entry at once, so a load that was under way then is not kept. */
  private readonly entries = new Map<string, Promise<DataFieldRecord[]>>();
  private readonly unsubscribe: () => void;

  constructor(
    private readonly load: DataFieldLoader,
    private readonly bus: InvalidationBus,
  ) {
    this.unsubscribe = bus.on((msg) => {
      if (msg.kind === 'all') this.entries.clear();
      else if (msg.kind === 'catalog' && msg.projectId !== undefined) this.entries.delete(msg.projectId);
    });
  }

  async get(projectId: string): Promise<DataFieldRecord[]> {
    if (!this.bus.isListening) return this.load(projectId);
    const cached = this.entries.get(projectId);
    if (cached) return cached;
    const loading = this.load(projectId);
    this.entries.set(projectId, loading);
    // A failed load is not cached: the next job tries again.
    loading.catch(() => {
      if (this.entries.get(projectId) === loading) this.entries.delete(projectId);
    });
    return loading;
  }

  close(): void {
    this.unsubscribe();
    this.entries.clear();
  }
}

/** Aggregate updates of each event of a job, from the project's cached data fields. */
export function dataFieldEventOps(cache: DataFieldCache): EventOpsProvider {
  return async (projectId, _userId, events) => {
    const fields = await cache.get(projectId);
    return events.map((e) => eventOps(fields, e));
  };
}

export function dataFieldInteractionOps(cache: DataFieldCache): InteractionOpsProvider {
  return async (job) => interactionOps(await cache.get(job.projectId), job);
}
