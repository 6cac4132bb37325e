/**
 * Who a GetTreatments request is decided for. A pre-login id merged into a signed-in user
 * stands for that user: holdout buckets (per treatment and global) and QA lookups use the
 * user's id, and the decision is logged under it, so one person is one user in every report.
 * A QA list naming the user serves the user's merged pre-login ids; one naming only a merged
 * pre-login id serves nobody (that id no longer stands for anyone of its own).
 *
 * The cost stays at most the one read the request already made: the profile read follows the
 * alias anyway (`mergedInto`); without it, the alias is read (one HGET) only when the answer
 * depends on who the user is: a candidate with a holdout, a global holdout, or a QA list whose
 * treatments serve a requested surface. Otherwise nothing is read, and the decision-log
 * workers re-address the logged decisions to the merged user.
 */
import type { StoredProfile } from '../profiles/index.js';
import { servedPlannedVersion, type CatalogPlan } from './catalog-plan.js';
import { requestNeedsProfile, type PreparedRequest } from './delivery-request.js';

/** The reads `resolveRequestUser` may make (the profile store's). */
export interface UserLookup {
  /** The user's profile, following the alias of a merged id (`mergedInto` names the user then). */
  get(projectId: string, userId: string): Promise<StoredProfile>;
  /** The user an id stands for: itself, or the user it was merged into. */
  canonicalUser(projectId: string, userId: string): Promise<string>;
}

export interface RequestUser {
  /** The request with `userId` the user the request's id stands for (the same object when it is the id itself). */
  prepared: PreparedRequest;
  /** That user's profile, or an empty one when no candidate needs it. */
  profile: StoredProfile;
  /** True when the user was looked up (profile or alias), so `prepared.userId` is who the id stands for now. */
  resolved: boolean;
}

const NO_PROFILE: StoredProfile = Object.freeze({ userProperties: {}, fields: {} });

/** The user a request stands for and the profile it needs, with at most the read the request needs (see above). */
export async function resolveRequestUser(plan: CatalogPlan, prepared: PreparedRequest, nowMs: number, users: UserLookup): Promise<RequestUser> {
  if (requestNeedsProfile(plan, prepared, nowMs)) {
    const profile = await users.get(prepared.projectId, prepared.userId);
    return { prepared: forUser(prepared, canonicalUserOf(prepared.userId, profile)), profile, resolved: true };
  }
  if (!requestNeedsIdentity(plan, prepared, nowMs)) return { prepared, profile: NO_PROFILE, resolved: false };
  const merged = forUser(prepared, await users.canonicalUser(prepared.projectId, prepared.userId));
  // the user's QA treatments may need the profile where the id's own candidates did not
  if (merged !== prepared && requestNeedsProfile(plan, merged, nowMs))
    return { prepared: merged, profile: await users.get(prepared.projectId, merged.userId), resolved: true };
  return { prepared: merged, profile: NO_PROFILE, resolved: true };
}

/** The user an id stands for, given the profile read for it (ExplainTreatments, PreviewTreatment). */
export function canonicalUserOf(userId: string, profile: StoredProfile): string {
  return profile.mergedInto ?? userId;
}

/**
 * True when the answer depends on who the user is, beyond the profile: the project holds users
 * out globally, a candidate on a requested surface has a holdout, or a QA list's treatments serve
 * a requested surface (the id may stand for a QA user).
 */
export function requestNeedsIdentity(plan: CatalogPlan, prepared: PreparedRequest, nowMs: number): boolean {
  if (plan.globalHoldoutBasisPoints > 0) return true;
  const qa = plan.qaByUser.size === 0 ? undefined : qaSurfaces(plan);
  return prepared.surfaces.some(
    (s) => qa?.has(s.name) === true || (plan.bySurface.get(s.name) ?? []).some((t) => t.holdoutBasisPoints > 0 && servedPlannedVersion(t, nowMs) !== undefined),
  );
}

function forUser(prepared: PreparedRequest, userId: string): PreparedRequest {
  return userId === prepared.userId ? prepared : { ...prepared, userId };
}

/** Per plan (compiled once per catalogue change), the surfaces some QA list's treatments serve. */
const qaSurfacesByPlan = new WeakMap<CatalogPlan, ReadonlySet<string>>();

function qaSurfaces(plan: CatalogPlan): ReadonlySet<string> {
  let surfaces = qaSurfacesByPlan.get(plan);
  if (surfaces === undefined) {
    const all = new Set<string>();
    for (const list of plan.qaByUser.values()) for (const t of list) for (const s of t.type?.surfaces ?? []) all.add(s);
    qaSurfacesByPlan.set(plan, (surfaces = all));
  }
  return surfaces;
}
