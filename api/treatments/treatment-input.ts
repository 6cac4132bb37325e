/** InsertTreatment and UpdateTreatment bodies read into the treatment's fields: version fields checked against its type and data fields, and the delivery controls. */
import type { ApiServices } from '../compose-api.js';
import { InvalidArgumentError, type ErrorDetail } from '../../shared/platform/errors.js';
import { int64String } from '../../shared/platform/int64.js';
import { validateContent, validateRemovedSurfaces, validateRules } from '../../shared/treatments/index.js';
import { conditionFitsType, validateRhs } from '../../shared/rules/index.js';
import { parseRfc3339 } from '../../shared/platform/rfc3339.js';
import { type TreatmentControls, type VersionFields } from '../../shared/treatments/index.js';
import { parseWindowDays } from '../../shared/aggregation/index.js';
import type { Content, EligibilityRule, TreatmentRecord, TreatmentVersionRecord } from '../../shared/treatments/index.js';
import type { DataFieldType } from '../../shared/aggregation/index.js';
import type { TreatmentType } from '../../shared/catalog/index.js';
import { type InsertTreatmentBody, type UpdateTreatmentBody } from '../../shared/treatments/index.js';
import { presentTreatment } from '../../shared/treatments/treatment.presenter.js';

// ------------------------------------------------------------------------------------------------
// Request → domain: the version-level fields a request sets, checked against the treatment's type
// and the project's data fields. Every problem is collected so one 400 names them all.

export type VersionInput = Partial<
  Pick<InsertTreatmentBody, 'startTimestamp' | 'endTimestamp' | 'content' | 'eligibilityRules' | 'removedSurfaces' | 'tags' | 'targetAction'>
>;

export async function versionFieldsOf(
  ctx: Pick<ApiServices, 'now' | 'catalog' | 'aggregation'>,
  projectId: string,
  type: TreatmentType,
  body: VersionInput,
  base?: TreatmentVersionRecord,
): Promise<Partial<VersionFields>> {
  const problems: ErrorDetail[] = [];
  const out: Partial<VersionFields> = {};
  if (body.content !== undefined) {
    const checked = validateContent(contentOf(body.content), type);
    problems.push(...checked.problems);
    out.content = checked.content;
  }
  if (body.eligibilityRules !== undefined) {
    const checked = await rulesOf(ctx, projectId, body.eligibilityRules.rules ?? []);
    problems.push(...checked.problems);
    out.eligibilityRules = checked.rules;
  }
  if (body.removedSurfaces !== undefined) {
    out.removedSurfaces = unique((body.removedSurfaces.surfaces ?? []).map((s) => s.name));
    problems.push(...validateRemovedSurfaces(out.removedSurfaces, type));
  }
  if (body.tags !== undefined) out.tags = unique(body.tags.map((t) => t.name));
  if (body.targetAction !== undefined) {
    out.targetActionEventId = int64String('targetAction.eventId', body.targetAction.eventId);
    // The target action is an event of the project (its conversion event in reports).
    if ((await ctx.catalog.eventSchemas.getById(projectId, out.targetActionEventId)) === undefined) {
      problems.push({
        field: 'targetAction.eventId',
        description: `no event schema ${out.targetActionEventId} in project ${projectId} (register the event name with InsertEventSchema, or log it)`,
      });
    }
  }
  problems.push(...timestampsOf(body, out, base));
  if (problems.length > 0) throw new InvalidArgumentError(`invalid treatment: ${problems.map((p) => `${p.field}: ${p.description}`).join('; ')}`, problems);
  return out;
}

/** Strict RFC 3339 (Feb 30 is rejected, unlike Date.parse), stored as UTC `toISOString()`. */
export function timestampsOf(body: VersionInput, out: Partial<VersionFields>, base?: TreatmentVersionRecord): ErrorDetail[] {
  const problems: ErrorDetail[] = [];
  for (const field of ['startTimestamp', 'endTimestamp'] as const) {
    const text = body[field];
    if (text === undefined) continue;
    const ms = parseRfc3339(text);
    if (ms === undefined) problems.push({ field, description: `"${text}" is not a valid RFC 3339 timestamp` });
    else out[field] = new Date(ms).toISOString();
  }
  if (problems.length > 0 || (out.startTimestamp === undefined && out.endTimestamp === undefined)) return problems;
  // Checked only when the request moves a bound: an inherited pair may legitimately be inverted
  // (a deleted scheduled version ends before its start).
  const start = out.startTimestamp ?? base?.startTimestamp;
  const end = out.endTimestamp ?? base?.endTimestamp;
  if (start !== undefined && end !== undefined && Date.parse(end) <= Date.parse(start)) {
    problems.push({ field: 'endTimestamp', description: `must be after startTimestamp (${start})` });
  }
  return problems;
}

export function contentOf(c: NonNullable<VersionInput['content']>): Content {
  return {
    contentByLanguage: (c.contentByLanguage ?? []).map((e) => ({
      languageCode: { languageCode: e.languageCode.languageCode },
      contentFields: e.contentFields ?? [],
    })),
    languageAgnosticContentFields: c.languageAgnosticContentFields ?? [],
  };
}

export type RuleInput = NonNullable<NonNullable<VersionInput['eligibilityRules']>['rules']>[number];

export async function rulesOf(
  ctx: Pick<ApiServices, 'aggregation'>,
  projectId: string,
  input: RuleInput[],
): Promise<{ rules: EligibilityRule[]; problems: ErrorDetail[] }> {
  const rules: EligibilityRule[] = input.map((r, i) => ({
    dataFieldId: int64String(`eligibilityRules.rules[${i}].dataFieldId`, r.dataFieldId),
    condition: r.condition,
    rhsValue: r.rhsValue,
    // The spec's default made explicit, so a reader of the treatment sees what applies.
    dataMissingBehaviour: r.dataMissingBehaviour === 'EVALUATE_TO_ELIGIBLE' ? 'EVALUATE_TO_ELIGIBLE' : 'EVALUATE_TO_INELIGIBLE',
  }));
  if (rules.length === 0) return { rules, problems: [] };
  const fieldTypes = new Map<string, DataFieldType>((await ctx.aggregation.dataFields.list(projectId)).map((f) => [f.dataFieldId, f.dataFieldType]));
  const problems = validateRules(rules, fieldTypes, conditionFitsType);
  rules.forEach((rule, i) => {
    const type = fieldTypes.get(rule.dataFieldId);
    if (type === undefined || !conditionFitsType(rule.condition, type)) return;
    const why = validateRhs(rule.condition, type, rule.rhsValue);
    if (why !== null) problems.push({ field: `eligibilityRules.rules[${i}].rhsValue`, description: why });
  });
  return { rules, problems };
}

// ------------------------------------------------------------------------------------------------
// Delivery controls (holdout, QA users, fallback, frequency cap): treatment-level fields, checked beyond their schema.

export type ControlInput = Pick<UpdateTreatmentBody, 'holdoutPercentage' | 'qaUserIds' | 'isFallback' | 'frequencyCap' | 'clearFrequencyCap'>;

export function controlsOf(body: ControlInput): TreatmentControls {
  const problems: ErrorDetail[] = [];
  const out: TreatmentControls = {};
  if (body.holdoutPercentage !== undefined) {
    const why = percentageProblem(body.holdoutPercentage);
    if (why !== null) problems.push({ field: 'holdoutPercentage', description: why });
    out.holdoutPercentage = body.holdoutPercentage;
  }
  if (body.qaUserIds !== undefined) out.qaUserIds = unique(body.qaUserIds);
  if (body.isFallback !== undefined) out.isFallback = body.isFallback;
  if (body.frequencyCap !== undefined) {
    try {
      parseWindowDays(body.frequencyCap.windowName, 'frequencyCap.windowName');
    } catch (err) {
      if (!(err instanceof InvalidArgumentError)) throw err;
      problems.push(...(err.details.length > 0 ? err.details : [{ field: 'frequencyCap.windowName', description: err.message }]));
    }
    out.frequencyCap = { maxCount: body.frequencyCap.maxCount, windowName: body.frequencyCap.windowName, countOf: body.frequencyCap.countOf };
  }
  if (body.clearFrequencyCap === true) {
    if (body.frequencyCap !== undefined) problems.push({ field: 'clearFrequencyCap', description: 'cannot be combined with frequencyCap' });
    out.frequencyCap = null;
  }
  if (problems.length > 0) throw new InvalidArgumentError(`invalid treatment: ${problems.map((p) => `${p.field}: ${p.description}`).join('; ')}`, problems);
  return out;
}

/** A number from 0 to 100 with at most two decimals; null when valid. */
export function percentageProblem(value: number): string | null {
  if (!Number.isFinite(value) || value < 0 || value > 100) return 'must be a number from 0 to 100';
  if (Math.abs(value * 100 - Math.round(value * 100)) > 1e-6) return 'must have at most two decimals';
  return null;
}

export function unique(values: string[]): string[] {
  return [...new Set(values)];
}

/** undefined: unchanged; null: cleared (the wire's empty string); else the group's id, created on first use. */
export async function groupIdOf(
  ctx: Pick<ApiServices, 'catalog'>,
  projectId: string,
  name: string | undefined,
  actor: string,
): Promise<string | null | undefined> {
  if (name === undefined) return undefined;
  if (name === '') return null;
  return (await ctx.catalog.mutualExclusionGroups.getOrCreate(projectId, name, actor)).mutualExclusionGroupId;
}

export async function present(ctx: Pick<ApiServices, 'now' | 'catalog'>, t: TreatmentRecord) {
  const [type, group] = await Promise.all([
    ctx.catalog.treatmentTypes.get(t.projectId, t.treatmentTypeId),
    t.mutualExclusionGroupId !== undefined ? ctx.catalog.mutualExclusionGroups.get(t.projectId, t.mutualExclusionGroupId) : undefined,
  ]);
  return presentTreatment(t, { type: type ?? undefined, group }, ctx.now());
}
