import type { ClickHouseClient } from '@clickhouse/client';
import type { Logger } from 'pino';
import { createClickhouse, type ClickhouseOptions } from './clickhouse.js';
import type { ClickhouseTable, TableRows } from './event-rows.js';
import { runMigrations } from './migrations.js';
import { aggregationPage, aggregationPageEnds } from './sql/aggregation-pages.js';
import { findDecision, listDeadLetters, listDecisions } from './sql/api-reads.js';
import { insertLines, insertRows } from './sql/inserts.js';
import { treatmentReport } from './sql/treatment-report.js';
import { applyRetentionTtl, copyUserRows, deleteUserRows, ttlDays } from './sql/user-data.js';
import type { AggregationPageQuery, AggregationRead, InsertOptions, ReportQuery, Warehouse } from './warehouse.js';

/**
 * The Warehouse over `@clickhouse/client`: a ClickHouse server, or the embedded engine (chDB)
 * through the same client. The vendor client stays inside this module.
 */
export class ClickhouseWarehouse implements Warehouse {
  constructor(private readonly ch: ClickHouseClient) {}

  insertRows<T extends ClickhouseTable>(table: T, rows: readonly TableRows[T][], opts?: InsertOptions): Promise<void> {
    return insertRows(this.ch, table, rows, opts);
  }

  insertLines(table: ClickhouseTable, lines: readonly string[], opts?: InsertOptions): Promise<void> {
    return insertLines(this.ch, table, lines, opts);
  }

  async query<Row>(sql: string, params: Record<string, unknown> = {}): Promise<Row[]> {
    const rs = await this.ch.query({ query: sql, query_params: params, format: 'JSONEachRow' });
    return rs.json<Row>();
  }

  listDeadLetters(projectId: string, limit: number) {
    return listDeadLetters(this.ch, projectId, limit);
  }

  listDecisions(projectId: string, userId: string, limit: number) {
    return listDecisions(this.ch, projectId, userId, limit);
  }

  treatmentReport(q: ReportQuery) {
    return treatmentReport(this.ch, q);
  }

  /** An arrow: handed around as a DecisionLookup. */
  findDecision = (projectId: string, responseId: string, treatmentId: string) => findDecision(this.ch, projectId, responseId, treatmentId);

  copyUserRows(projectId: string, fromUserId: string, toUserId: string): Promise<void> {
    return copyUserRows(this.ch, projectId, fromUserId, toUserId);
  }

  deleteUserRows(projectId: string, userIds: readonly string[], deletedAtMs: number): Promise<void> {
    return deleteUserRows(this.ch, projectId, userIds, deletedAtMs);
  }

  applyRetentionTtl(days: number, log?: Logger): Promise<string[]> {
    return applyRetentionTtl(this.ch, days, log);
  }

  ttlDays(table: string): Promise<number | undefined> {
    return ttlDays(this.ch, table);
  }

  aggregationPageEnds(read: AggregationRead, after: string, pageUsers: number, pages: number) {
    return aggregationPageEnds(this.ch, read, after, pageUsers, pages);
  }

  aggregationPage(q: AggregationPageQuery) {
    return aggregationPage(this.ch, q);
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
