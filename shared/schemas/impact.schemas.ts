import { Type, type Static } from 'typebox';
import { Int64Out, ProjectId, Strict, TimestampOut } from './common.js';

/** ListDecisions (D36). */
export const ListDecisionsBody = Strict({
  projectId: ProjectId,
  userId: Type.String({ minLength: 1, maxLength: 256 }),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'default 20' })),
});
export type ListDecisionsRequest = Static<typeof ListDecisionsBody>;

export const DecisionOut = Type.Object({
  projectId: Type.String(),
  userId: Type.String(),
  responseId: Type.String(),
  treatmentId: Type.String(),
  versionNumber: Type.Integer(),
  surface: Type.String(),
  rank: Int64Out,
  outcome: Type.Union([Type.Literal('RETURNED'), Type.Literal('HOLDOUT'), Type.Literal('GLOBAL_HOLDOUT'), Type.Literal('QA')]),
  decideTime: TimestampOut,
});

export const ListDecisionsResponse = Type.Object({ decisions: Type.Array(DecisionOut, { description: 'newest first' }) });

/** Event schemas (D35). */
export const EventName = Type.String({ minLength: 1, maxLength: 256 });
export const EventSchemaOut = Type.Object({ eventId: Int64Out, eventName: Type.String(), createTime: TimestampOut });
export const InsertEventSchemaBody = Strict({ projectId: ProjectId, eventName: EventName });
export const InsertEventSchemaResponse = Type.Object({ eventSchema: EventSchemaOut });
export const GetEventSchemasBody = Strict({ projectId: ProjectId });
export const GetEventSchemasResponse = Type.Object({ eventSchemas: Type.Array(EventSchemaOut, { description: 'ascending eventId' }) });
