import type { ClickHouseClient } from '@clickhouse/client';
import type { Logger } from 'pino';
import { TABLE_COLUMNS } from '../event-rows.js';

/**
 * User data in ClickHouse: the rows of a deleted user, and RETENTION_DAYS as table TTLs.
 *
 * The per-user tables and the time column their TTL counts from. `dead_letters` names its users
 * in `user_ids` instead: see `DEAD_LETTER_SOURCES_OF_ONE_USER`.
 */
export const USER_TABLES = [
  { table: 'events', ttlColumn: 'client_event_ts' },
  { table: 'interactions', ttlColumn: 'interaction_time' },
  { table: 'decisions', ttlColumn: 'decide_time' },
  { table: 'user_attribute_updates', ttlColumn: 'update_ts' },
] as const;

/**
 * Where an ALTER of `table` must go. On one node (chDB, a single server) the table itself; on a
 * cluster (infra/clickhouse/cluster.md) `table` is a Distributed table, which takes no ALTER …
 * DELETE / MODIFY TTL: the statement goes to its local table ON CLUSTER, waiting for every replica.
 */
interface AlterTarget {
  name: string;
  onCluster: string;
  /** mutations_sync: 1 = this node, 2 = every replica */
  sync: 1 | 2;
}

const DISTRIBUTED = /^Distributed\('([^']+)',\s*'([^']+)',\s*'([^']+)'/;

async function alterTarget(ch: ClickHouseClient, table: string): Promise<AlterTarget> {
  const rs = await ch.query({ query: 'SELECT engine_full FROM system.tables WHERE database = currentDatabase() AND name = {table:String}', query_params: { table }, format: 'JSONEachRow' });
  const [row] = await rs.json<{ engine_full: string }>();
  const m = row ? DISTRIBUTED.exec(row.engine_full) : null;
  if (!m) return { name: table, onCluster: '', sync: 1 };
  const quote = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
  const ident = (s: string) => `\`${s.replace(/`/g, '``')}\``;
  return { name: `${ident(m[2])}.${ident(m[3])}`, onCluster: ` ON CLUSTER ${quote(m[1])}`, sync: 2 };
}

/**
 * Dead letters name their users in `user_ids` (migration 0007; the sink fills it from a job's
 * data, the Pub/Sub intake from a message it could decode). Older rows have none: those of one
 * user's job (a LogEvents request, merged jobs are dead-lettered request by request, or a
 * LogTreatmentInteraction call), written as `JSON.stringify(job)`, are found by the exact
 * `"userId":<JSON string>` member of their payload.
 */
export const DEAD_LETTER_SOURCES_OF_ONE_USER = ['log_events', 'log_treatment_interaction'] as const;

/** Days a dead letter is kept (migration 0007), unless RETENTION_DAYS is shorter. */
export const DEAD_LETTER_DAYS = 30;

/**
 * Deletes the users' rows ingested up to the deletion time from every per-user table, and waits
 * for the mutations to finish (mutations_sync), so the job completes only when the rows are gone.
 * Rows ingested later belong to a new profile and stay. Idempotent (a retry re-issues the same
 * deletes). One mutation per table for all the ids (a user and its merged pre-login ids): each
 * mutation rewrites the parts holding matching rows. `ALTER TABLE … DELETE` rather than the
 * lightweight `DELETE FROM`: it works on every MergeTree variant and version (and on a
 * cluster's Replicated tables) alike.
 */
export async function deleteUserRows(ch: ClickHouseClient, projectId: string, userIds: readonly string[], deletedAtMs: number): Promise<void> {
  if (userIds.length === 0) return;
  for (const { table } of USER_TABLES) {
    const t = await alterTarget(ch, table);
    await ch.command({
      query: `ALTER TABLE ${t.name}${t.onCluster} DELETE WHERE project_id = {projectId:String} AND has({userIds:Array(String)}, user_id)
              AND ingest_ts <= fromUnixTimestamp64Milli({deletedAtMs:Int64}, 'UTC') SETTINGS mutations_sync = ${t.sync}`,
      query_params: { projectId, userIds, deletedAtMs },
    });
  }
  // A dead letter that names the user goes whole, also when it names others (a decision-log
  // batch, a merged job's request carrying a pre-login id): it is kept for replay only.
  const t = await alterTarget(ch, 'dead_letters');
  await ch.command({
    query: `ALTER TABLE ${t.name}${t.onCluster} DELETE WHERE project_id = {projectId:String}
            AND receive_time <= fromUnixTimestamp64Milli({deletedAtMs:Int64}, 'UTC')
            AND (hasAny(user_ids, {userIds:Array(String)})
                 OR (empty(user_ids) AND source IN {sources:Array(String)} AND arrayExists(n -> position(tryBase64Decode(payload_base64), n) > 0, {needles:Array(String)})))
            SETTINGS mutations_sync = ${t.sync}`,
    query_params: { projectId, userIds: [...userIds], sources: [...DEAD_LETTER_SOURCES_OF_ONE_USER], deletedAtMs, needles: userIds.map((u) => `"userId":${JSON.stringify(u)}`) },
  });
}

/**
 * RETENTION_DAYS as the tables' TTL. TTL expressions are static DDL, so migration 0006 sets the
 * default (400 days) and this step, run at start-up after the migrations, changes it to the
 * configured value when it differs (`MODIFY TTL`, which rewrites the TTL information of existing
 * parts in the background; rows past the TTL are dropped by merges, at the latest by the periodic
 * TTL merge, `merge_with_ttl_timeout`, four hours by default). Returns the tables changed.
 */
export async function applyRetentionTtl(ch: ClickHouseClient, days: number, log?: Logger): Promise<string[]> {
  if (!Number.isInteger(days) || days < 1) throw new Error(`retention days must be a positive integer, got ${days}`);
  const changed: string[] = [];
  for (const { table, ttlColumn } of USER_TABLES) {
    const current = await ttlDays(ch, table);
    if (current === days) continue;
    const t = await alterTarget(ch, table);
    await ch.command({ query: `ALTER TABLE ${t.name}${t.onCluster} MODIFY TTL toDateTime(${ttlColumn}) + INTERVAL ${days} DAY DELETE` });
    changed.push(table);
  }
  // Dead letters hold user data too: never kept longer than the retention.
  const deadLetterDays = Math.min(DEAD_LETTER_DAYS, days);
  if ((await ttlDays(ch, 'dead_letters')) !== deadLetterDays) {
    const t = await alterTarget(ch, 'dead_letters');
    await ch.command({ query: `ALTER TABLE ${t.name}${t.onCluster} MODIFY TTL toDateTime(receive_time) + INTERVAL ${deadLetterDays} DAY DELETE` });
    changed.push('dead_letters');
  }
  if (changed.length > 0) log?.info({ tables: changed, retentionDays: days }, 'clickhouse TTL set to RETENTION_DAYS');
  return changed;
}

/** The days of the table's TTL as its definition states it (on a cluster: the local table's), or undefined. */
export async function ttlDays(ch: ClickHouseClient, table: string): Promise<number | undefined> {
  const t = await alterTarget(ch, table);
  const local = t.onCluster ? t.name.split('.').pop()!.replace(/`/g, '') : table;
  const rs = await ch.query({ query: 'SELECT create_table_query FROM system.tables WHERE database = currentDatabase() AND name = {table:String}', query_params: { table: local }, format: 'JSONEachRow' });
  const [row] = await rs.json<{ create_table_query: string }>();
  const m = row ? /\bTTL\b.*?toIntervalDay\((\d+)\)/.exec(row.create_table_query) : null;
  return m ? Number(m[1]) : undefined;
}

/**
 * An identity merge: the pre-login id's events and interactions copied under the signed-in user
 * with the same de-duplication keys, so a repeated copy collapses and recomputes of the user
 * count the pre-login history.
 */
export async function copyUserRows(ch: ClickHouseClient, projectId: string, fromUserId: string, toUserId: string): Promise<void> {
  for (const table of ['events', 'interactions'] as const) {
    // positional, no `AS user_id`: an alias would shadow the column in WHERE (and select nothing)
    const cols = TABLE_COLUMNS[table] as readonly string[];
    await ch.command({
      query: `INSERT INTO ${table} (${cols.join(', ')}) SELECT ${cols.map((c) => (c === 'user_id' ? '{userId:String}' : c)).join(', ')}
              FROM ${table} FINAL WHERE project_id = {projectId:String} AND user_id = {tempUserId:String}`,
      query_params: { projectId, tempUserId: fromUserId, userId: toUserId },
    });
  }
}
