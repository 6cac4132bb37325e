import { Type, type Static } from 'typebox';
import { ProjectId, Strict } from '../../../shared/schemas/common.js';
import type { ServiceContext } from '../../../shared/service-context.js';
import { UserDeletionStore } from '../../../shared/stores/user-deletion.store.js';
import { enqueueUserDeletion } from '../../../shared/queues/user-deletion-queue.js';
import { defineOperation, type V1Operation } from '../../v1-operation.js';
import { defineAdminOperation } from '../../admin-operation.js';

export const DeleteUserDataBody = Strict({
  projectId: ProjectId,
  userId: Type.String({ minLength: 1, maxLength: 256, description: 'the user whose data is erased' }),
});
export const DeleteUserDataResponse = Type.Object({});

/**
 * D44: erases one user. Answers once (1) the tombstone is recorded (in-flight jobs of the user and
 * running recomputes from now on leave the user alone), (2) every Redis key of the user is gone
 * (profile with its counters, insertId marker sets, job markers), (3) the ClickHouse deletion is
 * queued as a durable job that the workers retry until its mutations have finished, and (4) the
 * change log has an entry naming the user by a SHA-256 digest only. Idempotent: repeating the
 * call repeats the erasure (a later deletion time).
 */
export async function deleteUserData(ctx: ServiceContext, body: Static<typeof DeleteUserDataBody>, actor: string): Promise<Record<string, never>> {
  const deletedAtMs = ctx.now();
  const store = new UserDeletionStore(ctx.redis, ctx.keys);
  const { keysDeleted } = await store.erase(body.projectId, body.userId, deletedAtMs);
  await enqueueUserDeletion(ctx.redis, ctx.config.redisPrefix, { kind: 'deleteUser', projectId: body.projectId, userId: body.userId, deletedAtMs });
  await store.recordChange(body.projectId, body.userId, deletedAtMs, actor);
  // never the user id in a log line
  ctx.log.info({ projectId: body.projectId, keysDeleted }, 'user data deleted from redis; clickhouse deletion queued');
  return {};
}

export const deleteUserDataOperation = defineOperation({
  operation: 'DeleteUserData',
  summary: 'Erase a user: profile, counters and markers in Redis now, rows in ClickHouse within a minute; never restored by a recompute',
  permissions: ['TREATMENT_MANAGEMENT'] as const,
  body: DeleteUserDataBody,
  response: DeleteUserDataResponse,
  handler: async (body, auth, ctx) => deleteUserData(ctx, body, `apiKey:${auth.key.keyId}`),
});

export const deleteUserDataAdmin = defineAdminOperation({
  operation: 'DeleteUserData',
  command: 'delete-user-data',
  summary: deleteUserDataOperation.summary,
  body: DeleteUserDataBody,
  response: DeleteUserDataResponse,
  handler: async (body, ctx, actor) => {
    await ctx.projects.require(body.projectId);
    return deleteUserData(ctx, body, actor);
  },
});

export const userDataOperations = [deleteUserDataOperation] as unknown as V1Operation[];
