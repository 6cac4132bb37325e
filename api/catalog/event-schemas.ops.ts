import { GetEventSchemasBody, GetEventSchemasResponse, InsertEventSchemaBody, InsertEventSchemaResponse } from '../../shared/catalog/index.js';
import { asAdminOperation, operationsUsing } from '../http/v1-operation.js';
import type { ApiServices } from '../compose-api.js';

/** What the event-schema handlers use: the catalogue's event schemas. */
export type EventSchemaOpsDeps = Pick<ApiServices, 'catalog'>;
const defineOperation = operationsUsing<EventSchemaOpsDeps>();

const MANAGEMENT = ['TREATMENT_MANAGEMENT'] as const;

/** Registers an event name (idempotent: a known name answers its stored schema). */
export const insertEventSchema = defineOperation({
  operation: 'InsertEventSchema',
  summary: 'Register an event name and get its stable eventId (idempotent)',
  permissions: MANAGEMENT,
  body: InsertEventSchemaBody,
  response: InsertEventSchemaResponse,
  handler: async (body, _auth, ctx) => ({ eventSchema: await ctx.catalog.eventSchemas.ensure(body.projectId, body.eventName, 'api') }),
});

/** Every event name of the project with its id, ascending eventId. */
export const getEventSchemas = defineOperation({
  operation: 'GetEventSchemas',
  summary: 'Every event schema (event name and its eventId) of the project, ascending eventId',
  permissions: MANAGEMENT,
  body: GetEventSchemasBody,
  response: GetEventSchemasResponse,
  handler: async (body, _auth, ctx) => ({ eventSchemas: await ctx.catalog.eventSchemas.list(body.projectId) }),
});

/** InsertEventSchema, GetEventSchemas. */
export const eventSchemaOperations = [insertEventSchema, getEventSchemas] as const;

/** The same operations for operators and the CLI (`npm run admin -- get-event-schemas --project-id p`). */
export const eventSchemaAdminOperations = [
  asAdminOperation(insertEventSchema, 'insert-event-schema'),
  asAdminOperation(getEventSchemas, 'get-event-schemas'),
] as const;
