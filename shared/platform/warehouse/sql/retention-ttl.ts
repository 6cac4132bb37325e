import type { Logger } from 'pino';
import { alterTarget } from '../alter-target.js';
import { USER_TABLES } from '../tables.js';
import type { Warehouse } from '../warehouse.js';

type Statements = Pick<Warehouse, 'query' | 'command'>;

// RETENTION_DAYS as table TTLs: the per-user tables (USER_TABLES) and the dead letters.

/** Days a dead letter is kept (migration 0007), unless RETENTION_DAYS is shorter. */
export const DEAD_LETTER_DAYS = 30;

/**
 * RETENTION_DAYS as the tables' TTL. TTL expressions are static DDL, so migration 0006 sets the
 * default (400 days) and this step, run at start-up after the migrations, changes it to the
 * configured value when it differs (`MODIFY TTL`, which rewrites the TTL information of existing
 * parts in the background; rows past the TTL are dropped by merges, at the latest by the periodic
 * TTL merge, `merge_with_ttl_timeout`, four hours by default). Returns the tables changed.
 */
export async function applyRetentionTtl(ch: Statements, days: number, log?: Logger): Promise<string[]> {
  if (!Number.isInteger(days) || days < 1) throw new Error(`retention days must be a positive integer, got ${days}`);
  const changed: string[] = [];
  for (const { table, ttlColumn } of USER_TABLES) {
    const current = await ttlDays(ch, table);
    if (current === days) continue;
    const t = await alterTarget(ch, table);
    await ch.command(`ALTER TABLE ${t.name}${t.onCluster} MODIFY TTL toDateTime(${ttlColumn}) + INTERVAL ${days} DAY DELETE`);
    changed.push(table);
  }
  // Dead letters hold user data too: never kept longer than the retention.
  const deadLetterDays = Math.min(DEAD_LETTER_DAYS, days);
  if ((await ttlDays(ch, 'dead_letters')) !== deadLetterDays) {
    const t = await alterTarget(ch, 'dead_letters');
    await ch.command(`ALTER TABLE ${t.name}${t.onCluster} MODIFY TTL toDateTime(receive_time) + INTERVAL ${deadLetterDays} DAY DELETE`);
    changed.push('dead_letters');
  }
  if (changed.length > 0) log?.info({ tables: changed, retentionDays: days }, 'clickhouse TTL set to RETENTION_DAYS');
  return changed;
}

/** The days of the table's TTL as its definition states it (on a cluster: the local table's), or undefined. */
export async function ttlDays(ch: Pick<Warehouse, 'query'>, table: string): Promise<number | undefined> {
  const t = await alterTarget(ch, table);
  const local = t.onCluster ? t.name.split('.').pop()!.replace(/`/g, '') : table;
  const sql = 'SELECT create_table_query FROM system.tables WHERE database = currentDatabase() AND name = {table:String}';
  const [row] = await ch.query<{ create_table_query: string }>(sql, { table: local });
  const m = row ? /\bTTL\b.*?toIntervalDay\((\d+)\)/.exec(row.create_table_query) : null;
  return m ? Number(m[1]) : undefined;
}
