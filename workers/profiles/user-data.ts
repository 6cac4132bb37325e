import type { ClickHouseClient } from '@clickhouse/client';
import { Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { bullPrefix, cappedExponentialBackoff } from '../../shared/platform/queues.js';
import { USER_DELETION_QUEUE, waitUntilInactive, type UserDeletionJob } from '../../shared/profiles/index.js';

/** How long a deletion waits for the user's jobs in flight at its time (a dead worker's job is retried later and then dropped). */
const IN_FLIGHT_WAIT_MS = 120_000;
import type { UserDeletionStore } from '../../shared/profiles/index.js';
import { instrumentWorker, type JobMetrics } from '../job-metrics.js';

/**
 * D44 in ClickHouse: the rows of a deleted user, and RETENTION_DAYS as table TTLs.
 *
 * The per-user tables and the time column their TTL counts from. `dead_letters` has no user
 * column (a dead letter is a raw payload): see `DEAD_LETTER_SOURCES_OF_ONE_USER`.
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
 * Dead letters whose payload is the JSON of one user's job (a LogEvents request, merged jobs are
 * dead-lettered request by request, or a LogTreatmentInteraction call), written by the workers as
 * `JSON.stringify(job)`: they are found by the exact `"userId":<JSON string>` member. Decision-log
 * dead letters hold many users' records and Pub/Sub ones the raw message (any encoding): those
 * are not searched (documented limit).
 */
export const DEAD_LETTER_SOURCES_OF_ONE_USER = ['log_events', 'log_treatment_interaction'] as const;

/**
 * Deletes the user's rows ingested up to the deletion time from every per-user table, and waits
 * for the mutations to finish (mutations_sync), so the job completes only when the rows are gone.
 * Rows ingested later belong to the user's new profile and stay. Idempotent (a retry re-issues
 * the same deletes). `ALTER TABLE … DELETE` rather than the lightweight `DELETE FROM`: it works
 * on every MergeTree variant and version (and on a cluster's Replicated tables) alike.
 */
export async function deleteUserRows(ch: ClickHouseClient, projectId: string, userId: string, deletedAtMs: number): Promise<void> {
  for (const { table } of USER_TABLES) {
    const t = await alterTarget(ch, table);
    await ch.command({
      query: `ALTER TABLE ${t.name}${t.onCluster} DELETE WHERE project_id = {projectId:String} AND user_id = {userId:String}
              AND ingest_ts <= fromUnixTimestamp64Milli({deletedAtMs:Int64}, 'UTC') SETTINGS mutations_sync = ${t.sync}`,
      query_params: { projectId, userId, deletedAtMs },
    });
  }
  const t = await alterTarget(ch, 'dead_letters');
  await ch.command({
    query: `ALTER TABLE ${t.name}${t.onCluster} DELETE WHERE project_id = {projectId:String} AND source IN {sources:Array(String)}
            AND receive_time <= fromUnixTimestamp64Milli({deletedAtMs:Int64}, 'UTC')
            AND position(tryBase64Decode(payload_base64), {needle:String}) > 0 SETTINGS mutations_sync = ${t.sync}`,
    query_params: { projectId, sources: [...DEAD_LETTER_SOURCES_OF_ONE_USER], deletedAtMs, needle: `"userId":${JSON.stringify(userId)}` },
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

export interface UserDeletionWorkerOptions {
  connection: Redis;
  redisPrefix: string;
  clickhouse: ClickHouseClient;
  store: UserDeletionStore;
  log: Logger;
  metrics?: JobMetrics;
}

/** Runs the queued deletions (retried with capped backoff until ClickHouse has carried them out). */
export function startUserDeletionWorker(o: UserDeletionWorkerOptions): Worker<UserDeletionJob> {
  const worker = new Worker<UserDeletionJob>(
    USER_DELETION_QUEUE,
    async (job: Job<UserDeletionJob>) => {
      const { projectId, userId, inFlight } = job.data;
      let { deletedAtMs } = job.data;
      const started = performance.now();
      if (inFlight && inFlight.length > 0) {
        // Jobs of the user that were being processed at the deletion may have changed the profile
        // and written rows after it: once they are done, erase again, and delete rows up to now.
        const finished = await waitUntilInactive(o.connection, o.redisPrefix, inFlight, IN_FLIGHT_WAIT_MS);
        deletedAtMs = Date.now();
        await o.store.tombstone(projectId, userId, deletedAtMs);
        await o.store.deleteKeys(projectId, userId, deletedAtMs);
        await job.updateData({ ...job.data, deletedAtMs, inFlight: [] });
        o.log.info({ jobId: job.id, projectId, inFlight: inFlight.length, finished }, 'user erased again after the jobs in flight at its deletion');
      }
      await deleteUserRows(o.clickhouse, projectId, userId, deletedAtMs);
      await o.store.finished(projectId, userId, deletedAtMs);
      // no user id in logs: the job id names the deletion
      o.log.info({ jobId: job.id, projectId, ms: Math.round(performance.now() - started) }, 'user data deleted from clickhouse');
    },
    { connection: o.connection, prefix: bullPrefix(o.redisPrefix, o.connection), concurrency: 2, settings: { backoffStrategy: (attemptsMade: number) => cappedExponentialBackoff(attemptsMade) } },
  );
  worker.on('failed', (job, err) => o.log.warn({ jobId: job?.id, attemptsMade: job?.attemptsMade, errMessage: err.message }, 'user deletion failed; will retry'));
  worker.on('error', (err) => o.log.warn({ err }, 'user deletion worker error'));
  if (o.metrics) instrumentWorker(worker, o.metrics);
  return worker;
}
