import type { Static } from 'typebox';
import type { ContentFieldType, TreatmentType } from '../../shared/catalog/index.js';
import { FailedPreconditionError, invalidField, type ErrorDetail } from '../../shared/platform/errors.js';
import { typeChangeConflicts } from '../../shared/treatments/index.js';
import { surfaceDataFieldParams } from '../../shared/catalog/index.js';
import {
  GetAllSurfacesBody,
  GetAllSurfacesResponse,
  GetAllTreatmentTypesBody,
  GetAllTreatmentTypesResponse,
  InsertSurfaceBody,
  InsertSurfaceResponse,
  InsertTreatmentTypeBody,
  TreatmentTypeResponse,
  UpdateTreatmentTypeBody,
} from '../../shared/catalog/index.js';
import { int64String } from '../../shared/platform/int64.js';
import { operationsUsing } from '../http/v1-operation.js';
import type { ApiServices } from '../compose-api.js';

/** What the catalogue's handlers use: surfaces provision their data fields, type changes check stored treatments. */
export type CatalogOpsDeps = Pick<ApiServices, 'now' | 'catalog' | 'aggregation' | 'treatments'>;
const defineOperation = operationsUsing<CatalogOpsDeps>();

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

/** Bounded, so a type used by thousands of treatments still gets a readable answer. */
function storedContentConflict(details: ErrorDetail[]): FailedPreconditionError {
  const MAX_DETAILS = 100;
  const shown = details.slice(0, MAX_DETAILS);
  if (details.length > MAX_DETAILS) shown.push({ field: shown[0].field, description: `and ${details.length - MAX_DETAILS} more problems of the same kind` });
  const more = details.length > 3 ? ` (and ${details.length - 3} more, see details)` : '';
  const summary = details
    .slice(0, 3)
    .map((d) => d.description)
    .join('; ');
  return new FailedPreconditionError(`the change would leave stored treatment content invalid: ${summary}${more}`, shown);
}

export const insertSurface = defineOperation({
  operation: 'InsertSurface',
  summary: 'Register a surface (idempotent: an existing name returns the stored surface)',
  permissions: MANAGEMENT,
  body: InsertSurfaceBody,
  response: InsertSurfaceResponse,
  handler: async (body, _auth, ctx) => {
    const surface = await ctx.catalog.surfaces.insert(body.projectId, { name: body.name, description: body.description }, API_ACTOR);
    // Run on every call, not only when the surface is new: resolving is idempotent, and a
    // repeat then provisions what a crash between the two writes (or an older version) left out.
    const entries = surfaceDataFieldParams(surface.name);
    const fields = await ctx.aggregation.dataFields.resolve(body.projectId, entries, API_ACTOR, 'InsertSurface');
    return { surface, dataFields: fields.map((f, i) => ({ dataFieldId: f.dataFieldId, dataFieldParams: entries[i].echo, dataFieldType: f.dataFieldType })) };
  },
});

export const getAllSurfaces = defineOperation({
  operation: 'GetAllSurfaces',
  summary: 'Every surface of the project, sorted by name',
  permissions: MANAGEMENT,
  body: GetAllSurfacesBody,
  response: GetAllSurfacesResponse,
  handler: async (body, _auth, ctx) => ({ surfaces: await ctx.catalog.surfaces.list(body.projectId) }),
});

export const insertTreatmentType = defineOperation({
  operation: 'InsertTreatmentType',
  summary: 'Create a treatment type (409 if the name exists; every surface must exist)',
  permissions: MANAGEMENT,
  body: InsertTreatmentTypeBody,
  response: TreatmentTypeResponse,
  handler: async (body, _auth, ctx) => {
    const type = await ctx.catalog.treatmentTypes.insert(body.projectId, {
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
    if (body.clearSurfaces === true && given.length > 0)
      throw invalidField('clearSurfaces', 'clearSurfaces cannot be true together with a non-empty surfaces list');
    const type = await ctx.catalog.treatmentTypes.update(
      body.projectId,
      int64String('treatmentTypeId', body.treatmentTypeId),
      {
        treatmentTypeName: body.treatmentTypeName === undefined ? undefined : requireTypeName(body.treatmentTypeName),
        contentFieldTypes: contentFieldTypes(body.contentFieldTypes),
        // Spec: an unset or empty list leaves the surfaces as they are; only clearSurfaces detaches them.
        surfaces: body.clearSurfaces === true ? [] : given.length > 0 ? given : undefined,
        deliveryType: body.deliveryType,
        lastModifiedBy: body.lastModifiedBy,
        modificationSource: body.modificationSource,
      },
      async (before, after) => {
        // Refused when a non-archived treatment of the type holds a value or a surface the change would invalidate.
        const stored = await ctx.treatments.treatments.list(body.projectId);
        const details = typeChangeConflicts(before, after, stored, ctx.now(), body.clearSurfaces === true ? 'clearSurfaces' : 'surfaces');
        if (details.length > 0) throw storedContentConflict(details);
      },
    );
    return { treatmentType: presentTreatmentType(type) };
  },
});

export const getAllTreatmentTypes = defineOperation({
  operation: 'GetAllTreatmentTypes',
  summary: 'Every treatment type of the project, ascending id',
  permissions: MANAGEMENT,
  body: GetAllTreatmentTypesBody,
  response: GetAllTreatmentTypesResponse,
  handler: async (body, _auth, ctx) => ({ treatmentTypes: (await ctx.catalog.treatmentTypes.list(body.projectId)).map(presentTreatmentType) }),
});

/** InsertSurface, GetAllSurfaces, InsertTreatmentType, UpdateTreatmentType, GetAllTreatmentTypes. */
export const catalogOperations = [insertSurface, getAllSurfaces, insertTreatmentType, updateTreatmentType, getAllTreatmentTypes] as const;
