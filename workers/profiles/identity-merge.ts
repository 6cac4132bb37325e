import type { Logger } from 'pino';
import { LRUCache } from 'lru-cache';
import type { AliasRefusal, ProfileStore } from '../../shared/profiles/index.js';
import { UserDataWarehouse } from '../../shared/profiles/user-data.warehouse.js';
import type { Warehouse } from '../../shared/platform/warehouse/warehouse.js';

/** Merges a pre-login id's activity into the signed-in user's, exactly once. */
export interface IdentityMerger {
  merge(projectId: string, tempUserId: string, userId: string): Promise<void>;
}

/** Why a merge was refused: the id is a user of its own, or was merged into another user first. */
export type MergeRefusal = AliasRefusal | 'merged-into-another-user';

/** Alias hops followed at most when the signed-in side turns out to be merged itself. */
const MAX_HOPS = 4;

/**
 * A merge is an anonymous id joining a signed-in user, never one user taking another. The steps,
 * each safe to repeat, so a job retried after a crash at any point has the effect of one merge,
 * and no script touches two users (Redis Cluster):
 * (0) mark: U's profile records that U is a signed-in side (U's slot). From then on no claim of U
 *     succeeds, so U can never become someone's pre-login id; a U that is already an alias
 *     (merged by a racing event) is followed to its user instead;
 * (a) claim: `@alias` = U in T's profile (T's slot), first claim wins. Refused when T is a user
 *     of its own (it was marked in (0) of an earlier merge, or has merged ids); a T already
 *     claimed by another user is a conflict. Both are logged and counted, and nothing else
 *     happens: the event is stored under U without a merge;
 * (b) U is marked in flight (as before an ingest job's rows), then T's rows in ClickHouse
 *     (events, interactions) are copied under U with the same de-duplication keys (a repeated
 *     copy collapses), so recomputes of U count T's history; a recompute reading U from the mark
 *     to (c) reads U again after (c) instead of counting T's history twice;
 * (c) T's profile and insertId markers are read and applied to U by one script in U's slot,
 *     guarded by the marker `merged:<T>` in U's profile (a retry applies nothing); it clears
 *     (b)'s mark and stamps U's in-flight hash `@applied` with the counters;
 * (d) T's profile is cleared down to the alias, which lives RETENTION_DAYS like a profile.
 * Mark (0) before claim (a): the two are in different slots, and in this order two events that
 * each name the other's user as their pre-login id cannot both merge (the second claim finds the
 * first mark). From (a) on, jobs of T go to U: the profile script refuses an aliased profile and
 * the workers resolve aliases before they write rows. A pair this process merged or refused is
 * remembered (LRU), so later events carrying both ids cost nothing and a refusal is logged and
 * counted once per process; elsewhere they cost the mark and the claim scripts only.
 */
export function identityMerger(deps: {
  warehouse: Pick<Warehouse, 'query' | 'command'>;
  profiles: ProfileStore;
  log: Logger;
  onRefused?: (reason: MergeRefusal) => void;
}): IdentityMerger {
  const userData = new UserDataWarehouse(deps.warehouse);
  const done = new LRUCache<string, true>({ max: 10_000 });
  const refuse = (reason: MergeRefusal, fields: Record<string, string>, message: string) => {
    deps.log.warn({ ...fields, reason }, message);
    deps.onRefused?.(reason);
  };
  return {
    async merge(projectId, tempUserId, signedInId) {
      if (tempUserId === signedInId) return;
      const memo = JSON.stringify([projectId, tempUserId, signedInId]);
      if (done.has(memo)) return;
      const userId = await markSignedIn(deps.profiles, projectId, signedInId);
      // the pre-login id is the user this id was merged into: one person already
      if (userId === tempUserId) return void done.set(memo, true);
      const claim = await deps.profiles.claimAlias(projectId, tempUserId, userId);
      if ('refused' in claim) {
        refuse(
          claim.refused,
          { projectId, tempUserId, userId },
          'identity merge refused: the pre-login id is a signed-in user of its own; the event is stored under the user without a merge',
        );
      } else if (claim.owner !== userId) {
        refuse(
          'merged-into-another-user',
          { projectId, tempUserId, userId, mergedInto: claim.owner },
          'identity merge conflict: the pre-login id was merged into another user first; not merged again',
        );
      } else if (claim.pending) {
        await deps.profiles.markMergeInFlight(projectId, tempUserId, userId);
        await userData.copyUserRows(projectId, tempUserId, userId);
        const merged = await deps.profiles.mergeProfile(projectId, tempUserId, userId);
        await deps.profiles.clearMerged(projectId, tempUserId);
        if (merged) deps.log.info({ projectId, tempUserId, userId }, 'pre-login activity merged into the signed-in user');
      }
      done.set(memo, true);
    },
  };
}

/** Step (0): marks the signed-in side; an id merged into another user meanwhile is followed to it (and that user marked). */
async function markSignedIn(profiles: ProfileStore, projectId: string, userId: string): Promise<string> {
  let user = userId;
  for (let hop = 0; hop < MAX_HOPS; hop++) {
    const alias = await profiles.markSignedIn(projectId, user);
    if (alias === undefined || alias === user) return user;
    user = alias;
  }
  return user;
}
