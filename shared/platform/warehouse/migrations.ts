import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import type { ClickHouseClient } from '@clickhouse/client';
import type { Logger } from 'pino';
import { repoFile } from '../repo-root.js';

/**
 * Versioned ClickHouse migrations, applied at start-up by every process that writes or reads
 * ClickHouse. Files are `NNNN_name.sql` in infra/clickhouse/migrations; each statement ends with
 * `;` at the end of a line, and whole-line `--` comments are dropped before splitting.
 *
 * ClickHouse DDL is not transactional: a migration that fails half-way is not recorded and is
 * re-run from its first statement next time, so every statement must be idempotent
 * (IF NOT EXISTS / IF EXISTS). That also makes two processes that start at the same moment safe:
 * both may apply the same file, and schema_migrations collapses their two rows.
 */
/** From the repository root, so `dist/` finds it too. */
export const MIGRATIONS_DIR = repoFile('infra/clickhouse/migrations/');

export interface Migration {
  version: number;
  name: string;
  /** sha256 of the file, to warn when an applied migration was edited afterwards. */
  checksum: string;
  statements: string[];
}

export interface MigrationReport {
  /** Migrations applied by this call, in order; empty when the schema was up to date. */
  applied: { version: number; name: string }[];
}

const FILE_NAME = /^(\d{4})_([a-z0-9_]+)\.sql$/;

const SCHEMA_MIGRATIONS_DDL = `CREATE TABLE IF NOT EXISTS schema_migrations
(
    version    UInt32,
    name       String,
    checksum   String,
    applied_at DateTime64(3, 'UTC') DEFAULT now64(3, 'UTC')
)
ENGINE = ReplacingMergeTree
ORDER BY version`;

export function splitStatements(sql: string): string[] {
  const statements: string[] = [];
  let current: string[] = [];
  const flush = () => {
    const text = current.join('\n').trim();
    if (text !== '') statements.push(text);
    current = [];
  };
  for (const line of sql.split(/\r?\n/)) {
    if (/^\s*--/.test(line)) continue;
    if (/;\s*$/.test(line)) {
      current.push(line.replace(/;\s*$/, ''));
      flush();
    } else {
      current.push(line);
    }
  }
  flush();
  return statements;
}

/** Reads and orders the migration files; a misnamed `.sql` file or a repeated version is an error. */
export async function loadMigrations(dir: URL = MIGRATIONS_DIR): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.sql')).sort();
  const migrations: Migration[] = [];
  for (const file of files) {
    const match = FILE_NAME.exec(file);
    if (match === null) throw new Error(`clickhouse migration "${file}" is not named NNNN_name.sql`);
    const version = Number(match[1]);
    if (migrations.some((m) => m.version === version)) throw new Error(`clickhouse migration version ${version} is used twice`);
    const sql = await readFile(new URL(file, dir), 'utf8');
    const checksum = createHash('sha256').update(sql).digest('hex');
    migrations.push({ version, name: match[2], checksum, statements: splitStatements(sql) });
  }
  return migrations;
}

async function appliedChecksums(client: ClickHouseClient): Promise<Map<number, string>> {
  const rs = await client.query({
    query: 'SELECT version, checksum FROM schema_migrations FINAL',
    format: 'JSONEachRow',
  });
  const rows = await rs.json<{ version: number | string; checksum: string }>();
  return new Map(rows.map((r) => [Number(r.version), r.checksum]));
}

async function apply(client: ClickHouseClient, m: Migration): Promise<void> {
  for (const statement of m.statements) await client.command({ query: statement });
  // Recorded only after every statement succeeded: a crash in between re-runs the whole file.
  await client.insert({
    table: 'schema_migrations',
    values: [{ version: m.version, name: m.name, checksum: m.checksum }],
    format: 'JSONEachRow',
  });
}

/** Applies, in version order, every migration not yet recorded in schema_migrations. */
export async function runMigrations(client: ClickHouseClient, logger?: Logger, opts: { dir?: URL } = {}): Promise<MigrationReport> {
  const started = performance.now();
  const migrations = await loadMigrations(opts.dir);
  await client.command({ query: SCHEMA_MIGRATIONS_DDL });
  const done = await appliedChecksums(client);
  const report: MigrationReport = { applied: [] };
  for (const m of migrations) {
    const checksum = done.get(m.version);
    if (checksum !== undefined) {
      if (checksum !== m.checksum) {
        logger?.warn({ version: m.version, name: m.name }, 'clickhouse migration file changed after it was applied; not re-run');
      }
      continue;
    }
    await apply(client, m);
    logger?.info({ version: m.version, migration: m.name }, 'clickhouse migration applied');
    report.applied.push({ version: m.version, name: m.name });
  }
  logger?.info({ applied: report.applied.length, total: migrations.length, ms: Math.round(performance.now() - started) }, 'clickhouse schema up to date');
  return report;
}
