import { operationsUsing } from '../http/v1-operation.js';
import type { ApiServices } from '../compose-api.js';
import {
  InvalidArgumentError,
  FailedPreconditionError,
  NotFoundError,
  AlreadyExistsError,
  invalidField,
  type ErrorDetail,
} from '../../shared/platform/errors.js';
import { validateContent } from '../../shared/treatments/index.js';
import { applyUpdate, createTreatment, deleteTreatment, pauseTreatment, type TreatmentUpdate, type VersionFields } from '../../shared/treatments/index.js';
import { filterTreatments } from '../../shared/treatments/index.js';
import type { TreatmentRecord } from '../../shared/treatments/index.js';
import type { TreatmentType } from '../../shared/catalog/index.js';
import type { TreatmentTransition } from '../../shared/treatments/index.js';
import {
  GetAllTreatmentsRequest,
  GetTreatmentRequest,
  GetTreatmentResponse,
  InsertTreatmentRequest,
  PAUSE_DELETE_FIELDS,
  TreatmentResponse,
  TreatmentsResponse,
  UpdateTreatmentRequest,
  type InsertTreatmentBody,
  type UpdateTreatmentBody,
} from '../../shared/treatments/index.js';
import { controlsOf, groupIdOf, present, versionFieldsOf } from './treatment-input.js';
import { presentPublicTreatment, presentTreatment } from '../../shared/treatments/treatment.presenter.js';

/** What the treatment handlers use: the treatments, the catalogue they are checked against, the data fields their rules name. */
export type TreatmentOpsDeps = Pick<ApiServices, 'now' | 'treatments' | 'catalog' | 'aggregation'>;
const defineOperation = operationsUsing<TreatmentOpsDeps>();

// ------------------------------------------------------------------------------------------------
// InsertTreatment

async function insertTreatment(body: InsertTreatmentBody, ctx: TreatmentOpsDeps): Promise<TreatmentRecord> {
  const { projectId, lastModifiedBy } = body;
  const type = await ctx.catalog.treatmentTypes.getByName(projectId, body.treatmentTypeName);
  if (!type) throw invalidField('treatmentTypeName', `treatment type "${body.treatmentTypeName}" does not exist in project ${projectId}`);
  const controls = controlsOf(body);
  const f = await versionFieldsOf(ctx, projectId, type, body);
  if (body.externalTreatmentId !== undefined && (await ctx.treatments.treatments.idByExternalId(projectId, body.externalTreatmentId)) !== undefined) {
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
    // The type may have changed since the request was checked: check the content again.
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
  const change = { actor: lastModifiedBy, operation: 'InsertTreatment' };
  return ctx.treatments.treatments.insert(projectId, type.treatmentTypeId, (id, current) => ({ ...build(id, current), modificationSource: source }), change);
}

// ------------------------------------------------------------------------------------------------
// UpdateTreatment

type UpdateAction = 'edit' | 'pause' | 'delete';

/** shouldPause / shouldDelete admit only the identifying fields; both at once is ambiguous. */
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
  const extra = Object.entries(body)
    .filter(([k, v]) => v !== undefined && !PAUSE_DELETE_FIELDS.has(k))
    .map(([k]) => k);
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
  /** externalTreatmentId given with a treatmentId whose treatment has none yet: it is set. */
  assignExternalId?: string;
}

/** Unknown ids (also ids of another project) are 404; two ids naming different treatments are 400. */
async function locateTreatment(ctx: TreatmentOpsDeps, body: UpdateTreatmentBody): Promise<UpdateTarget> {
  const { projectId, treatmentId, externalTreatmentId: ext } = body;
  if (treatmentId === undefined && ext === undefined) {
    throw new InvalidArgumentError('either treatmentId or externalTreatmentId is required', [
      { field: 'treatmentId', description: 'either treatmentId or externalTreatmentId is required' },
    ]);
  }
  const byExt = ext !== undefined ? await ctx.treatments.treatments.idByExternalId(projectId, ext) : undefined;
  const id = treatmentId ?? byExt;
  if (id === undefined) throw new NotFoundError(`no treatment with externalTreatmentId "${ext}" in project ${projectId}`);
  const record = await ctx.treatments.treatments.get(projectId, id);
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

function lifecycleTransition(ctx: TreatmentOpsDeps, action: 'pause' | 'delete', body: UpdateTreatmentBody, target: UpdateTarget): TreatmentTransition {
  const change = action === 'pause' ? pauseTreatment : deleteTreatment;
  return (current) => ({ treatment: withExternalId(change(current, body.lastModifiedBy, ctx.now()), target.assignExternalId), changed: true });
}

async function editTransition(ctx: TreatmentOpsDeps, body: UpdateTreatmentBody, target: UpdateTarget): Promise<TreatmentTransition> {
  const { projectId, lastModifiedBy } = body;
  const type = await ctx.catalog.treatmentTypes.get(projectId, target.record.treatmentTypeId);
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
 * A version that becomes the newest or gets published must fit the type as it is now. A new
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

/** clearEndTimestamp / clearTargetAction cannot be combined with a value for the same field. */
function assertClearFlags(body: UpdateTreatmentBody): void {
  const problems: ErrorDetail[] = [];
  if (body.clearEndTimestamp === true && body.endTimestamp !== undefined)
    problems.push({ field: 'clearEndTimestamp', description: 'cannot be true together with endTimestamp' });
  if (body.clearTargetAction === true && body.targetAction !== undefined)
    problems.push({ field: 'clearTargetAction', description: 'cannot be true together with targetAction' });
  if (problems.length > 0) throw new InvalidArgumentError(describe(problems), problems);
}

async function updateTreatment(body: UpdateTreatmentBody, ctx: TreatmentOpsDeps): Promise<TreatmentRecord> {
  const action = updateActionOf(body);
  assertClearFlags(body);
  const target = await locateTreatment(ctx, body);
  const transition = action === 'edit' ? await editTransition(ctx, body, target) : lifecycleTransition(ctx, action, body, target);
  const operation = { edit: 'UpdateTreatment', pause: 'PauseTreatment', delete: 'DeleteTreatment' }[action];
  // Every change is stamped with where it came from (the console sends TDS_CONSOLE).
  const source = body.modificationSource ?? 'API';
  const stamped: TreatmentTransition = (current, type) => {
    const result = transition(current, type);
    return result.changed ? { ...result, treatment: { ...result.treatment, modificationSource: source } } : result;
  };
  return ctx.treatments.treatments.update(body.projectId, target.record.treatmentId, stamped, { actor: body.lastModifiedBy, operation });
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
  summary:
    'Update, publish, pause or delete a treatment; version-level changes create a new version (holdoutPercentage, qaUserIds, isFallback and frequencyCap are treatment-level and do not)',
  permissions: ['TREATMENT_MANAGEMENT'],
  body: UpdateTreatmentRequest,
  response: TreatmentResponse,
  handler: async (body, _auth, ctx) => ({ treatment: await present(ctx, await updateTreatment(body, ctx)) }),
});

export const getTreatmentOperation = defineOperation({
  operation: 'GetTreatment',
  summary:
    'Read one treatment. A TREATMENT_MANAGEMENT key reads the whole record with every version; a DELIVERY key (a public key) reads what an app may show: ids, name, type, status and the LIVE or SCHEDULED versions without their rules',
  permissions: ['DELIVERY', 'TREATMENT_MANAGEMENT'],
  keyParam: 'api_key',
  alt: true,
  body: GetTreatmentRequest,
  response: GetTreatmentResponse,
  handler: async (body, auth, ctx) => {
    const t = await ctx.treatments.treatments.get(body.projectId, body.treatmentId);
    if (!t) throw new NotFoundError(`treatment ${body.treatmentId} does not exist in project ${body.projectId}`);
    if (auth.key.permissions.includes('TREATMENT_MANAGEMENT')) return { treatment: await present(ctx, t) };
    const type = await ctx.catalog.treatmentTypes.get(t.projectId, t.treatmentTypeId);
    return { treatment: presentPublicTreatment(t, type ?? undefined, ctx.now()) };
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
    const [records, types, groups] = await Promise.all([
      ctx.treatments.treatments.list(projectId),
      ctx.catalog.treatmentTypes.list(projectId),
      ctx.catalog.mutualExclusionGroups.list(projectId),
    ]);
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
        presentTreatment(
          treatment,
          { type: typesById.get(treatment.treatmentTypeId), group: groupsById.get(treatment.mutualExclusionGroupId ?? '') },
          nowMs,
          versions,
        ),
      ),
    };
  },
});

/** InsertTreatment, UpdateTreatment, GetTreatment, GetAllTreatments. */
export const treatmentOperations = [insertTreatmentOperation, updateTreatmentOperation, getTreatmentOperation, getAllTreatmentsOperation] as const;
