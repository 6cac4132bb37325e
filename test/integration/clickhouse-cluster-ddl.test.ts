import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { createClickhouse, type ClickHouseClient } from '../../shared/platform/warehouse/clickhouse.js';
import { loadMigrations, runMigrations, splitStatements } from '../../shared/platform/warehouse/migrations.js';
import { repoFile } from '../../shared/platform/repo-root.js';

/**
 * infra/clickhouse/cluster.md gives the replicated and distributed variant of every migration for
 * a ClickHouse cluster. No cluster runs here, so this test holds the document to the embedded
 * engine: every SQL statement in it parses (EXPLAIN AST), every table a migration creates has its
 * `_local` and Distributed pair, and each `_local` table, created with its replicated engine
 * swapped for the plain one, has exactly the columns of the table the migrations create.
 */
const dataDir = mkdtempSync(join(tmpdir(), 'tds-cluster-ddl-'));
let ch: ClickHouseClient;
const doc = readFileSync(repoFile('infra/clickhouse/cluster.md'), 'utf8');
const statements = [...doc.matchAll(/```sql\n([\s\S]*?)```/g)].flatMap((m) => splitStatements(m[1]));

beforeAll(async () => {
  ch = createClickhouse({ dataDir });
  await runMigrations(ch, pino({ level: 'silent' }));
});
afterAll(async () => {
  await ch?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const query = async <T>(sql: string): Promise<T[]> => (await ch.query({ query: sql, format: 'JSONEachRow' })).json<T>();

/** Tables the migrations create, by name: those that store rows, or (`nullTables`) those of ENGINE = Null. */
async function migrationTables(kind: 'stored' | 'null' = 'stored'): Promise<string[]> {
  const names = new Set<string>();
  for (const m of await loadMigrations()) {
    for (const s of m.statements) {
      const t = /CREATE TABLE IF NOT EXISTS\s+(\w+)/i.exec(s)?.[1];
      if (t && /ENGINE = Null\s*$/.test(s) === (kind === 'null')) names.add(t);
    }
  }
  return [...names];
}

/** A statement of the document for one node: no cluster, database cluster_check. */
const onOneNode = (s: string) => s.replace(/ON CLUSTER '\{cluster\}'/g, '').replace(/tds\./g, 'cluster_check.');

describe('infra/clickhouse/cluster.md', () => {
  it('has statements, and every one of them parses', async () => {
    expect(statements.length).toBeGreaterThan(10);
    for (const s of statements) {
      // statements the service runs with query parameters ({name:Type}) get sample values
      const params = Object.fromEntries([...s.matchAll(/\{(\w+):(\w+)\}/g)].map(([, name, type]) => [name, /Int|Float/.test(type) ? 1 : 'x']));
      await expect(ch.command({ query: `EXPLAIN AST ${s}`, query_params: params }), s.slice(0, 80)).resolves.toBeDefined();
    }
  });

  it('gives every table of the migrations a _local (replicated) and a Distributed table', async () => {
    const tables = await migrationTables();
    expect(tables.length).toBeGreaterThanOrEqual(5);
    for (const t of tables) {
      expect(doc, t).toContain(`CREATE TABLE IF NOT EXISTS tds.${t}_local ON CLUSTER`);
      expect(doc, t).toContain(`CREATE TABLE IF NOT EXISTS tds.${t} ON CLUSTER '{cluster}' AS tds.${t}_local`);
    }
  });

  it('defines each _local table with the columns the migrations give it', async () => {
    await ch.command({ query: 'CREATE DATABASE IF NOT EXISTS cluster_check' });
    for (const t of await migrationTables()) {
      const create = statements.find((s) => s.includes(`tds.${t}_local ON CLUSTER`) && /^\s*CREATE TABLE/i.test(s));
      expect(create, t).toBeDefined();
      // the same table on one node: replicated engine → its plain form, no cluster, another database
      const local = onOneNode(create!).replace(/Replicated(\w*MergeTree)\('[^']*',\s*'[^']*'(?:,\s*)?/g, (_m, engine: string) => `${engine}(`);
      await ch.command({ query: local });
      const columns = async (db: string, table: string) =>
        (
          await query<{ name: string; type: string }>(`SELECT name, type FROM system.columns WHERE database = '${db}' AND table = '${table}' ORDER BY name`)
        ).map((c) => `${c.name} ${c.type}`);
      expect(await columns('cluster_check', `${t}_local`), t).toEqual(await columns('default', t));
    }
  });

  it('gives every Null table of the migrations its table and view on every node, which store what the migrations store', async () => {
    await ch.command({ query: 'CREATE DATABASE IF NOT EXISTS cluster_check' });
    const nullTables = await migrationTables('null');
    expect(nullTables).toEqual(['decisions_input']);
    for (const t of nullTables) {
      const create = statements.find((s) => s.includes(`tds.${t} ON CLUSTER`) && /^\s*CREATE TABLE/i.test(s));
      const view = statements.find((s) => new RegExp(`^\\s*CREATE MATERIALIZED VIEW IF NOT EXISTS tds\\.${t}_mv ON CLUSTER`).test(s));
      expect(create, t).toBeDefined();
      expect(view, t).toBeDefined();
      // on one node the view writes into the local table the Distributed one stands for
      await ch.command({ query: onOneNode(create!) });
      await ch.command({ query: onOneNode(view!).replace(/TO cluster_check\.(\w+) AS/, 'TO cluster_check.$1_local AS') });
    }
    const row = JSON.stringify([
      'p',
      'u',
      'r',
      ['t-a', 't-b'],
      [1, 2],
      ['s', 's'],
      [0, 1],
      ['RETURNED', 'HOLDOUT'],
      '2026-11-28 09:30:00.000',
      '2026-11-28 09:30:01.000',
    ]);
    await ch.command({ query: `INSERT INTO cluster_check.decisions_input FORMAT JSONCompactEachRow ${row}` });
    await ch.command({ query: `INSERT INTO default.decisions_input FORMAT JSONCompactEachRow ${row}` });
    const read = (table: string) =>
      query<{ treatment_id: string; rank: number }>(`SELECT treatment_id, rank FROM ${table} WHERE project_id = 'p' ORDER BY rank`);
    expect(await read('cluster_check.decisions_local')).toEqual(await read('default.decisions'));
    expect(await read('default.decisions')).toEqual([
      { treatment_id: 't-a', rank: 0 },
      { treatment_id: 't-b', rank: 1 },
    ]);
  });
});
