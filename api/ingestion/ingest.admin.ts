import { Type } from 'typebox';
import { ProjectId, Strict, TimestampOut } from '../../shared/platform/http/common.schemas.js';
import { INGESTION_CALLS, plainValue } from '../../shared/ingestion/index.js';
import { defineAdminOperation } from '../http/admin-operation.js';

const JsonValue = Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()]);

/** Profile values for operators: user properties and computed data-field values, as plain JSON. */
export const getUserProfile = defineAdminOperation({
  operation: 'GetUserProfile',
  command: 'get-user-profile',
  summary: 'A user’s stored properties and computed data-field values',
  body: Strict({ projectId: ProjectId, userId: Type.String({ minLength: 1, maxLength: 256 }) }),
  response: Type.Object({
    profile: Type.Object({
      userId: Type.String(),
      userProperties: Type.Record(Type.String(), JsonValue),
      dataFields: Type.Record(Type.String(), JsonValue),
      /** The pre-login ids merged into this user. */
      mergedFrom: Type.Optional(Type.Array(Type.String())),
      /** This id was merged into that user; the profile shown is that user's. */
      mergedInto: Type.Optional(Type.String()),
    }),
  }),
  handler: async (body, ctx) => {
    await ctx.projects.require(body.projectId);
    const stored = await ctx.profiles.get(body.projectId, body.userId);
    const userProperties: Record<string, string | number | boolean> = {};
    for (const [k, v] of Object.entries(stored.userProperties)) userProperties[k] = plainValue(v);
    const dataFields = await ctx.dataFieldValues(body.projectId, stored);
    return { profile: { userId: body.userId, userProperties, dataFields, ...(stored.mergedFrom ? { mergedFrom: stored.mergedFrom } : {}), ...(stored.mergedInto !== undefined ? { mergedInto: stored.mergedInto } : {}) } };
  },
});

const DeadLetterOut = Type.Object({
  messageId: Type.String(),
  source: Type.String(),
  reason: Type.String(),
  receiveTime: TimestampOut,
  dataType: Type.String(),
  payloadBase64: Type.String({ description: 'the payload, or its first 64 KiB when payloadTruncated' }),
  payloadBytes: Type.Integer({ description: 'size of the whole payload in bytes (0: not recorded, a dead letter from before the limit)' }),
  payloadSha256: Type.String({ description: 'SHA-256 (hex) of the whole payload' }),
  payloadTruncated: Type.Boolean(),
});

export const listDeadLetters = defineAdminOperation({
  operation: 'ListDeadLetters',
  command: 'list-dead-letters',
  summary: 'Messages and jobs that could not be ingested, with the reason, newest first',
  body: Strict({ projectId: ProjectId, pageSize: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })) }),
  response: Type.Object({ deadLetters: Type.Array(DeadLetterOut) }),
  handler: async (body, ctx) => {
    await ctx.projects.require(body.projectId);
    return { deadLetters: await ctx.warehouse.call(INGESTION_CALLS.listDeadLetters, body.projectId, body.pageSize ?? 100) };
  },
});

export const ingestAdminOperations = [getUserProfile, listDeadLetters];
