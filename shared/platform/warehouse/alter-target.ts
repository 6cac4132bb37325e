import type { Warehouse } from './warehouse.js';

/**
 * Where an ALTER of `table` must go. On one node (chDB, a single server) the table itself; on a
 * cluster (infra/clickhouse/cluster.md) `table` is a Distributed table, which takes no ALTER …
 * DELETE / MODIFY TTL: the statement goes to its local table ON CLUSTER, waiting for every replica.
 */
export interface AlterTarget {
  name: string;
  onCluster: string;
  /** mutations_sync: 1 = this node, 2 = every replica */
  sync: 1 | 2;
}

const DISTRIBUTED = /^Distributed\('([^']+)',\s*'([^']+)',\s*'([^']+)'/;

export async function alterTarget(ch: Pick<Warehouse, 'query'>, table: string): Promise<AlterTarget> {
  const sql = 'SELECT engine_full FROM system.tables WHERE database = currentDatabase() AND name = {table:String}';
  const [row] = await ch.query<{ engine_full: string }>(sql, { table });
  const m = row ? DISTRIBUTED.exec(row.engine_full) : null;
  if (!m) return { name: table, onCluster: '', sync: 1 };
  const quote = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
  const ident = (s: string) => `\`${s.replace(/`/g, '``')}\``;
  return { name: `${ident(m[2])}.${ident(m[3])}`, onCluster: ` ON CLUSTER ${quote(m[1])}`, sync: 2 };
}
