import type { Static } from 'typebox';
import { normalizeDataFieldParams, type DataFieldRecord, type NormalizedParams } from '../../shared/aggregation/index.js';
import { ApiError, InvalidArgumentError, type ErrorDetail } from '../../shared/platform/errors.js';
import {
  GetAllDataFieldsBody,
  GetAllDataFieldsResponse,
  GetDataFieldsBody,
  GetDataFieldsResponse,
  InsertDataFieldBody,
  InsertDataFieldResponse,
} from '../../shared/catalog/index.js';
import { operationsUsing } from '../http/v1-operation.js';
import type { ApiServices } from '../compose-api.js';

/** What the data-field handlers use: the data fields with their backfill status, and event schemas for the event names they aggregate. */
export type DataFieldOpsDeps = Pick<ApiServices, 'aggregation' | 'catalog'>;
const defineOperation = operationsUsing<DataFieldOpsDeps>();

const MANAGEMENT = ['TREATMENT_MANAGEMENT'] as const;
/** Change-log actor for operations whose request names nobody. */
const API_ACTOR = 'api';

function presentDataField(f: DataFieldRecord) {
  return { dataFieldId: f.dataFieldId, projectId: f.projectId, name: f.name ?? '', userProperty: { dataType: f.dataFieldType } };
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

export const insertDataField = defineOperation({
  operation: 'InsertDataField',
  summary: 'Register a user-property data field (idempotent on name; another dataType is 409)',
  permissions: MANAGEMENT,
  body: InsertDataFieldBody,
  response: InsertDataFieldResponse,
  handler: async (body, _auth, ctx) => {
    const field = await ctx.aggregation.dataFields.insertNamed(body.projectId, body.name, body.userProperty.dataType, API_ACTOR);
    return { dataField: presentDataField(field) };
  },
});

export const getDataFields = defineOperation({
  operation: 'GetDataFields',
  summary: 'Resolve data field params to stable data field ids, creating new aggregations on first use',
  permissions: MANAGEMENT,
  body: GetDataFieldsBody,
  response: GetDataFieldsResponse,
  handler: async (body, _auth, ctx) => {
    const entries = normalizeAll(body.dataFieldParams);
    const fields = await ctx.aggregation.dataFields.resolve(body.projectId, entries, API_ACTOR);
    // An event name used by an aggregation is an event schema from now on.
    const names = new Set(body.dataFieldParams.flatMap((p) => (p.eventDataFieldParams ? [p.eventDataFieldParams.eventSchemaName] : [])));
    for (const name of names) await ctx.catalog.eventSchemas.ensure(body.projectId, name, API_ACTOR);
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
  summary:
    'Every data field of the project, ascending dataFieldId: user properties as DataField, aggregations with their params and type; each with its backfill status',
  permissions: MANAGEMENT,
  body: GetAllDataFieldsBody,
  response: GetAllDataFieldsResponse,
  handler: async (body, _auth, ctx) => {
    const fields = await ctx.aggregation.dataFields.list(body.projectId);
    const status = await ctx.aggregation.backfillStatuses(body.projectId, fields);
    return { dataFields: fields.map((f) => ({ ...presentAnyDataField(f), backfillStatus: status.get(f.dataFieldId) ?? 'NOT_APPLICABLE' })) };
  },
});

/** InsertDataField, GetDataFields, GetAllDataFields. */
export const dataFieldOperations = [insertDataField, getDataFields, getAllDataFields] as const;
