/**
 * The ranking policy of GetTreatments: the one place that decides the order of the
 * treatments that qualified for a surface. It is a replaceable module: delivery only calls
 * `score` for each qualifying treatment and sorts by it (highest first), so another policy
 * (contextual bandit, fixed priorities, an external model) plugs in by implementing this
 * interface and being passed to `selectTreatments` instead of the default.
 *
 * A policy is called on the request path once per qualifying (surface, treatment): it must be
 * pure CPU work over what it is given (no I/O), and may be random (the default samples).
 */

/** What is known about one arm (a treatment on a surface), summed over every user of the project. */
export interface ArmStats {
  /** VIEWED interactions */
  views: number;
  /** target actions: CLICKED and CTA_COMPLETED interactions, and views converted by the treatment's target-action event */
  actions: number;
}

export interface RankingContext {
  projectId: string;
  surface: string;
  treatmentId: string;
  userId: string;
}

export interface RankingPolicy {
  /** Short name for explanations and logs, e.g. `thompson-sampling`. */
  readonly name: string;
  /**
   * Higher ranks first. Ties are broken by ascending treatmentId, so equal scores give a stable
   * order. `ctx` is one object per surface of a request, its treatment id changed between calls:
   * read it during the call, never keep it.
   */
  score(ctx: RankingContext, stats: ArmStats): number;
}

/** Read access to a project's counters; an arm never seen reads as zero views and actions. */
export interface RankingStatsView {
  get(surface: string, treatmentId: string): ArmStats;
}

export const NO_STATS: ArmStats = Object.freeze({ views: 0, actions: 0 });

export const EMPTY_STATS_VIEW: RankingStatsView = { get: () => NO_STATS };

/** Counter field names of the project-wide ranking hash (shared by the writer and the reader). */
export function viewsField(surface: string, treatmentId: string): string {
  return `v:${surface}:${treatmentId}`;
}

export function actionsField(surface: string, treatmentId: string): string {
  return `a:${surface}:${treatmentId}`;
}

/**
 * The counters of a raw hash as a view. Surface names may hold `:` but treatment ids are
 * digits, so the last `:` separates the two.
 */
export function statsViewFromHash(raw: Record<string, string>): RankingStatsView {
  // by surface, then treatment: a lookup builds no key string (one per qualifying arm of every request)
  const bySurface = new Map<string, Map<string, { views: number; actions: number }>>();
  for (const [field, value] of Object.entries(raw)) {
    const kind = field.slice(0, 2);
    if (kind !== 'v:' && kind !== 'a:') continue;
    const n = Number(value);
    if (!Number.isFinite(n)) continue;
    const at = field.lastIndexOf(':');
    if (at < 2) continue;
    const surface = field.slice(2, at);
    const treatmentId = field.slice(at + 1);
    let arms = bySurface.get(surface);
    if (arms === undefined) bySurface.set(surface, (arms = new Map()));
    let entry = arms.get(treatmentId);
    if (entry === undefined) arms.set(treatmentId, (entry = { views: 0, actions: 0 }));
    if (kind === 'v:') entry.views = n;
    else entry.actions = n;
  }
  if (bySurface.size === 0) return EMPTY_STATS_VIEW;
  return { get: (surface, treatmentId) => bySurface.get(surface)?.get(treatmentId) ?? NO_STATS };
}
