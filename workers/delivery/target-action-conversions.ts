import type { Logger } from 'pino';
import { actionsField } from '../../shared/delivery/index.js';
import type { ProfileStore } from '../../shared/profiles/index.js';
import type { RankingCounterStore } from '../../shared/delivery/index.js';
import type { ConversionClaim, TargetActionViewStore } from '../../shared/delivery/index.js';
import type { TargetActionCatalog } from './target-action-cache.js';
import type { EventOpsProvider } from '../ingestion/events.processor.js';
import type { InteractionOpsProvider } from '../ingestion/interactions.processor.js';

/**
 * A treatment's target-action event counts as a ranking action of (treatment, surface) when it
 * happens 0 to 7 days after the user's last VIEWED of the treatment on that surface; each view
 * is converted at most once, so actions never outgrow views.
 *
 * Both halves are op providers that contribute no profile ops: they run before their job's
 * profile script (the job's commit point), so a retry after a crash at any point runs them again,
 * and each step is safe to repeat:
 * 1. the interaction's view is remembered in the user's slot (a newer time wins);
 * 2. an event claims the views it converts in the user's slot (pending);
 * 3. each claim adds one action to the ranking hash by the ranking counter script, whose marker
 *    in the project's slot is the view converted (user, treatment, surface, view time);
 * 4. the claims are marked counted, and their ranking markers are cut to the grace of a completed
 *    job's markers. A pending claim found again (a retry, a duplicate insertId or another event)
 *    is finished by steps 3 and 4, which its marker makes count once.
 */
export interface TargetActionDeps {
  catalog: { get(projectId: string): Promise<TargetActionCatalog> };
  views: TargetActionViewStore;
  ranking: RankingCounterStore;
  /** Cuts the ranking markers of counted conversions (the same cut as a completed job's markers). */
  profiles: Pick<ProfileStore, 'expireJobMarkers'>;
  markerGraceSeconds: number;
  log?: Logger;
}

export function targetActionViewOps(deps: TargetActionDeps): InteractionOpsProvider {
  return async (job) => {
    if (job.interactionType !== 'VIEWED') return [];
    const catalog = await deps.catalog.get(job.projectId);
    if (catalog.targeted.has(job.treatmentId) && catalog.surfaces.has(job.surface)) {
      await deps.views.recordView(job.projectId, job.userId, job.treatmentId, job.surface, Number(BigInt(job.interactionTimeMicros) / 1000n));
    }
    return [];
  };
}

export function targetActionEventOps(deps: TargetActionDeps): EventOpsProvider {
  return async (projectId, userId, events) => {
    const catalog = await deps.catalog.get(projectId);
    const times = eventTimesByTreatment(catalog, events);
    if (times.size > 0) await countConversions(deps, catalog, projectId, userId, times);
    // no profile ops: a job's array of holes, no empty array per event
    return new Array<undefined>(events.length);
  };
}

/** Per treatment, the distinct times of the job's events that are its target action. */
export function eventTimesByTreatment(catalog: TargetActionCatalog, events: Parameters<EventOpsProvider>[2]): Map<string, number[]> {
  const times = new Map<string, Set<number>>();
  for (const e of events) {
    for (const treatmentId of catalog.treatmentsByEvent.get(e.eventName) ?? []) {
      const set = times.get(treatmentId) ?? new Set<number>();
      set.add(e.clientEventTs);
      times.set(treatmentId, set);
    }
  }
  return new Map([...times].map(([t, set]) => [t, [...set]]));
}

/** The identity of a conversion (the view it converts), as its ranking marker's id. */
export function conversionId(userId: string, c: ConversionClaim): string {
  return `ta:${userId}:${c.treatmentId}:${c.viewMs}:${c.surface}`;
}

async function countConversions(
  deps: TargetActionDeps,
  catalog: TargetActionCatalog,
  projectId: string,
  userId: string,
  times: Map<string, number[]>,
): Promise<void> {
  const claims = await deps.views.claim(projectId, userId, times);
  if (claims.length === 0) return;
  const ids = claims.map((c) => conversionId(userId, c));
  await Promise.all(
    claims.map((c, i) => (catalog.surfaces.has(c.surface) ? deps.ranking.apply(projectId, ids[i], [[actionsField(c.surface, c.treatmentId), 1]]) : undefined)),
  );
  await deps.views.finish(projectId, userId, claims);
  await deps.profiles
    .expireJobMarkers(
      [],
      ids.map((id) => deps.ranking.markerKey(projectId, id)),
      deps.markerGraceSeconds,
    )
    .catch((err: unknown) => {
      deps.log?.warn({ err, projectId }, 'conversion markers not shortened; they expire on their own');
    });
}
