/** PreviewTreatment: one version rendered for one user as GetTreatments would render it (pure). */
import { FailedPreconditionError, InvalidArgumentError, NotFoundError, invalidField, type ErrorDetail } from '../platform/errors.js';
import type { StoredProfile } from '../profiles/index.js';
import { plannedVersionStatus, type CatalogPlan } from './catalog-plan.js';
import { prepareAttributes, prepareLanguage, type PreparedRequest } from './delivery-request.js';
import { evaluateRule } from '../rules/index.js';
import type { ContextualAttribute, UserTreatment } from './delivery.schemas.js';
import { capCount, type RuleCheck, type RuleInput, type Verdict, heldOutFor, holdoutBucket, pickLanguage, ruleInput } from './assessment.js';
import { present } from './delivery.js';
import { explainRule, type RuleExplanation } from './explanation.js';

// ---------------------------------------------------------------------------------------------
// Preview: one version rendered for one user as GetTreatments would render it

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
  /** held out for this user (never a QA user or a fallback) */
  heldOut: boolean;
  globallyHeldOut: boolean;
  /** "capped: 5 of 5 VIEWED in LAST_7D" when the cap is reached */
  capped?: string;
}

export interface PreviewResult {
  userTreatment: UserTreatment;
  eligibility: PreviewEligibility;
}

/**
 * The version's content rendered with the user's profile and the given attributes (placeholders
 * filled as GetTreatments fills them), on the first surface of its type that it serves, with `treatmentTrackingId: preview`,
 * and the per-rule evaluation. Pure; nothing is logged or counted.
 */
export function previewTreatment(plan: CatalogPlan, input: PreviewRequest, profile: StoredProfile, nowMs: number): PreviewResult {
  const problems: ErrorDetail[] = [];
  const language = prepareLanguage(input.languageCode, problems);
  const attributes = prepareAttributes(input.contextualAttributes ?? [], problems);
  if (problems.length > 0)
    throw new InvalidArgumentError(`invalid PreviewTreatment request: ${problems.map((p) => `${p.field}: ${p.description}`).join('; ')}`, problems);
  const t = plan.treatmentsById.get(input.treatmentId);
  if (t === undefined) throw new NotFoundError(`treatment ${input.treatmentId} does not exist in project ${plan.projectId}`);
  if (t.type === undefined) throw new FailedPreconditionError(`the type of treatment ${t.treatmentId} no longer exists`);
  const version = input.versionNumber === undefined ? t.newestVersion : t.versions.find((v) => v.versionNumber === input.versionNumber);
  if (version === undefined) throw new NotFoundError(`treatment ${t.treatmentId} has no version ${input.versionNumber}`);
  const userId = input.userId ?? '';
  const prep: PreparedRequest = { projectId: plan.projectId, userId, language, attributes, surfaces: [] };
  const lang = pickLanguage(t, version, language);
  if (lang === null)
    throw invalidField('languageCode', `version ${version.versionNumber} has no content for "${language}" (it has ${version.languages.join(', ') || 'none'})`);
  const rules = version.rules.map((planned): RuleCheck => {
    const ruleIn: RuleInput = planned.field === undefined ? { value: undefined, source: 'missing' } : ruleInput(planned.field, prep, profile, nowMs);
    return { planned, value: ruleIn.value, source: ruleIn.source, outcome: evaluateRule(planned.rule, ruleIn.value, nowMs, ruleIn.fieldType) };
  });
  const count = t.cap === undefined ? undefined : capCount(t.treatmentId, t.cap, profile, nowMs);
  const capped = t.cap !== undefined && count! >= t.cap.maxCount ? `capped: ${count} of ${t.cap.maxCount} ${t.cap.countOf} in ${t.cap.windowName}` : undefined;
  const heldOut = userId !== '' && !t.isFallback && heldOutFor(plan, userId)(t);
  const globallyHeldOut =
    userId !== '' && plan.globalHoldoutBasisPoints > 0 && holdoutBucket(`${plan.projectId}:global:${userId}`) < plan.globalHoldoutBasisPoints;
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
