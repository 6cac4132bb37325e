/** How one treatment fares for one GetTreatments request: its rules, language, cap and holdout (pure). */
import type { StoredProfile } from '../profiles/index.js';
import { hash } from 'node:crypto';
import { capCounterField } from '../profiles/index.js';
import { servedPlannedVersion, type CatalogPlan, type PlannedCap, type PlannedRule, type PlannedTreatment, type PlannedVersion } from './catalog-plan.js';
import type { PreparedRequest } from './delivery-request.js';
import { computeDataFieldValue } from '../aggregation/index.js';
import { evaluateRule, ruleValueFromContextualAttribute, type RuleOutcome, type RuleValue } from '../rules/index.js';
import { pickContentLanguage } from '../treatments/index.js';
import type { ContentField } from '../treatments/index.js';
import type { DataFieldRecord } from '../aggregation/index.js';
import type { ExclusionReason, RuleValueSource } from './explanation.js';

// ---------------------------------------------------------------------------------------------
// Assessment of one treatment for this request (independent of the surface, so computed once)

export interface RuleCheck {
  planned: PlannedRule;
  value: RuleValue | undefined;
  source: RuleValueSource;
  outcome: RuleOutcome;
}

export interface LanguagePick {
  code: string;
  fields: ContentField[];
}

export interface Assessment {
  version: PlannedVersion | undefined;
  /** null: no content for the language; undefined: not looked at */
  language: LanguagePick | null | undefined;
  /** filled for explanations only */
  rules: RuleCheck[];
  /** undefined: not evaluated */
  rulesPass: boolean | undefined;
  /** The user's count in the window when it reached the cap */
  capped?: number;
}

export interface RuleInput {
  value: RuleValue | undefined;
  source: RuleValueSource;
  /** set for contextual attributes, whose kind may differ from the field's type */
  fieldType?: DataFieldRecord['dataFieldType'];
}

export function assessor(prep: PreparedRequest, profile: StoredProfile, nowMs: number, full: boolean): (t: PlannedTreatment) => Assessment {
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
  // by the treatment's ordinal in the plan: a request assesses tens of treatments, an array beats a map
  const assessments: (Assessment | undefined)[] = [];
  return (t) => {
    let a = assessments[t.ordinal];
    if (a === undefined) {
      a = assess(t, prep.language, inputOf, profile, nowMs, full);
      assessments[t.ordinal] = a;
    }
    return a;
  };
}

/** The request's contextual attribute of the field's name first, then the stored profile. */
export function ruleInput(field: DataFieldRecord, prep: PreparedRequest, profile: StoredProfile, nowMs: number): RuleInput {
  const attr = field.name !== undefined ? prep.attributes.get(field.name) : undefined;
  if (attr !== undefined)
    return { value: ruleValueFromContextualAttribute(attr, field.dataFieldType), source: 'contextualAttribute', fieldType: field.dataFieldType };
  const value = computeDataFieldValue(field, profile, nowMs);
  return { value, source: value === undefined ? 'missing' : 'profile' };
}

/** Cheap checks first; without `full`, stops at the first failure. */
export function assess(
  t: PlannedTreatment,
  language: string,
  inputOf: (f: DataFieldRecord | undefined) => RuleInput,
  profile: StoredProfile,
  nowMs: number,
  full: boolean,
): Assessment {
  const version = t.type === undefined ? undefined : servedPlannedVersion(t, nowMs);
  const a: Assessment = { version, language: undefined, rules: full ? [] : NO_RULES, rulesPass: undefined };
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
    const outcome = evaluateRule(planned.rule, input.value, nowMs, input.fieldType, planned);
    if (full) a.rules.push({ planned, value: input.value, source: input.source, outcome }); // only explanations show them
    if (!outcome.result) {
      a.rulesPass = false;
      if (!full) break; // rules are ANDed
    }
  }
  return a;
}

/** The rules of a delivery's assessment: only explanations list them (frozen: nothing may add to it). */
const NO_RULES = Object.freeze([]) as unknown as RuleCheck[];

export const DAY_MS = 86_400_000;

/** Frequency cap window: the counters of the last `days` UTC days, today included. */
export function capCount(treatmentId: string, cap: PlannedCap, profile: StoredProfile, nowMs: number): number {
  const today = Math.floor(nowMs / DAY_MS);
  let count = 0;
  for (let day = today - cap.days + 1; day <= today; day++) {
    const raw = profile.fields[capCounterField(cap.countOf, treatmentId, day)];
    if (raw !== undefined) count += Number(raw) || 0;
  }
  return count;
}

/** Exact tag, then ever shorter prefixes down to the base language; a type without per-language fields fits every language. */
export function pickLanguage(t: PlannedTreatment, v: PlannedVersion, requested: string): LanguagePick | null {
  if (t.type?.hasPerLanguageFields !== true) return { code: requested, fields: v.agnosticFields };
  // The compiled version is the same object request after request: keep its pick per requested
  // tag, so the field list is one stable array (whose constant rendering content-render keeps).
  const picks = v.languagePicks;
  let pick = picks.get(requested);
  if (pick === undefined) {
    const code = pickContentLanguage(v.languages, requested);
    pick = code === null ? null : { code, fields: [...v.agnosticFields, ...(v.contentByLanguage.get(code) ?? [])] };
    // requested tags come from clients: past a bound, picks are computed, not kept
    if (picks.size < MAX_LANGUAGE_PICKS) picks.set(requested, pick);
  }
  return pick;
}

export const MAX_LANGUAGE_PICKS = 64;

export function eligibilityReasons(t: PlannedTreatment, a: Assessment, surface: string): ExclusionReason[] {
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

/**
 * `eligibilityReasons(t, a, surface).length === 0`, without building the list: delivery asks it
 * of every candidate of every requested surface and keeps only those that pass.
 */
export function isEligible(t: PlannedTreatment, a: Assessment, surface: string): boolean {
  if (t.type === undefined || !t.type.surfaces.has(surface) || a.version === undefined) return false;
  return !a.version.removedSurfaces.has(surface) && a.language !== null && a.capped === undefined && a.rulesPass !== false;
}

/** A treatment assessed for one surface: the verdict explanations and selection share. */
export interface Verdict {
  t: PlannedTreatment;
  a: Assessment;
  reasons: ExclusionReason[];
  blockedBy?: string;
  score?: number;
  rank?: number;
  /** how it was delivered when not the regular way */
  label?: 'QA' | 'fallback';
}

/** Per-treatment holdout; the hash is computed only for a treatment with a percentage, once per request. */
export function heldOutFor(plan: CatalogPlan, userId: string): (t: PlannedTreatment) => boolean {
  // made on the first treatment with a holdout: most have none
  let memo: Map<string, boolean> | undefined;
  return (t) => {
    if (t.holdoutBasisPoints === 0) return false;
    memo ??= new Map();
    let out = memo.get(t.treatmentId);
    if (out === undefined) {
      out = holdoutBucket(`${plan.projectId}:${t.treatmentId}:${userId}`) < t.holdoutBasisPoints;
      memo.set(t.treatmentId, out);
    }
    return out;
  };
}

/** The first 4 bytes of SHA-256 of the UTF-8 key, big-endian unsigned, mod 10,000. */
export function holdoutBucket(key: string): number {
  // the one-shot hash as hex: no Hash object nor Buffer per call (a request with holdouts hashes once a treatment)
  return parseInt(hash('sha256', key).slice(0, 8), 16) % 10_000;
}
