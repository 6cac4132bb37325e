import { Type, type Static } from 'typebox';
import { ProjectId, Strict } from '../../shared/platform/http/common.schemas.js';
import { operationsUsing } from '../http/v1-operation.js';
import { adminOperationsUsing } from '../http/admin-operation.js';
import type { ApiServices } from '../compose-api.js';

/** What DeleteUserData uses: the deletion store and queue, the queues in Redis, and (as an admin operation) the project check. */
export type UserDataOpsDeps = Pick<ApiServices, 'profiles' | 'redis' | 'config' | 'now' | 'log'>;
const defineOperation = operationsUsing<UserDataOpsDeps>();
const defineAdminOperation = adminOperationsUsing<UserDataOpsDeps & Pick<ApiServices, 'projects'>>();

export const DeleteUserDataBody = Strict({
  projectId: ProjectId,
  userId: Type.String({ minLength: 1, maxLength: 256, description: 'the user whose data is erased' }),
});
export const DeleteUserDataResponse = Type.Object({});

/**
 * Erases one user, and with it every pre-login id merged into the user (identity merge), each
 * such id exactly like the user. Answers once (1) the tombstones are recorded (in-flight jobs
 * and running recomputes from now on leave those ids alone), (2) every Redis key of each id is
 * gone (profile with its counters, alias, insertId marker sets, job markers), (3) the ClickHouse
 * deletion is queued as a durable job that the workers retry until its mutations have finished,
 * and (4) the change log has an entry naming the user by a SHA-256 digest only. Idempotent:
 * repeating the call repeats the erasure (a later deletion time).
 */
export async function deleteUserData(ctx: UserDataOpsDeps, body: Static<typeof DeleteUserDataBody>, actor: string): Promise<Record<string, never>> {
  const { projectId, userId } = body;
  const store = ctx.profiles.userDeletions;
  const deletedAtMs = ctx.now();
  // the merged ids are found through the user's profile, so before its keys go
  const userIds = await store.tombstoneWithMerged(projectId, userId, deletedAtMs);
  const mergedIds = userIds.slice(1);
  // Jobs of the users that passed their tombstone check before it was written and are still being
  // processed: looked for after the tombstone and before the keys go, so a job whose profile
  // script could run after the deletion of the keys is among them (the deletion job waits for
  // them and erases again).
  const inFlight = await ctx.profiles.userDeletionQueue.inFlightJobsOf(projectId, userIds);
  const keysDeleted = await store.deleteKeys(projectId, userIds, deletedAtMs);
  // Rows are deleted up to now, not up to the tombstone: a job that completed in between wrote
  // its rows (with its own ingest time) before its profile script, which the keys' deletion removed.
  const rowsUpToMs = ctx.now();
  await store.setRowsCutoff(projectId, userIds, rowsUpToMs);
  const job = { kind: 'deleteUser' as const, projectId, userId, ...(mergedIds.length > 0 ? { mergedIds } : {}), deletedAtMs: rowsUpToMs };
  await ctx.profiles.userDeletionQueue.enqueue({ ...job, ...(inFlight.length > 0 ? { inFlight } : {}) });
  await store.recordChange(projectId, userId, deletedAtMs, actor);
  // never the user id in a log line
  ctx.log.info({ projectId, mergedIds: mergedIds.length, keysDeleted, inFlight: inFlight.length }, 'user data deleted from redis; clickhouse deletion queued');
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
    await ctx.projects.projects.require(body.projectId);
    return deleteUserData(ctx, body, actor);
  },
});

export const userDataOperations = [deleteUserDataOperation] as const;
