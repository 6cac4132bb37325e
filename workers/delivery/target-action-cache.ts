import type { InvalidationBus } from '../../shared/platform/redis/invalidation-bus.js';
import type { TreatmentRecord } from '../../shared/treatments/index.js';
import { ProjectCatalogCache } from '../project-catalog-cache.js';

/** What the ingestion path needs to know about a project's target actions. */
export interface TargetActionCatalog {
  /** event name → the treatments whose target action it is */
  treatmentsByEvent: ReadonlyMap<string, readonly string[]>;
  /** the treatments that have a target action (only their views are remembered) */
  targeted: ReadonlySet<string>;
  /** registered surfaces: only they are counted in the ranking hash */
  surfaces: ReadonlySet<string>;
}

export interface TargetActionSources {
  treatments(projectId: string): Promise<TreatmentRecord[]>;
  surfaces(projectId: string): Promise<Set<string>>;
  /** The event name of an event schema id (undefined: unknown). */
  eventName(projectId: string, eventId: string): Promise<string | undefined>;
}

/**
 * A treatment's target action is that of its newest version, as in its report. Event schemas are
 * never renamed or deleted and a target action must name an existing one, so a catalogue change
 * (which invalidates the cache) is the only thing that changes this.
 */
export async function loadTargetActionCatalog(src: TargetActionSources, projectId: string): Promise<TargetActionCatalog> {
  const [treatments, surfaces] = await Promise.all([src.treatments(projectId), src.surfaces(projectId)]);
  const byEventId = new Map<string, string[]>();
  for (const t of treatments) {
    const eventId = t.versions[t.versions.length - 1]?.targetActionEventId;
    if (eventId === undefined) continue;
    const ids = byEventId.get(eventId) ?? [];
    ids.push(t.treatmentId);
    byEventId.set(eventId, ids);
  }
  const names = await Promise.all([...byEventId.keys()].map((id) => src.eventName(projectId, id)));
  const treatmentsByEvent = new Map<string, string[]>();
  [...byEventId.values()].forEach((ids, i) => {
    const name = names[i];
    if (name !== undefined) treatmentsByEvent.set(name, ids);
  });
  return { treatmentsByEvent, targeted: new Set([...treatmentsByEvent.values()].flat()), surfaces };
}

/** A project's target actions, cached per process (see ProjectCatalogCache). */
export class TargetActionCache extends ProjectCatalogCache<TargetActionCatalog> {
  constructor(src: TargetActionSources, bus: InvalidationBus) {
    super((projectId) => loadTargetActionCatalog(src, projectId), bus);
  }
}
