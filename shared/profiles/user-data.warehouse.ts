import type { Warehouse } from '../platform/warehouse/warehouse.js';
import { alterTarget } from '../platform/warehouse/alter-target.js';
import { TABLE_COLUMNS, USER_TABLES } from '../platform/warehouse/tables.js';

/**
 * Dead letters name their users in `user_ids` (migration 0007; the sink fills it from a job's
 * data, the Pub/Sub intake from a message it could decode). Older rows have none: those of one
 * user's job (a LogEvents request, merged jobs are dead-lettered request by request, or a
 * LogTreatmentInteraction call), written as `JSON.stringify(job)`, are found by the exact
 * `"userId":<JSON string>` member of their payload.
 */
export const DEAD_LETTER_SOURCES_OF_ONE_USER = ['log_events', 'log_treatment_interaction'] as const;

/** A user's rows in ClickHouse: copied under the signed-in user on an identity merge, deleted with the user. */
export class UserDataWarehouse {
  constructor(private readonly warehouse: Pick<Warehouse, 'query' | 'command'>) {}

  /**
   * Deletes the users' rows ingested up to the deletion time from every per-user table, and waits
   * for the mutations to finish (mutations_sync), so the job completes only when the rows are gone.
   * Rows ingested later belong to a new profile and stay. Idempotent (a retry re-issues the same
   * deletes). One mutation per table for all the ids (a user and its merged pre-login ids): each
   * mutation rewrites the parts holding matching rows. `ALTER TABLE … DELETE` rather than the
   * lightweight `DELETE FROM`: it works on every MergeTree variant and version (and on a
   * cluster's Replicated tables) alike.
   */
  async deleteUserRows(projectId: string, userIds: readonly string[], deletedAtMs: number): Promise<void> {
    if (userIds.length === 0) return;
    for (const { table } of USER_TABLES) {
      const t = await alterTarget(this.warehouse, table);
      await this.warehouse.command(
        `ALTER TABLE ${t.name}${t.onCluster} DELETE WHERE project_id = {projectId:String} AND has({userIds:Array(String)}, user_id)
                AND ingest_ts <= fromUnixTimestamp64Milli({deletedAtMs:Int64}, 'UTC') SETTINGS mutations_sync = ${t.sync}`,
        { projectId, userIds, deletedAtMs },
      );
    }
    // A dead letter that names the user goes whole, also when it names others (a decision-log
    // batch, a merged job's request carrying a pre-login id): it is kept for replay only.
    const t = await alterTarget(this.warehouse, 'dead_letters');
    await this.warehouse.command(
      `ALTER TABLE ${t.name}${t.onCluster} DELETE WHERE project_id = {projectId:String}
              AND receive_time <= fromUnixTimestamp64Milli({deletedAtMs:Int64}, 'UTC')
              AND (hasAny(user_ids, {userIds:Array(String)})
                   OR (empty(user_ids) AND source IN {sources:Array(String)}
                       AND arrayExists(n -> position(tryBase64Decode(payload_base64), n) > 0, {needles:Array(String)})))
              SETTINGS mutations_sync = ${t.sync}`,
      {
        projectId,
        userIds: [...userIds],
        sources: [...DEAD_LETTER_SOURCES_OF_ONE_USER],
        deletedAtMs,
        needles: userIds.map((u) => `"userId":${JSON.stringify(u)}`),
      },
    );
  }

  /**
   * An identity merge: the pre-login id's events and interactions copied under the signed-in user
   * with the same de-duplication keys, so a repeated copy collapses and recomputes of the user
   * count the pre-login history.
   */
  async copyUserRows(projectId: string, fromUserId: string, toUserId: string): Promise<void> {
    for (const table of ['events', 'interactions'] as const) {
      // positional, no `AS user_id`: an alias would shadow the column in WHERE (and select nothing)
      const cols = TABLE_COLUMNS[table] as readonly string[];
      await this.warehouse.command(
        `INSERT INTO ${table} (${cols.join(', ')}) SELECT ${cols.map((c) => (c === 'user_id' ? '{userId:String}' : c)).join(', ')}
                FROM ${table} FINAL WHERE project_id = {projectId:String} AND user_id = {tempUserId:String}`,
        { projectId, tempUserId: fromUserId, userId: toUserId },
      );
    }
  }
}
