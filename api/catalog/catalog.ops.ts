import type { Static } from 'typebox';
import { normalizeDataFieldParams, type NormalizedParams } from '../../shared/aggregation/index.js';
import type { ContentFieldType, TreatmentType } from '../../shared/catalog/index.js';
import type { DataFieldRecord } from '../../shared/aggregation/index.js';
import { ApiError, FailedPreconditionError, InvalidArgumentError, invalidField, type ErrorDetail } from '../../shared/platform/errors.js';
import { typeChangeConflicts } from '../../shared/treatments/index.js';
import { surfaceDataFieldParams } from '../../shared/catalog/index.js';
import {
  GetAllDataFieldsBody,
  GetAllDataFieldsResponse,
  GetAllSurfacesBody,
  GetAllSurfacesResponse,
  GetAllTreatmentTypesBody,
  GetAllTreatmentTypesResponse,
  GetDataFieldsBody,
  GetDataFieldsResponse,
  InsertDataFieldBody,
  InsertDataFieldResponse,
  InsertSurfaceBody,
  InsertSurfaceResponse,
  InsertTreatmentTypeBody,
  TreatmentTypeResponse,
  UpdateTreatmentTypeBody,
} from '../../shared/catalog/index.js';
import { int64String } from '../../shared/platform/int64.js';
import { defineOperation, type V1Operation } from '../http/v1-operation.js';

const MANAGEMENT = ['TREATMENT_MANAGEMENT'] as const;
/** Change-log actor for operations whose request names nobody. */
const API_ACTOR = 'api';

type ContentFieldTypeIn = Static<typeof InsertTreatmentTypeBody>['contentFieldTypes'][number];

function presentTreatmentType(t: TreatmentType) {
  return {
    treatmentTypeId: t.treatmentTypeId,
    projectId: t.projectId,
    treatmentTypeName: t.treatmentTypeName,
    contentFieldTypes: t.contentFieldTypes,
    surfaces: t.surfaces.map((surfaceName) => ({ surfaceName })),
    deliveryType: t.deliveryType,
    lastModifiedBy: t.lastModifiedBy,
    lastModifiedTimestamp: t.lastModifiedTimestamp,
    modificationSource: t.modificationSource ?? 'API',
  };
}

function presentDataField(f: DataFieldRecord) {
  return { dataFieldId: f.dataFieldId, projectId: f.projectId, name: f.name ?? '', userProperty: { dataType: f.dataFieldType } };
}

/** An empty (or blank) name is rejected, never stored. */
function requireTypeName(name: string): string {
  if (name.trim() === '') throw invalidField('treatmentTypeName', 'must not be empty');
  return name;
}

/** Field names unique within the type; dataType defaults to STRING (UNSPECIFIED means unset). */
function contentFieldTypes(input: ContentFieldTypeIn[]): ContentFieldType[] {
  const seen = new Set<string>();
  return input.map((f, i) => {
    if (seen.has(f.fieldName)) throw invalidField(`contentFieldTypes[${i}].fieldName`, `field name "${f.fieldName}" is given twice`);
    seen.add(f.fieldName);
    const dataType = f.dataType === undefined || f.dataType === 'CONTENT_FIELD_DATA_TYPE_UNSPECIFIED' ? 'STRING' : f.dataType;
    return { fieldName: f.fieldName, maximumLengthAllowed: f.maximumLengthAllowed, isPerLanguage: f.isPerLanguage ?? false, dataType };
  });
}

function surfaceNames(input: { surfaceName: string }[] | undefined): string[] {
  const seen = new Set<string>();
  return (input ?? []).map(({ surfaceName }, i) => {
    if (seen.has(surfaceName)) throw invalidField(`surfaces[${i}].surfaceName`, `surface "${surfaceName}" is named twice`);
    seen.add(surfaceName);
    return surfaceName;
  });
}

/** Validates every entry and reports every bad one, each under its own field path. */
function normalizeAll(entries: Static<typeof GetDataFieldsBody>['dataFieldParams']): NormalizedParams[] {
  const details: ErrorDetail[] = [];
  const out: NormalizedParams[] = [];
  entries.forEach((entry, i) => {
    try {
      out.push(normalizeDataFieldParams(entry, `dataFieldParams[${i}]`));
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      details.push(...err.details);
    }
  });
  if (details.length > 0) throw new InvalidArgumentError(details.map((d) => `${d.field}: ${d.description}`).join('; '), details);
  return out;
}

/** Bounded, so a type used by thousands of treatments still gets a readable answer. */
function storedContentConflict(details: ErrorDetail[]): FailedPreconditionError {
  const MAX_DETAILS = 100;
  const shown = details.slice(0, MAX_DETAILS);
  if (details.length > MAX_DETAILS) shown.push({ field: shown[0].field, description: `and ${details.length - MAX_DETAILS} more problems of the same kind` });
  const more = details.length > 3 ? ` (and ${details.length - 3} more, see details)` : '';
  const summary = details.slice(0, 3).map((d) => d.description).join('; ');
  return new FailedPreconditionError(`the change would leave stored treatment content invalid: ${summary}${more}`, shown);
}

export const insertSurface = defineOperation({
  operation: 'InsertSurface',
  summary: 'Register a surface (idempotent: an existing name returns the stored surface)',
  permissions: MANAGEMENT,
  body: InsertSurfaceBody,
  response: InsertSurfaceResponse,
  handler: async (body, _auth, ctx) => {
    const surface = await ctx.surfaces.insert(body.projectId, { name: body.name, description: body.description }, API_ACTOR);
    // Run on every call, not only when the surface is new: resolving is idempotent, and a
    // repeat then provisions what a crash between the two writes (or an older version) left out.
    const entries = surfaceDataFieldParams(surface.name);
    const fields = await ctx.dataFields.resolve(body.projectId, entries, API_ACTOR, 'InsertSurface');
    return { surface, dataFields: fields.map((f, i) => ({ dataFieldId: f.dataFieldId, dataFieldParams: entries[i].echo, dataFieldType: f.dataFieldType })) };
  },
});

export const getAllSurfaces = defineOperation({
  operation: 'GetAllSurfaces',
  summary: 'Every surface of the project, sorted by name',
  permissions: MANAGEMENT,
  body: GetAllSurfacesBody,
  response: GetAllSurfacesResponse,
  handler: async (body, _auth, ctx) => ({ surfaces: await ctx.surfaces.list(body.projectId) }),
});

export const insertTreatmentType = defineOperation({
  operation: 'InsertTreatmentType',
  summary: 'Create a treatment type (409 if the name exists; every surface must exist)',
  permissions: MANAGEMENT,
  body: InsertTreatmentTypeBody,
  response: TreatmentTypeResponse,
  handler: async (body, _auth, ctx) => {
    const type = await ctx.treatmentTypes.insert(body.projectId, {
      treatmentTypeName: requireTypeName(body.treatmentTypeName),
      contentFieldTypes: contentFieldTypes(body.contentFieldTypes),
      surfaces: surfaceNames(body.surfaces),
      deliveryType: body.deliveryType ?? 'IN_APP',
      lastModifiedBy: body.lastModifiedBy,
      modificationSource: body.modificationSource,
    });
    return { treatmentType: presentTreatmentType(type) };
  },
});

export const updateTreatmentType = defineOperation({
  operation: 'UpdateTreatmentType',
  summary: 'Change a treatment type: name, content field types, surfaces, delivery type',
  permissions: MANAGEMENT,
  body: UpdateTreatmentTypeBody,
  response: TreatmentTypeResponse,
  handler: async (body, _auth, ctx) => {
    const given = surfaceNames(body.surfaces);
    if (body.clearSurfaces === true && given.length > 0) throw invalidField('clearSurfaces', 'clearSurfaces cannot be true together with a non-empty surfaces list');
    const type = await ctx.treatmentTypes.update(body.projectId, int64String('treatmentTypeId', body.treatmentTypeId), {
      treatmentTypeName: body.treatmentTypeName === undefined ? undefined : requireTypeName(body.treatmentTypeName),
      contentFieldTypes: contentFieldTypes(body.contentFieldTypes),
      // Spec: an unset or empty list leaves the surfaces as they are; only clearSurfaces detaches them.
      surfaces: body.clearSurfaces === true ? [] : given.length > 0 ? given : undefined,
      deliveryType: body.deliveryType,
      lastModifiedBy: body.lastModifiedBy,
      modificationSource: body.modificationSource,
    }, async (before, after) => {
      // Refused when a non-archived treatment of the type holds a value or a surface the change would invalidate.
      const details = typeChangeConflicts(before, after, await ctx.treatments.list(body.projectId), ctx.now(), body.clearSurfaces === true ? 'clearSurfaces' : 'surfaces');
      if (details.length > 0) throw storedContentConflict(details);
    });
    return { treatmentType: presentTreatmentType(type) };
  },
});

export const getAllTreatmentTypes = defineOperation({
  operation: 'GetAllTreatmentTypes',
  summary: 'Every treatment type of the project, ascending id',
  permissions: MANAGEMENT,
  body: GetAllTreatmentTypesBody,
  response: GetAllTreatmentTypesResponse,
  handler: async (body, _auth, ctx) => ({ treatmentTypes: (await ctx.treatmentTypes.list(body.projectId)).map(presentTreatmentType) }),
});

export const insertDataField = defineOperation({
  operation: 'InsertDataField',
  summary: 'Register a user-property data field (idempotent on name; another dataType is 409)',
  permissions: MANAGEMENT,
  body: InsertDataFieldBody,
  response: InsertDataFieldResponse,
  handler: async (body, _auth, ctx) => ({ dataField: presentDataField(await ctx.dataFields.insertNamed(body.projectId, body.name, body.userProperty.dataType, API_ACTOR)) }),
});

export const getDataFields = defineOperation({
  operation: 'GetDataFields',
  summary: 'Resolve data field params to stable data field ids, creating new aggregations on first use',
  permissions: MANAGEMENT,
  body: GetDataFieldsBody,
  response: GetDataFieldsResponse,
  handler: async (body, _auth, ctx) => {
    const entries = normalizeAll(body.dataFieldParams);
    const fields = await ctx.dataFields.resolve(body.projectId, entries, API_ACTOR);
    // An event name used by an aggregation is an event schema from now on.
    const names = new Set(body.dataFieldParams.flatMap((p) => (p.eventDataFieldParams ? [p.eventDataFieldParams.eventSchemaName] : [])));
    for (const name of names) await ctx.eventSchemas.ensure(body.projectId, name, API_ACTOR);
    return { dataFields: fields.map((f, i) => ({ dataFieldId: f.dataFieldId, dataFieldParams: entries[i].echo, dataFieldType: f.dataFieldType })) };
  },
});

/** A stored data field in the shape it was made with: InsertDataField's DataField, or GetDataFields' resolved entry. */
function presentAnyDataField(f: DataFieldRecord) {
  return f.params !== undefined && !('userAttributeDataFieldParams' in f.params)
    ? { dataFieldId: f.dataFieldId, dataFieldParams: f.params, dataFieldType: f.dataFieldType }
    : presentDataField(f);
}

export const getAllDataFields = defineOperation({
  operation: 'GetAllDataFields',
  summary: 'Every data field of the project, ascending dataFieldId: user properties as DataField, aggregations with their params and type; each with its backfill status',
  permissions: MANAGEMENT,
  body: GetAllDataFieldsBody,
  response: GetAllDataFieldsResponse,
  handler: async (body, _auth, ctx) => {
    const fields = await ctx.dataFields.list(body.projectId);
    const status = await ctx.backfillStatuses(body.projectId, fields);
    return { dataFields: fields.map((f) => ({ ...presentAnyDataField(f), backfillStatus: status.get(f.dataFieldId) ?? 'NOT_APPLICABLE' })) };
  },
});

/** InsertSurface, GetAllSurfaces, InsertTreatmentType, UpdateTreatmentType, GetAllTreatmentTypes, InsertDataField, GetDataFields, GetAllDataFields. */
export const catalogOperations: V1Operation[] = [
  insertSurface,
  getAllSurfaces,
  insertTreatmentType,
  updateTreatmentType,
  getAllTreatmentTypes,
  insertDataField,
  getDataFields,
  getAllDataFields,
] as V1Operation[];
