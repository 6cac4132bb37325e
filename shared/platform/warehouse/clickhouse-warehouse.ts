import type { ClickHouseClient } from '@clickhouse/client';
import type { Logger } from 'pino';
import { createClickhouse, type ClickhouseOptions } from './clickhouse.js';
import { runMigrations } from './migrations.js';
import { insertLines, insertRows } from './sql/inserts.js';
import { applyRetentionTtl, ttlDays } from './sql/retention-ttl.js';
import type { ClickhouseTable } from './tables.js';
import type { InsertOptions, Warehouse } from './warehouse.js';

/**
 * The Warehouse over `@clickhouse/client`: a ClickHouse server, or the embedded engine (chDB)
 * through the same client. The vendor client stays inside this module.
 */
export class ClickhouseWarehouse implements Warehouse {
  constructor(private readonly ch: ClickHouseClient) {}

  insertRows(table: ClickhouseTable, rows: readonly object[], opts?: InsertOptions): Promise<void> {
    return insertRows(this.ch, table, rows, opts);
  }

  insertLines(table: ClickhouseTable, lines: readonly (string | Buffer)[], opts?: InsertOptions): Promise<void> {
    return insertLines(this.ch, table, lines, opts);
  }

  async query<Row>(sql: string, params: Record<string, unknown> = {}): Promise<Row[]> {
    const rs = await this.ch.query({ query: sql, query_params: params, format: 'JSONEachRow' });
    return rs.json<Row>();
  }

  async command(sql: string, params: Record<string, unknown> = {}): Promise<void> {
    await this.ch.command({ query: sql, query_params: params });
  }

  applyRetentionTtl(days: number, log?: Logger): Promise<string[]> {
    return applyRetentionTtl(this, days, log);
  }

  ttlDays(table: string): Promise<number | undefined> {
    return ttlDays(this, table);
  }

  async migrate(log?: Logger): Promise<void> {
    await runMigrations(this.ch, log);
  }

  async ping(): Promise<void> {
    await this.query('SELECT 1 AS ok');
  }

  close(): Promise<void> {
    return this.ch.close();
  }
}

/** Opens ClickHouse (see createClickhouse: a server when `url` is set, else chDB under `dataDir`). */
export function createWarehouse(opts: ClickhouseOptions): Warehouse {
  return new ClickhouseWarehouse(createClickhouse(opts));
}
