/**
 * GetTreatments (D25–D30): which treatments a user gets on each requested surface, in which
 * order and with which content. Pure: the caller passes the compiled plan, the user's stored
 * profile, the ranking policy with its statistics, the clock and the response id.
 *
 * The same code answers delivery and explanations: with `explain`, every treatment of the project
 * is assessed on every requested surface without short-cuts, and the reason for each verdict is
 * kept; the verdicts are identical to the ones delivery reaches.
 */
import { FailedPreconditionError, InvalidArgumentError, NotFoundError, invalidField, type ErrorDetail } from '../platform/errors.js';
import { capCounterField, type StoredProfile } from '../profiles/index.js';
import { createHash } from 'node:crypto';
import type { Decision, DecisionOutcome } from '../impact/index.js';
import { compareIds, plannedTreatmentStatus, plannedVersionStatus, servedPlannedVersion, type CatalogPlan, type PlannedCap, type PlannedRule, type PlannedTreatment, type PlannedVersion } from './catalog-plan.js';
import { renderContent } from './content-render.js';
import { prepareAttributes, prepareLanguage, prepareRequest, type DeliveryRequest, type PreparedRequest, type PreparedSurface } from './delivery-request.js';
import { computeDataFieldValue } from '../aggregation/index.js';
import { evaluateRule, ruleValueFromContextualAttribute, type ContextualAttribute, type RuleOutcome, type RuleValue } from './eligibility.js';
import { pickContentLanguage } from '../treatments/index.js';
import { plainValue } from '../ingestion/index.js';
import type { RankingPolicy, RankingStatsView } from './ranking/ranking-policy.js';
import type { TreatmentStatus } from '../treatments/index.js';
import type { ContentField } from '../treatments/index.js';
import type { DataFieldRecord } from '../aggregation/index.js';

// ---------------------------------------------------------------------------------------------
// Request (checked in delivery-request.ts) and response

export * from './delivery-request.js';

export interface UserTreatment {
  treatmentId: string;
  treatmentTrackingId: string;
  surface: string;
  /** int64 as a decimal string, 1..n within the surface */
  rank: string;
  treatmentType: string;
  treatmentContent: string;
  contentLanguageCode: string;
}

export interface DeliveryResponse {
  responseId: string;
  /** absent, not empty, when nothing qualifies (D30) */
  userTreatments?: UserTreatment[];
}

export interface Ranking {
  policy: RankingPolicy;
  stats: RankingStatsView;
}

// ---------------------------------------------------------------------------------------------
// Explanations

export type ExclusionReason =
  | 'TYPE_MISSING'
  | 'TYPE_LACKS_SURFACE'
  | 'NOT_LIVE'
  | 'SURFACE_REMOVED'
  | 'NO_CONTENT_FOR_LANGUAGE'
  | 'RULE_NOT_MET'
  | 'RETURNED_ON_EARLIER_SURFACE'
  | 'MUTUAL_EXCLUSION'
  | 'MAXIMUM_COUNT_REACHED'
  | 'MINIMUM_COUNT_NOT_MET'
  | 'FREQUENCY_CAPPED'
  | 'HELD_OUT'
  | 'GLOBAL_HOLDOUT'
  | 'FALLBACK_NOT_NEEDED'
  | 'QA_DELIVERED';

export type RuleValueSource = 'contextualAttribute' | 'profile' | 'missing';

/** A rule value as plain JSON: int64 as a decimal string, timestamps as RFC 3339. */
export type PlainRuleValue = string | number | boolean | (string | number)[];

export interface RuleExplanation {
  dataFieldId: string;
  dataFieldName?: string;
  condition: string;
  rhsValue: string;
  dataMissingBehaviour: string;
  value?: PlainRuleValue;
  source: RuleValueSource;
  outcome: RuleOutcome;
}

export interface TreatmentExplanation {
  treatmentId: string;
  name: string;
  returned: boolean;
  rank?: string;
  /** in words: "returned", "QA", "fallback", "held out", "globally held out", "capped: 5 of 5 VIEWED in LAST_7D", "not returned" */
  outcome: string;
  status: TreatmentStatus;
  servedVersionNumber?: number;
  /** empty when returned; every reason that applies otherwise */
  reasons: ExclusionReason[];
  /** the surface it was returned on, or the treatment of its mutual exclusion group that was */
  blockedBy?: string;
  contentLanguageCode?: string;
  score?: number;
  rules: RuleExplanation[];
}

export interface SurfaceExplanation {
  surface: string;
  maximumTreatmentCount: number;
  minimumTreatmentCount: number;
  /** returned ones by rank, then the others by treatmentId */
  treatments: TreatmentExplanation[];
}

export interface DeliveryExplanation {
  languageCode: string;
  rankingPolicy: string;
  surfaces: SurfaceExplanation[];
}

export interface DeliveryResult {
  response: DeliveryResponse;
  /** what was returned or withheld, for the decision log (D36); in response order */
  decisions: Decision[];
  explanation?: DeliveryExplanation;
}

// ---------------------------------------------------------------------------------------------
// Assessment of one treatment for this request (independent of the surface, so computed once)

interface RuleCheck {
  planned: PlannedRule;
  value: RuleValue | undefined;
  source: RuleValueSource;
  outcome: RuleOutcome;
}

interface LanguagePick {
  code: string;
  fields: ContentField[];
}

interface Assessment {
  version: PlannedVersion | undefined;
  /** null: no content for the language; undefined: not looked at */
  language: LanguagePick | null | undefined;
  /** filled for explanations only */
  rules: RuleCheck[];
  /** undefined: not evaluated */
  rulesPass: boolean | undefined;
  /** D43: the user's count in the window when it reached the cap */
  capped?: number;
}

interface RuleInput {
  value: RuleValue | undefined;
  source: RuleValueSource;
  /** set for contextual attributes, whose kind may differ from the field's type */
  fieldType?: DataFieldRecord['dataFieldType'];
}

function assessor(prep: PreparedRequest, profile: StoredProfile, nowMs: number, full: boolean): (t: PlannedTreatment) => Assessment {
  const inputs = new Map<string, RuleInput>();
  const inputOf = (field: DataFieldRecord | undefined): RuleInput => {
    if (field === undefined) return { value: undefined, source: 'missing' };
    let input = inputs.get(field.dataFieldId);
    if (input === undefined) {
      input = ruleInput(field, prep, profile, nowMs);
      inputs.set(field.dataFieldId, input);
    }
    return input;
  };
  const assessments = new Map<string, Assessment>();
  return (t) => {
    let a = assessments.get(t.treatmentId);
    if (a === undefined) {
      a = assess(t, prep.language, inputOf, profile, nowMs, full);
      assessments.set(t.treatmentId, a);
    }
    return a;
  };
}

/** D27: the request's contextual attribute of the field's name first, then the stored profile. */
function ruleInput(field: DataFieldRecord, prep: PreparedRequest, profile: StoredProfile, nowMs: number): RuleInput {
  const attr = field.name !== undefined ? prep.attributes.get(field.name) : undefined;
  if (attr !== undefined) return { value: ruleValueFromContextualAttribute(attr, field.dataFieldType), source: 'contextualAttribute', fieldType: field.dataFieldType };
  const value = computeDataFieldValue(field, profile, nowMs);
  return { value, source: value === undefined ? 'missing' : 'profile' };
}

/** Cheap checks first; without `full`, stops at the first failure. */
function assess(t: PlannedTreatment, language: string, inputOf: (f: DataFieldRecord | undefined) => RuleInput, profile: StoredProfile, nowMs: number, full: boolean): Assessment {
  const version = t.type === undefined ? undefined : servedPlannedVersion(t, nowMs);
  const a: Assessment = { version, language: undefined, rules: [], rulesPass: undefined };
  if (version === undefined) return a;
  a.language = pickLanguage(t, version, language);
  if (a.language === null && !full) return a;
  if (t.cap !== undefined) {
    const count = capCount(t.treatmentId, t.cap, profile, nowMs);
    if (count >= t.cap.maxCount) {
      a.capped = count;
      if (!full) return a;
    }
  }
  a.rulesPass = true;
  for (const planned of version.rules) {
    const input = inputOf(planned.field);
    const outcome = evaluateRule(planned.rule, input.value, nowMs, input.fieldType);
    if (full) a.rules.push({ planned, value: input.value, source: input.source, outcome }); // only explanations show them
    if (!outcome.result) {
      a.rulesPass = false;
      if (!full) break; // rules are ANDed (D25)
    }
  }
  return a;
}

const DAY_MS = 86_400_000;

/** D43 with D22's window: the counters of the last `days` UTC days, today included. */
export function capCount(treatmentId: string, cap: PlannedCap, profile: StoredProfile, nowMs: number): number {
  const today = Math.floor(nowMs / DAY_MS);
  let count = 0;
  for (let day = today - cap.days + 1; day <= today; day++) {
    const raw = profile.fields[capCounterField(cap.countOf, treatmentId, day)];
    if (raw !== undefined) count += Number(raw) || 0;
  }
  return count;
}

/** D26: exact tag, then ever shorter prefixes down to the base language; a type without per-language fields fits every language. */
function pickLanguage(t: PlannedTreatment, v: PlannedVersion, requested: string): LanguagePick | null {
  if (t.type?.hasPerLanguageFields !== true) return { code: requested, fields: v.agnosticFields };
  // The compiled version is the same object request after request: keep its pick per requested
  // tag, so the field list is one stable array (whose constant rendering content-render keeps).
  let picks = languagePicks.get(v);
  if (picks === undefined) languagePicks.set(v, (picks = new Map()));
  let pick = picks.get(requested);
  if (pick === undefined) {
    const code = pickContentLanguage(v.languages, requested);
    pick = code === null ? null : { code, fields: [...v.agnosticFields, ...(v.contentByLanguage.get(code) ?? [])] };
    // requested tags come from clients: past a bound, picks are computed, not kept
    if (picks.size < MAX_LANGUAGE_PICKS) picks.set(requested, pick);
  }
  return pick;
}

const languagePicks = new WeakMap<PlannedVersion, Map<string, LanguagePick | null>>();
const MAX_LANGUAGE_PICKS = 64;

function eligibilityReasons(t: PlannedTreatment, a: Assessment, surface: string): ExclusionReason[] {
  const reasons: ExclusionReason[] = [];
  if (t.type === undefined) reasons.push('TYPE_MISSING');
  else if (!t.type.surfaces.has(surface)) reasons.push('TYPE_LACKS_SURFACE');
  if (a.version === undefined) {
    if (t.type !== undefined) reasons.push('NOT_LIVE');
    return reasons;
  }
  if (a.version.removedSurfaces.has(surface)) reasons.push('SURFACE_REMOVED');
  if (a.language === null) reasons.push('NO_CONTENT_FOR_LANGUAGE');
  if (a.capped !== undefined) reasons.push('FREQUENCY_CAPPED');
  if (a.rulesPass === false) reasons.push('RULE_NOT_MET');
  return reasons;
}

// ---------------------------------------------------------------------------------------------
// Selection (D28, D29)

interface Verdict {
  t: PlannedTreatment;
  a: Assessment;
  reasons: ExclusionReason[];
  blockedBy?: string;
  score?: number;
  rank?: number;
  /** how it was delivered when not the regular way */
  label?: 'QA' | 'fallback';
}

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
    const rest: PreparedSurface = qa.length === 0 ? surface : { ...surface, max: Math.max(0, surface.max - qa.length), min: Math.max(0, surface.min - qa.length) };
    // Only explanations look beyond the surface's candidates: everything else fails TYPE_LACKS_SURFACE or NOT_LIVE.
    const listed = plan.bySurface.get(surface.name) ?? NO_TREATMENTS;
    const regular = explain ? plan.treatments.filter((t) => !t.isFallback && !qaIds.has(t.treatmentId)) : qaIds.size === 0 ? listed : listed.filter((t) => !qaIds.has(t.treatmentId));
    const main = selectAmong(regular, rest, prep, ranking, assessOf, state, true);
    const fallbackCandidates = explain ? plan.treatments.filter((t) => t.isFallback && !qaIds.has(t.treatmentId)) : (plan.fallbacksBySurface.get(surface.name) ?? []);
    let fallback: { verdicts: Verdict[]; picked: Verdict[] } = NOTHING;
    if (main.picked.length === 0 && qa.length === 0) {
      fallback = selectAmong(fallbackCandidates, rest, prep, ranking, assessOf, state, false);
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
    for (const [i, v] of picked.entries()) v.rank = i + 1;
    perSurface.push({ surface, verdicts: only ? main.verdicts : [...qa, ...main.verdicts, ...fallback.verdicts], picked, withheld: main.withheld });
  }
  const globallyHeldOut = plan.globalHoldoutBasisPoints > 0 && holdoutBucket(`${plan.projectId}:global:${prep.userId}`) < plan.globalHoldoutBasisPoints;
  const decisions: Decision[] = [];
  const userTreatments: UserTreatment[] = [];
  for (const { surface, picked, withheld } of perSurface) {
    for (const v of withheld) decisions.push(decisionOf(v, surface.name, 0, 'HOLDOUT'));
    for (const v of picked) {
      if (globallyHeldOut && v.label !== 'QA') {
        // D37: what would have been returned, withheld (QA deliveries are never held out)
        decisions.push(decisionOf(v, surface.name, 0, 'GLOBAL_HOLDOUT'));
        v.reasons.push('GLOBAL_HOLDOUT');
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
  /** treatment → the surface it was returned on (D28: once per response) */
  returnedOn: Map<string, string>;
  /** mutual exclusion group → the treatment of it that was returned */
  groupWinners: Map<string, string>;
  heldOut: (t: PlannedTreatment) => boolean;
}

interface SurfaceSelection {
  surface: PreparedSurface;
  verdicts: Verdict[];
  picked: Verdict[];
  /** held out (D37): they would have been returned */
  withheld: Verdict[];
}

/** Assess, rank and pick among `candidates` on one surface; `holdouts` false for fallbacks (D42). */
function selectAmong(
  candidates: readonly PlannedTreatment[],
  surface: PreparedSurface,
  prep: PreparedRequest,
  ranking: Ranking,
  assessOf: (t: PlannedTreatment) => Assessment,
  state: SelectionState,
  holdouts: boolean,
): { verdicts: Verdict[]; picked: Verdict[]; withheld: Verdict[] } {
  const verdicts = candidates.map((t) => verdictOf(t, assessOf(t), surface.name, state.returnedOn));
  const qualifying = verdicts.filter((v) => v.reasons.length === 0);
  for (const v of qualifying) v.score = ranking.policy.score({ projectId: prep.projectId, surface: surface.name, treatmentId: v.t.treatmentId, userId: prep.userId }, ranking.stats.get(surface.name, v.t.treatmentId));
  qualifying.sort((x, y) => y.score! - x.score! || compareIds(x.t.treatmentId, y.t.treatmentId));
  const withheld: Verdict[] = [];
  const picked = pick(qualifying, surface, state.groupWinners, holdouts ? state.heldOut : NEVER, withheld);
  for (const v of picked) {
    state.returnedOn.set(v.t.treatmentId, surface.name);
    if (v.t.mutualExclusionGroupId !== undefined) state.groupWinners.set(v.t.mutualExclusionGroupId, v.t.treatmentId);
  }
  return { verdicts, picked, withheld };
}

const NEVER = (): boolean => false;
const NOTHING: { verdicts: Verdict[]; picked: Verdict[] } = { verdicts: [], picked: [] };
const NO_VERDICTS: Verdict[] = [];
const NO_IDS: ReadonlySet<string> = new Set();
const NO_TREATMENTS: readonly PlannedTreatment[] = [];

/** D39: the treatments listing this QA user whose newest version serves the surface, whatever its status but ARCHIVED. */
function qaVerdicts(treatments: readonly PlannedTreatment[], surface: string, language: string, nowMs: number): Verdict[] {
  const out: Verdict[] = [];
  for (const t of treatments) {
    const version = t.newestVersion!;
    if (!t.type!.surfaces.has(surface) || version.removedSurfaces.has(surface)) continue;
    // a deleted treatment's versions all end (D17): ARCHIVED like those that ran out
    if (plannedVersionStatus(version, nowMs) === 'ARCHIVED') continue;
    const lang = pickLanguage(t, version, language);
    if (lang === null) continue;
    out.push({ t, a: { version, language: lang, rules: [], rulesPass: undefined }, reasons: [], label: 'QA' });
  }
  return out;
}

/** D37: per-treatment holdout; the hash is computed only for a treatment with a percentage, once per request. */
function heldOutFor(plan: CatalogPlan, userId: string): (t: PlannedTreatment) => boolean {
  const memo = new Map<string, boolean>();
  return (t) => {
    if (t.holdoutBasisPoints === 0) return false;
    let out = memo.get(t.treatmentId);
    if (out === undefined) {
      out = holdoutBucket(`${plan.projectId}:${t.treatmentId}:${userId}`) < t.holdoutBasisPoints;
      memo.set(t.treatmentId, out);
    }
    return out;
  };
}

/** D37: the first 4 bytes of SHA-256 of the UTF-8 key, big-endian unsigned, mod 10,000. */
export function holdoutBucket(key: string): number {
  return createHash('sha256').update(key, 'utf8').digest().readUInt32BE(0) % 10_000;
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
function pick(ranked: Verdict[], surface: PreparedSurface, groupWinners: ReadonlyMap<string, string>, heldOut: (t: PlannedTreatment) => boolean, withheld: Verdict[]): Verdict[] {
  const picked: Verdict[] = [];
  const groupsHere = new Map<string, string>();
  for (const v of ranked) {
    const group = v.t.mutualExclusionGroupId;
    const winner = group === undefined ? undefined : (groupWinners.get(group) ?? groupsHere.get(group));
    if (winner !== undefined) {
      v.reasons.push('MUTUAL_EXCLUSION');
      v.blockedBy = winner;
    } else if (picked.length >= surface.max) {
      v.reasons.push('MAXIMUM_COUNT_REACHED');
    } else if (heldOut(v.t)) {
      // D37: it would have been returned; withheld, it leaves its place (and its group) to the next
      v.reasons.push('HELD_OUT');
      withheld.push(v);
    } else {
      picked.push(v);
      if (group !== undefined) groupsHere.set(group, v.t.treatmentId);
    }
  }
  if (picked.length >= surface.min) return picked;
  for (const v of picked) v.reasons.push('MINIMUM_COUNT_NOT_MET');
  return [];
}

// ---------------------------------------------------------------------------------------------
// Output

function present(v: Verdict, surface: string, prep: PreparedRequest, profile: StoredProfile, responseId: string): UserTreatment {
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

/** D30: the contextual attribute of that name, then the stored user property. */
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

export function plainRuleValue(v: RuleValue): PlainRuleValue {
  switch (v.kind) {
    case 'integer':
      return v.value.toString();
    case 'timestamp':
      return new Date(Math.floor(v.valueMs)).toISOString();
    case 'integer_list':
      return v.value.map((n) => n.toString());
    default:
      return v.value;
  }
}

function explainSurface(surface: PreparedSurface, verdicts: Verdict[], nowMs: number): SurfaceExplanation {
  const ordered = [...verdicts].sort((x, y) => (x.rank ?? Infinity) - (y.rank ?? Infinity) || compareIds(x.t.treatmentId, y.t.treatmentId));
  return { surface: surface.name, maximumTreatmentCount: surface.max, minimumTreatmentCount: surface.min, treatments: ordered.map((v) => explainTreatment(v, nowMs)) };
}

function explainTreatment(v: Verdict, nowMs: number): TreatmentExplanation {
  const out: TreatmentExplanation = {
    treatmentId: v.t.treatmentId,
    name: v.t.name,
    returned: v.rank !== undefined,
    outcome: outcomeText(v),
    status: plannedTreatmentStatus(v.t, nowMs),
    reasons: v.reasons,
    rules: v.a.rules.map(explainRule),
  };
  if (v.rank !== undefined) out.rank = String(v.rank);
  if (v.a.version !== undefined) out.servedVersionNumber = v.a.version.versionNumber;
  if (v.blockedBy !== undefined) out.blockedBy = v.blockedBy;
  if (v.a.language) out.contentLanguageCode = v.a.language.code;
  if (v.score !== undefined) out.score = v.score;
  return out;
}

function outcomeText(v: Verdict): string {
  if (v.rank !== undefined) return v.label ?? 'returned';
  if (v.reasons.includes('GLOBAL_HOLDOUT')) return 'globally held out';
  if (v.reasons.includes('HELD_OUT')) return 'held out';
  if (v.a.capped !== undefined && v.t.cap !== undefined) return `capped: ${v.a.capped} of ${v.t.cap.maxCount} ${v.t.cap.countOf} in ${v.t.cap.windowName}`;
  return 'not returned';
}

function explainRule(c: RuleCheck): RuleExplanation {
  const { rule, field } = c.planned;
  const out: RuleExplanation = {
    dataFieldId: rule.dataFieldId,
    condition: rule.condition,
    rhsValue: rule.rhsValue,
    dataMissingBehaviour: rule.dataMissingBehaviour,
    source: c.source,
    outcome: c.outcome,
  };
  if (field?.name !== undefined) out.dataFieldName = field.name;
  if (c.value !== undefined) out.value = plainRuleValue(c.value);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Preview (D40): one version rendered for one user as GetTreatments would render it

export interface PreviewRequest {
  projectId: string;
  treatmentId: string;
  /** default: the newest version */
  versionNumber?: number;
  userId?: string;
  languageCode?: string;
  contextualAttributes?: ContextualAttribute[];
}

export interface PreviewEligibility {
  /** every rule met, not capped and not held out: GetTreatments would consider it (if the version were served) */
  eligible: boolean;
  versionNumber: number;
  versionStatus: string;
  rules: RuleExplanation[];
  /** D37 for this user (never for a QA user or a fallback) */
  heldOut: boolean;
  globallyHeldOut: boolean;
  /** D43: "capped: 5 of 5 VIEWED in LAST_7D" when the cap is reached */
  capped?: string;
}

export interface PreviewResult {
  userTreatment: UserTreatment;
  eligibility: PreviewEligibility;
}

/**
 * The version's content rendered with the user's profile and the given attributes (placeholders
 * as D30), on the first surface of its type that it serves, with `treatmentTrackingId: preview`,
 * and the per-rule evaluation. Pure; nothing is logged or counted.
 */
export function previewTreatment(plan: CatalogPlan, input: PreviewRequest, profile: StoredProfile, nowMs: number): PreviewResult {
  const problems: ErrorDetail[] = [];
  const language = prepareLanguage(input.languageCode, problems);
  const attributes = prepareAttributes(input.contextualAttributes ?? [], problems);
  if (problems.length > 0) throw new InvalidArgumentError(`invalid PreviewTreatment request: ${problems.map((p) => `${p.field}: ${p.description}`).join('; ')}`, problems);
  const t = plan.treatmentsById.get(input.treatmentId);
  if (t === undefined) throw new NotFoundError(`treatment ${input.treatmentId} does not exist in project ${plan.projectId}`);
  if (t.type === undefined) throw new FailedPreconditionError(`the type of treatment ${t.treatmentId} no longer exists`);
  const version = input.versionNumber === undefined ? t.newestVersion : t.versions.find((v) => v.versionNumber === input.versionNumber);
  if (version === undefined) throw new NotFoundError(`treatment ${t.treatmentId} has no version ${input.versionNumber}`);
  const userId = input.userId ?? '';
  const prep: PreparedRequest = { projectId: plan.projectId, userId, language, attributes, surfaces: [] };
  const lang = pickLanguage(t, version, language);
  if (lang === null) throw invalidField('languageCode', `version ${version.versionNumber} has no content for "${language}" (it has ${version.languages.join(', ') || 'none'})`);
  const rules = version.rules.map((planned): RuleCheck => {
    const ruleIn: RuleInput = planned.field === undefined ? { value: undefined, source: 'missing' } : ruleInput(planned.field, prep, profile, nowMs);
    return { planned, value: ruleIn.value, source: ruleIn.source, outcome: evaluateRule(planned.rule, ruleIn.value, nowMs, ruleIn.fieldType) };
  });
  const count = t.cap === undefined ? undefined : capCount(t.treatmentId, t.cap, profile, nowMs);
  const capped = t.cap !== undefined && count! >= t.cap.maxCount ? `capped: ${count} of ${t.cap.maxCount} ${t.cap.countOf} in ${t.cap.windowName}` : undefined;
  const heldOut = userId !== '' && !t.isFallback && heldOutFor(plan, userId)(t);
  const globallyHeldOut = userId !== '' && plan.globalHoldoutBasisPoints > 0 && holdoutBucket(`${plan.projectId}:global:${userId}`) < plan.globalHoldoutBasisPoints;
  const surface = [...t.type.surfaces].find((s) => !version.removedSurfaces.has(s)) ?? [...t.type.surfaces][0] ?? '';
  const verdict: Verdict = { t, a: { version, language: lang, rules, rulesPass: undefined }, reasons: [], rank: 1 };
  const userTreatment = { ...present(verdict, surface, prep, profile, 'preview'), treatmentTrackingId: 'preview' };
  const eligibility: PreviewEligibility = {
    eligible: rules.every((r) => r.outcome.result) && capped === undefined && !heldOut && !globallyHeldOut,
    versionNumber: version.versionNumber,
    versionStatus: t.paused && plannedVersionStatus(version, nowMs) === 'LIVE' ? 'PAUSED' : plannedVersionStatus(version, nowMs),
    rules: rules.map(explainRule),
    heldOut,
    globallyHeldOut,
  };
  if (capped !== undefined) eligibility.capped = capped;
  return { userTreatment, eligibility };
}
