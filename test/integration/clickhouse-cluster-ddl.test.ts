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

/** Tables the migrations create, by name. */
async function migrationTables(): Promise<string[]> {
  const names = new Set<string>();
  for (const m of await loadMigrations()) {
    for (const s of m.statements) {
      const t = /CREATE TABLE IF NOT EXISTS\s+(\w+)/i.exec(s)?.[1];
      if (t) names.add(t);
    }
  }
  return [...names];
}

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
      const local = create!
        .replace(/ON CLUSTER '\{cluster\}'/g, '')
        .replace(/tds\./g, 'cluster_check.')
        .replace(/Replicated(\w*MergeTree)\('[^']*',\s*'[^']*'(?:,\s*)?/g, (_m, engine: string) => `${engine}(`);
      await ch.command({ query: local });
      const columns = async (db: string, table: string) =>
        (
          await query<{ name: string; type: string }>(`SELECT name, type FROM system.columns WHERE database = '${db}' AND table = '${table}' ORDER BY name`)
        ).map((c) => `${c.name} ${c.type}`);
      expect(await columns('cluster_check', `${t}_local`), t).toEqual(await columns('default', t));
    }
  });
});
