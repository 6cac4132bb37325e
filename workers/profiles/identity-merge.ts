import type { Logger } from 'pino';
import { LRUCache } from 'lru-cache';
import type { ProfileStore } from '../../shared/profiles/index.js';
import type { Warehouse } from '../../shared/platform/warehouse/warehouse.js';

/** Merges a pre-login id's activity into the signed-in user's, exactly once. */
export interface IdentityMerger {
  merge(projectId: string, tempUserId: string, userId: string): Promise<void>;
}

/**
 * The steps, each safe to repeat, so a job retried after a crash at any point has the effect of
 * one merge, and no script touches two users (Redis Cluster):
 * (a) claim: `@alias` = U in T's profile (T's slot), first claim wins; a T already claimed by
 *     another user is a conflict, logged, and nothing else happens;
 * (b) T's rows in ClickHouse (events, interactions) are copied under U with the same
 *     de-duplication keys (a repeated copy collapses), so recomputes of U count T's history;
 * (c) T's profile and insertId markers are read and applied to U by one script in U's slot,
 *     guarded by the marker `merged:<T>` in U's profile (a retry applies nothing);
 * (d) T's profile is cleared down to the alias, which lives RETENTION_DAYS like a profile.
 * From (a) on, jobs of T go to U: the profile script refuses an aliased profile and the workers
 * resolve aliases before they write rows. A merge this process finished is remembered (LRU), so
 * later events carrying both ids cost nothing; elsewhere they cost the claim script only.
 */
export function identityMerger(deps: { warehouse: Pick<Warehouse, 'copyUserRows'>; profiles: ProfileStore; log: Logger }): IdentityMerger {
  const done = new LRUCache<string, true>({ max: 10_000 });
  return {
    async merge(projectId, tempUserId, userId) {
      if (tempUserId === userId) return;
      const memo = JSON.stringify([projectId, tempUserId, userId]);
      if (done.has(memo)) return;
      const { owner, pending } = await deps.profiles.claimAlias(projectId, tempUserId, userId);
      if (owner !== userId) {
        deps.log.warn({ projectId, tempUserId, userId, mergedInto: owner }, 'identity merge conflict: the pre-login id was merged into another user first; not merged again');
        done.set(memo, true);
        return;
      }
      if (pending) {
        await deps.warehouse.copyUserRows(projectId, tempUserId, userId);
        const merged = await deps.profiles.mergeProfile(projectId, tempUserId, userId);
        await deps.profiles.clearMerged(projectId, tempUserId);
        if (merged) deps.log.info({ projectId, tempUserId, userId }, 'pre-login activity merged into the signed-in user');
      }
      done.set(memo, true);
    },
  };
}
