import {
  GetEventSchemasBody,
  GetEventSchemasResponse,
  InsertEventSchemaBody,
  InsertEventSchemaResponse,
  ListDecisionsBody,
  ListDecisionsResponse,
} from '../../../shared/schemas/impact.schemas.js';
import { defineOperation, type V1Operation } from '../../v1-operation.js';

const MANAGEMENT = ['TREATMENT_MANAGEMENT'] as const;

/** D36: a user's decisions, newest first (debugging what a user was shown or withheld). */
export const listDecisions = defineOperation({
  operation: 'ListDecisions',
  summary: 'A user’s most recent decisions (treatments returned or withheld), newest first',
  permissions: MANAGEMENT,
  body: ListDecisionsBody,
  response: ListDecisionsResponse,
  handler: async (body, _auth, ctx) => {
    return { decisions: await ctx.warehouse.listDecisions(body.projectId, body.userId, body.limit ?? 20) };
  },
});

/** D35: registers an event name (idempotent: a known name answers its stored schema). */
export const insertEventSchema = defineOperation({
  operation: 'InsertEventSchema',
  summary: 'Register an event name and get its stable eventId (idempotent)',
  permissions: MANAGEMENT,
  body: InsertEventSchemaBody,
  response: InsertEventSchemaResponse,
  handler: async (body, _auth, ctx) => ({ eventSchema: await ctx.eventSchemas.ensure(body.projectId, body.eventName, 'api') }),
});

/** D35: every event name of the project with its id, ascending eventId. */
export const getEventSchemas = defineOperation({
  operation: 'GetEventSchemas',
  summary: 'Every event schema (event name and its eventId) of the project, ascending eventId',
  permissions: MANAGEMENT,
  body: GetEventSchemasBody,
  response: GetEventSchemasResponse,
  handler: async (body, _auth, ctx) => ({ eventSchemas: await ctx.eventSchemas.list(body.projectId) }),
});

/** The measuring-impact operations (D35, D36, D38). */
export const impactOperations = [insertEventSchema, getEventSchemas, listDecisions] as unknown as V1Operation[];
