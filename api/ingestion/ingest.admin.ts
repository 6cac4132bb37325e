import { Type } from 'typebox';
import { ProjectId, Strict, TimestampOut } from '../../shared/platform/http/common.schemas.js';
import { INGESTION_CALLS } from '../../shared/ingestion/index.js';
import { adminOperationsUsing } from '../http/admin-operation.js';
import type { ApiServices } from '../compose-api.js';

/** What the ingestion admin handlers use: the project check and the warehouse's dead letters. */
export type IngestAdminDeps = Pick<ApiServices, 'projects' | 'warehouse'>;
const defineAdminOperation = adminOperationsUsing<IngestAdminDeps>();

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
    await ctx.projects.projects.require(body.projectId);
    return { deadLetters: await ctx.warehouse.call(INGESTION_CALLS.listDeadLetters, body.projectId, body.pageSize ?? 100) };
  },
});

export const ingestAdminOperations = [listDeadLetters] as const;
