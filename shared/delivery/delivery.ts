/**
 * GetTreatments: which treatments a user gets on each requested surface, in which
 * order and with which content. Pure: the caller passes the compiled plan, the user's stored
 * profile, the ranking policy with its statistics, the clock and the response id.
 *
 * The same code answers delivery and explanations: with `explain`, every treatment of the project
 * is assessed on every requested surface without short-cuts, and the reason for each verdict is
 * kept; the verdicts are identical to the ones delivery reaches.
 */
import type { StoredProfile } from '../profiles/index.js';
import { type Decision, type DecisionOutcome } from '../impact/index.js';
import { compareIds, plannedTreatmentArchived, plannedVersionStatus, type CatalogPlan, type PlannedTreatment } from './catalog-plan.js';
import { renderContent } from './content-render.js';
import { prepareRequest, type PreparedRequest, type PreparedSurface } from './delivery-request.js';
import { ruleValueFromContextualAttribute } from '../rules/index.js';
import { plainValue } from '../ingestion/index.js';
import type { RankingPolicy, RankingStatsView } from './ranking/ranking-policy.js';
import { assessor, type Assessment, type Verdict, eligibilityReasons, heldOutFor, holdoutBucket, isEligible, pickLanguage } from './assessment.js';
import { explainSurface, plainRuleValue, type DeliveryExplanation, type ExclusionReason } from './explanation.js';
import type { ContextualAttribute, DeliveryRequest, UserTreatment } from './delivery.schemas.js';

// ---------------------------------------------------------------------------------------------
// Response (the request is checked in delivery-request.ts)

export interface DeliveryResponse {
  responseId: string;
  /** absent, not empty, when nothing qualifies */
  userTreatments?: UserTreatment[];
}

export interface Ranking {
  policy: RankingPolicy;
  stats: RankingStatsView;
}

export interface DeliveryResult {
  response: DeliveryResponse;
  /** what was returned or withheld, for the decision log; in response order */
  decisions: Decision[];
  explanation?: DeliveryExplanation;
}

// ---------------------------------------------------------------------------------------------
// Selection

export interface SelectOptions {
  /** Assess every treatment of the project and return why each was or was not returned. */
  explain?: boolean;
  /** `prepareRequest(plan, request)` when the caller already has it. */
  prepared?: PreparedRequest;
}

export function selectTreatments(
  plan: CatalogPlan,
  request: DeliveryRequest,
  profile: StoredProfile,
  ranking: Ranking,
  nowMs: number,
  responseId: string,
  opts: SelectOptions = {},
): DeliveryResult {
  const prep = opts.prepared ?? prepareRequest(plan, request);
  const explain = opts.explain === true;
  const assessOf = assessor(prep, profile, nowMs, explain);
  const state: SelectionState = { returnedOn: new Map(), groupWinners: new Map(), heldOut: heldOutFor(plan, prep.userId) };
  const qaTreatments = plan.qaByUser.get(prep.userId);
  const perSurface: SurfaceSelection[] = [];
  for (const surface of prep.surfaces) {
    const qa = qaTreatments === undefined ? NO_VERDICTS : qaVerdicts(qaTreatments, surface.name, prep.language, nowMs);
    const qaIds = qa.length === 0 ? NO_IDS : new Set(qa.map((v) => v.t.treatmentId));
    // QA deliveries come first; the others fill what remains of the surface's counts
    const rest: PreparedSurface =
      qa.length === 0 ? surface : { ...surface, max: Math.max(0, surface.max - qa.length), min: Math.max(0, surface.min - qa.length) };
    // Only explanations look beyond the surface's candidates: everything else fails TYPE_LACKS_SURFACE or NOT_LIVE.
    const listed = plan.bySurface.get(surface.name) ?? NO_TREATMENTS;
    const regular = explain
      ? plan.treatments.filter((t) => !t.isFallback && !qaIds.has(t.treatmentId))
      : qaIds.size === 0
        ? listed
        : listed.filter((t) => !qaIds.has(t.treatmentId));
    const main = selectAmong(regular, rest, prep, ranking, assessOf, state, true, explain);
    const fallbackCandidates = explain
      ? plan.treatments.filter((t) => t.isFallback && !qaIds.has(t.treatmentId))
      : (plan.fallbacksBySurface.get(surface.name) ?? []);
    let fallback: { verdicts: Verdict[]; picked: Verdict[] } = NOTHING;
    if (main.picked.length === 0 && qa.length === 0) {
      fallback = selectAmong(fallbackCandidates, rest, prep, ranking, assessOf, state, false, explain);
      for (const v of fallback.picked) v.label = 'fallback';
    } else if (explain) {
      fallback = { verdicts: fallbackCandidates.map((t) => ({ t, a: assessOf(t), reasons: ['FALLBACK_NOT_NEEDED'] })), picked: [] };
    }
    qa.forEach((v, i) => {
      v.rank = i + 1;
      state.returnedOn.set(v.t.treatmentId, surface.name);
    });
    const only = qa.length === 0 && fallback === NOTHING;
    const picked = only ? main.picked : [...qa, ...main.picked, ...fallback.picked];
    for (let i = 0; i < picked.length; i++) picked[i].rank = i + 1;
    // only explanations list the verdicts (delivery builds them for the qualifying candidates only)
    const verdicts = !explain ? NO_VERDICTS : only ? main.verdicts : [...qa, ...main.verdicts, ...fallback.verdicts];
    perSurface.push({ surface, verdicts, picked, withheld: main.withheld });
  }
  const globallyHeldOut = plan.globalHoldoutBasisPoints > 0 && holdoutBucket(`${plan.projectId}:global:${prep.userId}`) < plan.globalHoldoutBasisPoints;
  const decisions: Decision[] = [];
  const userTreatments: UserTreatment[] = [];
  for (const { surface, picked, withheld } of perSurface) {
    for (const v of withheld) decisions.push(decisionOf(v, surface.name, 0, 'HOLDOUT'));
    for (const v of picked) {
      if (globallyHeldOut && v.label !== 'QA') {
        // What would have been returned, withheld (QA deliveries are never held out)
        decisions.push(decisionOf(v, surface.name, 0, 'GLOBAL_HOLDOUT'));
        if (explain) v.reasons.push('GLOBAL_HOLDOUT');
        v.rank = undefined;
        continue;
      }
      decisions.push(decisionOf(v, surface.name, v.rank!, v.label === 'QA' ? 'QA' : 'RETURNED'));
      userTreatments.push(present(v, surface.name, prep, profile, responseId));
    }
  }
  // a globally held-out user's QA ranks stay as computed: QA deliveries are always first
  const response: DeliveryResponse = userTreatments.length > 0 ? { responseId, userTreatments } : { responseId };
  if (!explain) return { response, decisions };
  return {
    response,
    decisions,
    explanation: {
      languageCode: prep.language,
      rankingPolicy: ranking.policy.name,
      surfaces: perSurface.map(({ surface, verdicts }) => explainSurface(surface, verdicts, nowMs)),
    },
  };
}

interface SelectionState {
  /** treatment → the surface it was returned on (once per response) */
  returnedOn: Map<string, string>;
  /** mutual exclusion group → the treatment of it that was returned */
  groupWinners: Map<string, string>;
  heldOut: (t: PlannedTreatment) => boolean;
}

interface SurfaceSelection {
  surface: PreparedSurface;
  verdicts: Verdict[];
  picked: Verdict[];
  /** held out: they would have been returned */
  withheld: Verdict[];
}

/**
 * Assess, rank and pick among `candidates` on one surface; `holdouts` false for fallbacks. With
 * `explain`, a verdict with its reasons for every candidate; without, verdicts for the qualifying
 * ones only (a request weighs tens of candidates and returns a few).
 */
function selectAmong(
  candidates: readonly PlannedTreatment[],
  surface: PreparedSurface,
  prep: PreparedRequest,
  ranking: Ranking,
  assessOf: (t: PlannedTreatment) => Assessment,
  state: SelectionState,
  holdouts: boolean,
  explain: boolean,
): { verdicts: Verdict[]; picked: Verdict[]; withheld: Verdict[] } {
  let verdicts: Verdict[];
  let qualifying: Verdict[];
  if (explain) {
    verdicts = candidates.map((t) => verdictOf(t, assessOf(t), surface.name, state.returnedOn));
    qualifying = verdicts.filter((v) => v.reasons.length === 0);
  } else {
    verdicts = NO_VERDICTS;
    qualifying = [];
    // nothing returned yet on the first surface of most requests: no lookup per candidate
    const returnedOn = state.returnedOn.size === 0 ? undefined : state.returnedOn;
    for (const t of candidates) {
      if (returnedOn?.has(t.treatmentId) === true) continue;
      const a = assessOf(t);
      // every member the selection sets, set now (one shape); the reasons are an explanation's only
      if (isEligible(t, a, surface.name))
        qualifying.push({ t, a, reasons: NO_REASONS, blockedBy: undefined, score: undefined, rank: undefined, label: undefined });
    }
  }
  // one context for the surface's candidates, its treatment id set before each call (see RankingPolicy.score)
  const ctx = { projectId: prep.projectId, surface: surface.name, treatmentId: '', userId: prep.userId };
  for (const v of qualifying) {
    ctx.treatmentId = v.t.treatmentId;
    v.score = ranking.policy.score(ctx, ranking.stats.get(surface.name, v.t.treatmentId));
  }
  // Explanations list every candidate in rank order; delivery takes the best few, in order, as pick reaches them.
  if (explain) qualifying.sort(byRank);
  const withheld: Verdict[] = [];
  const picked = pick(qualifying, surface, state.groupWinners, holdouts ? state.heldOut : NEVER, withheld, explain);
  for (const v of picked) {
    state.returnedOn.set(v.t.treatmentId, surface.name);
    if (v.t.mutualExclusionGroupId !== undefined) state.groupWinners.set(v.t.mutualExclusionGroupId, v.t.treatmentId);
  }
  return { verdicts, picked, withheld };
}

const NEVER = (): boolean => false;
const NOTHING: { verdicts: Verdict[]; picked: Verdict[] } = { verdicts: [], picked: [] };
const NO_VERDICTS: Verdict[] = [];
/** The reasons of a delivery's verdicts: only explanations keep them (frozen: nothing may add to it). */
const NO_REASONS = Object.freeze([]) as unknown as ExclusionReason[];
const NO_IDS: ReadonlySet<string> = new Set();
const NO_TREATMENTS: readonly PlannedTreatment[] = [];

/** The treatments listing this QA user whose newest version serves the surface, whatever its status, unless it or the treatment is ARCHIVED (ended or deleted). */
function qaVerdicts(treatments: readonly PlannedTreatment[], surface: string, language: string, nowMs: number): Verdict[] {
  const out: Verdict[] = [];
  for (const t of treatments) {
    const version = t.newestVersion!;
    if (!t.type!.surfaces.has(surface) || version.removedSurfaces.has(surface)) continue;
    // a deleted treatment's versions all end: ARCHIVED like those that ran out; a draft edited
    // after that does not bring the treatment back for QA users
    if (plannedVersionStatus(version, nowMs) === 'ARCHIVED' || plannedTreatmentArchived(t, nowMs)) continue;
    const lang = pickLanguage(t, version, language);
    if (lang === null) continue;
    out.push({ t, a: { version, language: lang, rules: [], rulesPass: undefined }, reasons: [], label: 'QA' });
  }
  return out;
}

function decisionOf(v: Verdict, surface: string, rank: number, outcome: DecisionOutcome): Decision {
  return { treatmentId: v.t.treatmentId, versionNumber: v.a.version!.versionNumber, surface, rank, outcome };
}

function verdictOf(t: PlannedTreatment, a: Assessment, surface: string, returnedOn: ReadonlyMap<string, string>): Verdict {
  const reasons = eligibilityReasons(t, a, surface);
  const earlier = returnedOn.get(t.treatmentId);
  if (earlier !== undefined) {
    reasons.push('RETURNED_ON_EARLIER_SURFACE');
    return { t, a, reasons, blockedBy: earlier };
  }
  return { t, a, reasons };
}

/**
 * Best ranked first: one per mutual exclusion group per response (a group taken on an earlier
 * surface stays taken), up to the surface's maximum; fewer than its minimum means none at all.
 */
function pick(
  ranked: Verdict[],
  surface: PreparedSurface,
  groupWinners: ReadonlyMap<string, string>,
  heldOut: (t: PlannedTreatment) => boolean,
  withheld: Verdict[],
  explain: boolean,
): Verdict[] {
  const picked: Verdict[] = [];
  // made when a picked treatment has a group: most catalogues use none
  let groupsHere: Map<string, string> | undefined;
  for (let i = 0; i < ranked.length; i++) {
    // once the surface is full, the rest only collect the reason explanations show
    if (!explain && picked.length >= surface.max) break;
    // delivery's candidates are not sorted: the best of those left comes to place i (a surface
    // takes a few of tens; explanations sorted them all first)
    if (!explain) placeBest(ranked, i);
    const v = ranked[i];
    const group = v.t.mutualExclusionGroupId;
    const winner = group === undefined ? undefined : (groupWinners.get(group) ?? groupsHere?.get(group));
    if (winner !== undefined) {
      if (explain) v.reasons.push('MUTUAL_EXCLUSION');
      v.blockedBy = winner;
    } else if (picked.length >= surface.max) {
      if (explain) v.reasons.push('MAXIMUM_COUNT_REACHED');
    } else if (heldOut(v.t)) {
      // It would have been returned; withheld, it leaves its place (and its group) to the next
      if (explain) v.reasons.push('HELD_OUT');
      withheld.push(v);
    } else {
      picked.push(v);
      if (group !== undefined) (groupsHere ??= new Map()).set(group, v.t.treatmentId);
    }
  }
  if (picked.length >= surface.min) return picked;
  if (explain) for (const v of picked) v.reasons.push('MINIMUM_COUNT_NOT_MET');
  return [];
}

/** Rank order: higher score first, ties by ascending treatment id. */
function byRank(x: Verdict, y: Verdict): number {
  return y.score! - x.score! || compareIds(x.t.treatmentId, y.t.treatmentId);
}

/** Moves the first in rank order of `vs[i..]` to place i (one step of a selection sort). */
function placeBest(vs: Verdict[], i: number): void {
  let best = i;
  for (let j = i + 1; j < vs.length; j++) if (byRank(vs[j], vs[best]) < 0) best = j;
  if (best !== i) {
    const v = vs[best];
    vs[best] = vs[i];
    vs[i] = v;
  }
}

// ---------------------------------------------------------------------------------------------
// Output

export function present(v: Verdict, surface: string, prep: PreparedRequest, profile: StoredProfile, responseId: string): UserTreatment {
  const language = v.a.language!;
  return {
    treatmentId: v.t.treatmentId,
    treatmentTrackingId: `${v.t.treatmentId}_${responseId}`,
    surface,
    rank: String(v.rank),
    treatmentType: v.t.type!.name,
    treatmentContent: renderContent(language.fields, placeholderLookup(prep, profile)),
    contentLanguageCode: language.code,
  };
}

/** The contextual attribute of that name, then the stored user property. */
function placeholderLookup(prep: PreparedRequest, profile: StoredProfile): (name: string) => string | undefined {
  return (name) => {
    const attr = prep.attributes.get(name);
    if (attr !== undefined) return attributeText(attr);
    const stored = profile.userProperties[name];
    return stored === undefined ? undefined : String(plainValue(stored));
  };
}

function attributeText(attr: ContextualAttribute): string | undefined {
  if (attr.stringValue !== undefined) return attr.stringValue;
  if (attr.timestampValue !== undefined) return attr.timestampValue;
  const value = ruleValueFromContextualAttribute(attr);
  if (value === undefined) return undefined;
  const plain = plainRuleValue(value);
  return Array.isArray(plain) ? plain.join(',') : String(plain);
}
