import { defineOperation, type V1Operation } from '../http/v1-operation.js';
import type { ApiServices } from '../compose-api.js';
import { InvalidArgumentError, FailedPreconditionError, NotFoundError, AlreadyExistsError, invalidField, type ErrorDetail } from '../../shared/platform/errors.js';
import { int64String } from '../../shared/platform/int64.js';
import { validateContent, validateRemovedSurfaces, validateRules } from '../../shared/treatments/index.js';
import { conditionFitsType, validateRhs } from '../../shared/delivery/index.js';
import { parseRfc3339 } from '../../shared/platform/rfc3339.js';
import { applyUpdate, createTreatment, deleteTreatment, pauseTreatment, type TreatmentControls, type TreatmentUpdate, type VersionFields } from '../../shared/treatments/index.js';
import { parseWindowDays } from '../../shared/aggregation/index.js';
import { filterTreatments } from '../../shared/treatments/index.js';
import { presentTreatment } from '../../shared/treatments/index.js';
import type { Content, EligibilityRule, TreatmentRecord, TreatmentVersionRecord } from '../../shared/treatments/index.js';
import type { DataFieldType } from '../../shared/aggregation/index.js';
import type { TreatmentType } from '../../shared/catalog/index.js';
import type { TreatmentTransition } from '../../shared/treatments/index.js';
import {
  GetAllTreatmentsRequest,
  GetTreatmentRequest,
  InsertTreatmentRequest,
  PAUSE_DELETE_FIELDS,
  TreatmentResponse,
  TreatmentsResponse,
  UpdateTreatmentRequest,
  type InsertTreatmentBody,
  type UpdateTreatmentBody,
} from '../../shared/treatments/index.js';

// ------------------------------------------------------------------------------------------------
// Request → domain: the version-level fields a request sets, checked against the treatment's type
// and the project's data fields (D14). Every problem is collected so one 400 names them all.

type VersionInput = Partial<Pick<InsertTreatmentBody, 'startTimestamp' | 'endTimestamp' | 'content' | 'eligibilityRules' | 'removedSurfaces' | 'tags' | 'targetAction'>>;

async function versionFieldsOf(ctx: ApiServices, projectId: string, type: TreatmentType, body: VersionInput, base?: TreatmentVersionRecord): Promise<Partial<VersionFields>> {
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
    // D35: the target action is an event of the project (its conversion event in reports).
    if ((await ctx.eventSchemas.getById(projectId, out.targetActionEventId)) === undefined) {
      problems.push({ field: 'targetAction.eventId', description: `no event schema ${out.targetActionEventId} in project ${projectId} (register the event name with InsertEventSchema, or log it)` });
    }
  }
  problems.push(...timestampsOf(body, out, base));
  if (problems.length > 0) throw new InvalidArgumentError(`invalid treatment: ${problems.map((p) => `${p.field}: ${p.description}`).join('; ')}`, problems);
  return out;
}

/** Strict RFC 3339 (Feb 30 is rejected, unlike Date.parse), stored as UTC `toISOString()` (D3). */
function timestampsOf(body: VersionInput, out: Partial<VersionFields>, base?: TreatmentVersionRecord): ErrorDetail[] {
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

function contentOf(c: NonNullable<VersionInput['content']>): Content {
  return {
    contentByLanguage: (c.contentByLanguage ?? []).map((e) => ({ languageCode: { languageCode: e.languageCode.languageCode }, contentFields: e.contentFields ?? [] })),
    languageAgnosticContentFields: c.languageAgnosticContentFields ?? [],
  };
}

type RuleInput = NonNullable<NonNullable<VersionInput['eligibilityRules']>['rules']>[number];

async function rulesOf(ctx: ApiServices, projectId: string, input: RuleInput[]): Promise<{ rules: EligibilityRule[]; problems: ErrorDetail[] }> {
  const rules: EligibilityRule[] = input.map((r, i) => ({
    dataFieldId: int64String(`eligibilityRules.rules[${i}].dataFieldId`, r.dataFieldId),
    condition: r.condition,
    rhsValue: r.rhsValue,
    // The spec's default made explicit, so a reader of the treatment sees what applies.
    dataMissingBehaviour: r.dataMissingBehaviour === 'EVALUATE_TO_ELIGIBLE' ? 'EVALUATE_TO_ELIGIBLE' : 'EVALUATE_TO_INELIGIBLE',
  }));
  if (rules.length === 0) return { rules, problems: [] };
  const fieldTypes = new Map<string, DataFieldType>((await ctx.dataFields.list(projectId)).map((f) => [f.dataFieldId, f.dataFieldType]));
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
// Delivery controls (D37, D39, D42, D43): treatment-level fields, checked beyond their schema.

type ControlInput = Pick<UpdateTreatmentBody, 'holdoutPercentage' | 'qaUserIds' | 'isFallback' | 'frequencyCap' | 'clearFrequencyCap'>;

function controlsOf(body: ControlInput): TreatmentControls {
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

/** D37: a number from 0 to 100 with at most two decimals; null when valid. */
export function percentageProblem(value: number): string | null {
  if (!Number.isFinite(value) || value < 0 || value > 100) return 'must be a number from 0 to 100';
  if (Math.abs(value * 100 - Math.round(value * 100)) > 1e-6) return 'must have at most two decimals';
  return null;
}

function unique(values: string[]): string[] {
  return [...new Set(values)];
}

/** undefined: unchanged; null: cleared (the wire's empty string); else the group's id, created on first use. */
async function groupIdOf(ctx: ApiServices, projectId: string, name: string | undefined, actor: string): Promise<string | null | undefined> {
  if (name === undefined) return undefined;
  if (name === '') return null;
  return (await ctx.mutualExclusionGroups.getOrCreate(projectId, name, actor)).mutualExclusionGroupId;
}

async function present(ctx: ApiServices, t: TreatmentRecord) {
  const [type, group] = await Promise.all([
    ctx.treatmentTypes.get(t.projectId, t.treatmentTypeId),
    t.mutualExclusionGroupId !== undefined ? ctx.mutualExclusionGroups.get(t.projectId, t.mutualExclusionGroupId) : undefined,
  ]);
  return presentTreatment(t, { type: type ?? undefined, group }, ctx.now());
}

// ------------------------------------------------------------------------------------------------
// InsertTreatment

async function insertTreatment(body: InsertTreatmentBody, ctx: ApiServices): Promise<TreatmentRecord> {
  const { projectId, lastModifiedBy } = body;
  const type = await ctx.treatmentTypes.getByName(projectId, body.treatmentTypeName);
  if (!type) throw invalidField('treatmentTypeName', `treatment type "${body.treatmentTypeName}" does not exist in project ${projectId}`);
  const controls = controlsOf(body);
  const f = await versionFieldsOf(ctx, projectId, type, body);
  if (body.externalTreatmentId !== undefined && (await ctx.treatments.idByExternalId(projectId, body.externalTreatmentId)) !== undefined) {
    throw new AlreadyExistsError(`externalTreatmentId "${body.externalTreatmentId}" is already used by another treatment of the project`);
  }
  const groupId = await groupIdOf(ctx, projectId, body.mutualExclusionGroup, lastModifiedBy);
  const version: VersionFields = {
    startTimestamp: f.startTimestamp!,
    endTimestamp: f.endTimestamp,
    tags: f.tags ?? [],
    content: f.content!,
    eligibilityRules: f.eligibilityRules ?? [],
    removedSurfaces: f.removedSurfaces ?? [],
    targetActionEventId: f.targetActionEventId,
  };
  const build = (treatmentId: string, current: TreatmentType) => {
    // The type may have changed since the request was checked (D50): check the content again.
    const { problems } = validateContent(version.content, current);
    if (problems.length > 0) throw new InvalidArgumentError(`invalid treatment: ${describe(problems)}`, problems);
    return createTreatment(
      {
        treatmentId,
        projectId,
        name: body.name,
        description: body.description,
        treatmentTypeId: type.treatmentTypeId,
        lastModifiedBy,
        externalTreatmentId: body.externalTreatmentId,
        mutualExclusionGroupId: groupId ?? undefined,
        shouldPublish: body.shouldPublish,
        version,
        controls,
      },
      ctx.now(),
    );
  };
  const source = body.modificationSource ?? 'API';
  return ctx.treatments.insert(projectId, type.treatmentTypeId, (id, current) => ({ ...build(id, current), modificationSource: source }), { actor: lastModifiedBy, operation: 'InsertTreatment' });
}

// ------------------------------------------------------------------------------------------------
// UpdateTreatment

type UpdateAction = 'edit' | 'pause' | 'delete';

/** D5: shouldPause / shouldDelete admit only the identifying fields; both at once is ambiguous. */
function updateActionOf(body: UpdateTreatmentBody): UpdateAction {
  const pause = body.shouldPause === true;
  const del = body.shouldDelete === true;
  if (pause && del) {
    throw new InvalidArgumentError('shouldPause and shouldDelete cannot both be true', [
      { field: 'shouldPause', description: 'cannot be combined with shouldDelete' },
      { field: 'shouldDelete', description: 'cannot be combined with shouldPause' },
    ]);
  }
  if (!pause && !del) return 'edit';
  const flag = pause ? 'shouldPause' : 'shouldDelete';
  const extra = Object.entries(body).filter(([k, v]) => v !== undefined && !PAUSE_DELETE_FIELDS.has(k)).map(([k]) => k);
  if (extra.length > 0) {
    throw new InvalidArgumentError(
      `with ${flag} true only projectId, treatmentId, externalTreatmentId and lastModifiedBy may be sent; remove ${extra.join(', ')}`,
      extra.map((field) => ({ field, description: `not allowed together with ${flag}` })),
    );
  }
  return pause ? 'pause' : 'delete';
}

interface UpdateTarget {
  record: TreatmentRecord;
  /** externalTreatmentId given with a treatmentId whose treatment has none yet: it is set (D15). */
  assignExternalId?: string;
}

/** D6: unknown ids (also ids of another project) are 404; two ids naming different treatments are 400. */
async function locateTreatment(ctx: ApiServices, body: UpdateTreatmentBody): Promise<UpdateTarget> {
  const { projectId, treatmentId, externalTreatmentId: ext } = body;
  if (treatmentId === undefined && ext === undefined) {
    throw new InvalidArgumentError('either treatmentId or externalTreatmentId is required', [{ field: 'treatmentId', description: 'either treatmentId or externalTreatmentId is required' }]);
  }
  const byExt = ext !== undefined ? await ctx.treatments.idByExternalId(projectId, ext) : undefined;
  const id = treatmentId ?? byExt;
  if (id === undefined) throw new NotFoundError(`no treatment with externalTreatmentId "${ext}" in project ${projectId}`);
  const record = await ctx.treatments.get(projectId, id);
  if (!record) throw new NotFoundError(`treatment ${id} does not exist in project ${projectId}`);
  if (ext === undefined || record.externalTreatmentId === ext) return { record };
  if (record.externalTreatmentId !== undefined || (byExt !== undefined && byExt !== id)) {
    throw invalidField('externalTreatmentId', `"${ext}" does not identify treatment ${id} given as treatmentId`);
  }
  return { record, assignExternalId: ext };
}

function withExternalId(t: TreatmentRecord, ext: string | undefined): TreatmentRecord {
  return ext === undefined ? t : { ...t, externalTreatmentId: ext };
}

function lifecycleTransition(ctx: ApiServices, action: 'pause' | 'delete', body: UpdateTreatmentBody, target: UpdateTarget): TreatmentTransition {
  const change = action === 'pause' ? pauseTreatment : deleteTreatment;
  return (current) => ({ treatment: withExternalId(change(current, body.lastModifiedBy, ctx.now()), target.assignExternalId), changed: true });
}

async function editTransition(ctx: ApiServices, body: UpdateTreatmentBody, target: UpdateTarget): Promise<TreatmentTransition> {
  const { projectId, lastModifiedBy } = body;
  const type = await ctx.treatmentTypes.get(projectId, target.record.treatmentTypeId);
  if (!type) throw new FailedPreconditionError(`the treatment's type ${target.record.treatmentTypeId} no longer exists`);
  const newest = target.record.versions.reduce((a, b) => (b.versionNumber > a.versionNumber ? b : a));
  const controls = controlsOf(body);
  const fields = await versionFieldsOf(ctx, projectId, type, body, newest);
  const update: TreatmentUpdate = {
    lastModifiedBy,
    name: body.name,
    description: body.description,
    externalTreatmentId: target.assignExternalId,
    mutualExclusionGroupId: await groupIdOf(ctx, projectId, body.mutualExclusionGroup, lastModifiedBy),
    ...fields,
    ...(body.clearEndTimestamp === true ? { endTimestamp: null } : {}),
    ...(body.clearTargetAction === true ? { targetActionEventId: null } : {}),
    shouldPublish: body.shouldPublish,
    controls,
  };
  // Re-run on every optimistic retry against the freshest record and type, so no concurrent change is lost.
  return (current, currentType) => {
    const result = applyUpdate(current, update, ctx.now());
    if (result.changed && result.treatment.versions !== current.versions) assertNewestFitsType(result.treatment, currentType, body.content !== undefined);
    return result;
  };
}

/**
 * D50: a version that becomes the newest or gets published must fit the type as it is now. A new
 * version copies the content of the previous one, which a type change may have made invalid (an
 * archived treatment's content is not checked by UpdateTreatmentType), and a draft may be
 * published long after the type changed.
 */
function assertNewestFitsType(t: TreatmentRecord, type: TreatmentType | undefined, contentGiven: boolean): void {
  if (!type) throw new FailedPreconditionError(`the treatment's type ${t.treatmentTypeId} no longer exists`);
  const newest = t.versions.reduce((a, b) => (b.versionNumber > a.versionNumber ? b : a));
  const { problems } = validateContent(newest.content, type);
  if (problems.length === 0) return;
  if (contentGiven) throw new InvalidArgumentError(`invalid treatment: ${describe(problems)}`, problems);
  throw new FailedPreconditionError(
    `the content of version ${newest.versionNumber} no longer fits treatment type "${type.treatmentTypeName}"; send content that does: ${describe(problems)}`,
    problems.map((p) => ({ field: 'content', description: `${p.field.replace(/^content\./, '')}: ${p.description}` })),
  );
}

function describe(problems: ErrorDetail[]): string {
  return problems.map((p) => `${p.field}: ${p.description}`).join('; ');
}

/** D50: clearEndTimestamp / clearTargetAction cannot be combined with a value for the same field. */
function assertClearFlags(body: UpdateTreatmentBody): void {
  const problems: ErrorDetail[] = [];
  if (body.clearEndTimestamp === true && body.endTimestamp !== undefined) problems.push({ field: 'clearEndTimestamp', description: 'cannot be true together with endTimestamp' });
  if (body.clearTargetAction === true && body.targetAction !== undefined) problems.push({ field: 'clearTargetAction', description: 'cannot be true together with targetAction' });
  if (problems.length > 0) throw new InvalidArgumentError(describe(problems), problems);
}

async function updateTreatment(body: UpdateTreatmentBody, ctx: ApiServices): Promise<TreatmentRecord> {
  const action = updateActionOf(body);
  assertClearFlags(body);
  const target = await locateTreatment(ctx, body);
  const transition = action === 'edit' ? await editTransition(ctx, body, target) : lifecycleTransition(ctx, action, body, target);
  const operation = { edit: 'UpdateTreatment', pause: 'PauseTreatment', delete: 'DeleteTreatment' }[action];
  // D46: every change is stamped with where it came from (the console sends TDS_CONSOLE).
  const source = body.modificationSource ?? 'API';
  const stamped: TreatmentTransition = (current, type) => {
    const result = transition(current, type);
    return result.changed ? { ...result, treatment: { ...result.treatment, modificationSource: source } } : result;
  };
  return ctx.treatments.update(body.projectId, target.record.treatmentId, stamped, { actor: body.lastModifiedBy, operation });
}

// ------------------------------------------------------------------------------------------------
// Operations

export const insertTreatmentOperation = defineOperation({
  operation: 'InsertTreatment',
  summary: 'Create a treatment (version 1; published when shouldPublish is true)',
  permissions: ['TREATMENT_MANAGEMENT'],
  body: InsertTreatmentRequest,
  response: TreatmentResponse,
  handler: async (body, _auth, ctx) => ({ treatment: await present(ctx, await insertTreatment(body, ctx)) }),
});

export const updateTreatmentOperation = defineOperation({
  operation: 'UpdateTreatment',
  summary: 'Update, publish, pause or delete a treatment; version-level changes create a new version (holdoutPercentage, qaUserIds, isFallback and frequencyCap are treatment-level and do not)',
  permissions: ['TREATMENT_MANAGEMENT'],
  body: UpdateTreatmentRequest,
  response: TreatmentResponse,
  handler: async (body, _auth, ctx) => ({ treatment: await present(ctx, await updateTreatment(body, ctx)) }),
});

export const getTreatmentOperation = defineOperation({
  operation: 'GetTreatment',
  summary: 'Read one treatment with every version',
  permissions: ['DELIVERY', 'TREATMENT_MANAGEMENT'],
  keyParam: 'api_key',
  alt: true,
  body: GetTreatmentRequest,
  response: TreatmentResponse,
  handler: async (body, _auth, ctx) => {
    const t = await ctx.treatments.get(body.projectId, body.treatmentId);
    if (!t) throw new NotFoundError(`treatment ${body.treatmentId} does not exist in project ${body.projectId}`);
    return { treatment: await present(ctx, t) };
  },
});

export const getAllTreatmentsOperation = defineOperation({
  operation: 'GetAllTreatments',
  summary: 'List the treatments of a project (ascending treatmentId), with type, surface, tag and version filters',
  permissions: ['TREATMENT_MANAGEMENT'],
  body: GetAllTreatmentsRequest,
  response: TreatmentsResponse,
  handler: async (body, _auth, ctx) => {
    const { projectId } = body;
    const [records, types, groups] = await Promise.all([ctx.treatments.list(projectId), ctx.treatmentTypes.list(projectId), ctx.mutualExclusionGroups.list(projectId)]);
    const typesById = new Map(types.map((t) => [t.treatmentTypeId, t]));
    const groupsById = new Map(groups.map((g) => [g.mutualExclusionGroupId, g]));
    const nowMs = ctx.now();
    const listed = filterTreatments(
      records,
      typesById,
      {
        // "" is what an encoder of an unset string sends: no filter, not "the type named ''".
        treatmentTypeName: body.treatmentFilter?.treatmentTypeName || undefined,
        surfaceNames: body.treatmentVersionFilter?.surface?.surfaceNames,
        tags: body.treatmentVersionFilter?.tag?.tags,
        maxNonLiveVersions: body.maxNonLiveVersions,
      },
      nowMs,
    );
    return {
      treatments: listed.map(({ treatment, versions }) =>
        presentTreatment(treatment, { type: typesById.get(treatment.treatmentTypeId), group: groupsById.get(treatment.mutualExclusionGroupId ?? '') }, nowMs, versions),
      ),
    };
  },
});

/** InsertTreatment, UpdateTreatment, GetTreatment, GetAllTreatments. */
export const treatmentOperations = [insertTreatmentOperation, updateTreatmentOperation, getTreatmentOperation, getAllTreatmentsOperation] as unknown as V1Operation[];
