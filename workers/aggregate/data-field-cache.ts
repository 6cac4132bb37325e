import type { InvalidationBus } from '../../shared/clients/invalidation-bus.js';
import { eventOps, interactionOps } from '../../shared/domain/data-field-ops.js';
import type { DataFieldRecord } from '../../shared/domain/types.js';
import { ProjectCatalogCache } from './project-catalog-cache.js';
import type { EventOpsProvider } from '../ingest/events.processor.js';
import type { InteractionOpsProvider } from '../ingest/interactions.processor.js';

export type DataFieldLoader = (projectId: string) => Promise<DataFieldRecord[]>;

/** A project's data fields, cached per process (see ProjectCatalogCache). */
export class DataFieldCache extends ProjectCatalogCache<DataFieldRecord[]> {
  constructor(load: DataFieldLoader, bus: InvalidationBus) {
    super(load, bus);
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
