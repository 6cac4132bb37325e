/** Why each treatment was or was not returned, in the words ExplainTreatments and PreviewTreatment use (pure). */
import { compareIds, plannedTreatmentStatus } from './catalog-plan.js';
import type { PreparedSurface } from './delivery-request.js';
import { type RuleOutcome } from '../rules/index.js';
import type { RuleValue } from '../rules/index.js';
import type { TreatmentStatus } from '../treatments/index.js';
import type { RuleCheck, Verdict } from './assessment.js';

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

export function explainSurface(surface: PreparedSurface, verdicts: Verdict[], nowMs: number): SurfaceExplanation {
  const ordered = [...verdicts].sort((x, y) => (x.rank ?? Infinity) - (y.rank ?? Infinity) || compareIds(x.t.treatmentId, y.t.treatmentId));
  return {
    surface: surface.name,
    maximumTreatmentCount: surface.max,
    minimumTreatmentCount: surface.min,
    treatments: ordered.map((v) => explainTreatment(v, nowMs)),
  };
}

export function explainTreatment(v: Verdict, nowMs: number): TreatmentExplanation {
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

export function outcomeText(v: Verdict): string {
  if (v.rank !== undefined) return v.label ?? 'returned';
  if (v.reasons.includes('GLOBAL_HOLDOUT')) return 'globally held out';
  if (v.reasons.includes('HELD_OUT')) return 'held out';
  if (v.a.capped !== undefined && v.t.cap !== undefined) return `capped: ${v.a.capped} of ${v.t.cap.maxCount} ${v.t.cap.countOf} in ${v.t.cap.windowName}`;
  return 'not returned';
}

export function explainRule(c: RuleCheck): RuleExplanation {
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
