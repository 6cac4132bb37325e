import type { InvalidationBus } from '../../shared/platform/redis/invalidation-bus.js';
import { eventOps, interactionOps } from '../../shared/aggregation/index.js';
import type { DataFieldRecord } from '../../shared/aggregation/index.js';
import { ProjectCatalogCache } from '../project-catalog-cache.js';
import type { EventOpsProvider } from '../ingestion/events.processor.js';
import type { InteractionOpsProvider } from '../ingestion/interactions.processor.js';

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
