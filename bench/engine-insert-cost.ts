/**
 * The embedded engine's CPU per row stored (`npx tsx bench/engine-insert-cost.ts [events|decisions]
 * [inserts] [rows per insert] [--setting name=value]… [--table-setting name=value]… [--sql STATEMENT]…`): the
 * repository's migrations on a fresh chDB path, then `inserts` inserts of rows made by the workers'
 * own code (eventRowsChunk, decisionRowsChunk) with the service's insert settings, one every
 * 100 ms as the batch writer sends them, then 2 s for the merges to catch up. Prints the CPU of
 * each thread group of this process per row: the insert's threads, the merges, the main thread
 * (which here also makes the rows), V8's. `--setting` overrides an insert setting, `--table-setting`
 * changes the table (ALTER TABLE … MODIFY SETTING) before the inserts, and `--sql` runs a statement
 * after the migrations (e.g. `ALTER TABLE decisions DROP INDEX idx_treatment`, or a DROP and a
 * CREATE of the table in another shape): run two such commands one after the other to compare a
 * change. No service, no Redis: only the engine's share of a row. Set TMPDIR outside /tmp where
 * /tmp is slow to create files in (docs/benchmarks.md, stop 50).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClickhouse, rawInsertOf } from '../shared/platform/warehouse/clickhouse.js';
import { toClickhouseDateTime64 } from '../shared/platform/warehouse/clickhouse-datetime.js';
import { runMigrations } from '../shared/platform/warehouse/migrations.js';
import { INSERT_SETTINGS } from '../shared/platform/warehouse/sql/inserts.js';
import { TABLE_COLUMNS } from '../shared/platform/warehouse/tables.js';
import { eventRowsChunk } from '../shared/ingestion/event-rows.warehouse.js';
import type { DecisionRecord } from '../shared/impact/index.js';
import { decisionRowsChunk } from '../workers/impact/decisions.processor.js';
import { threadCpuOf, threadCpuPer } from './lib/proc-stat.js';

const args = process.argv.slice(2);
function pairs(flag: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = args.indexOf(flag); i >= 0; i = args.indexOf(flag)) {
    const [name, value] = (args.splice(i, 2)[1] ?? '').split('=');
    if (!/^[a-z_]+$/.test(name) || value === undefined || !/^[\w.]+$/.test(value)) throw new Error(`${flag} takes name=value`);
    out[name] = value;
  }
  return out;
}
const settings = pairs('--setting');
/** `--sql STATEMENT` (repeatable): run after the migrations, before the inserts. */
const statements: string[] = [];
for (let i = args.indexOf('--sql'); i >= 0; i = args.indexOf('--sql')) {
  const statement = args.splice(i, 2)[1]?.trim();
  if (!statement) throw new Error('--sql takes a statement');
  statements.push(statement);
}
const tableSettings = pairs('--table-setting');
const table = args[0] === 'decisions' ? 'decisions' : 'events';
/** Where the rows are sent: the decision log writes responses to `decisions_input`, whose view stores them in `decisions`. */
const target = table === 'decisions' ? 'decisions_input' : 'events';
const inserts = Number(args[1] ?? 150);
const perInsert = Number(args[2] ?? 5000);

/** An insert's rows as the workers make them: requests of 100 events, or responses of 3 decisions. */
function chunkOf(n: number, at: number, seq: number): string {
  const ingest = toClickhouseDateTime64(at);
  const user = () => `user-${Math.floor(Math.random() * 100_000)}`;
  if (table === 'decisions') {
    const records: DecisionRecord[] = Array.from({ length: Math.ceil(n / 3) }, (_, r) => ({
      projectId: 'bench',
      userId: user(),
      responseId: `r-${seq}-${r}`,
      decideTimeMs: at,
      decisions: [0, 1, 2].map((k) => ({ treatmentId: `t-${(r + k) % 50}`, versionNumber: 1, surface: `s-${k}`, rank: k + 1, outcome: 'RETURNED' as const })),
    }));
    return decisionRowsChunk(records, ingest).chunk;
  }
  const chunks: string[] = [];
  for (let r = 0; r < n / 100; r++) {
    const events = Array.from({ length: 100 }, (_, k) => ({
      eventName: `event-${k % 5}`,
      clientEventTs: at - k,
      eventProperties: { n: { longValue: String(k) } },
    }));
    chunks.push(eventRowsChunk({ projectId: 'bench', userId: user() }, events, (_e, k) => `j:${seq}-${r}:${k}`, ingest, 'api'));
  }
  return chunks.join('\n');
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'tds-engine-cost-'));
  const client = createClickhouse({ dataDir });
  try {
    await runMigrations(client);
    for (const query of statements) await client.command({ query });
    for (const [name, value] of Object.entries(tableSettings)) await client.command({ query: `ALTER TABLE ${table} MODIFY SETTING ${name} = ${value}` });
    const raw = rawInsertOf(client);
    if (!raw) throw new Error('the embedded engine is needed (no CLICKHOUSE_URL)');
    const load = loadavg()[0].toFixed(2);
    const before = threadCpuOf(process.pid);
    for (let i = 0; i < inserts; i++) {
      const body = Buffer.from(`${chunkOf(perInsert, Date.now(), i)}\n`);
      await raw(target, TABLE_COLUMNS[target], { ...INSERT_SETTINGS, ...settings }, body);
      await new Promise((r) => setTimeout(r, 100));
      if ((i + 1) % 50 === 0) process.stderr.write(`${i + 1} / ${inserts} inserts\n`);
    }
    await new Promise((r) => setTimeout(r, 2000));
    const rows = inserts * perInsert;
    const spent = threadCpuPer(before, threadCpuOf(process.pid), rows, 0.05);
    const total = spent.reduce((sum, [, us]) => sum + us, 0);
    const given = [...Object.entries({ ...settings, ...tableSettings }).map(([k, v]) => `${k}=${v}`), ...statements];
    console.log(
      `${table}, ${rows.toLocaleString('en')} rows in ${inserts} inserts${given.length ? ` (${given.join(', ')})` : ''}, load ${load}: ` +
        `${total.toFixed(2)} µs of CPU a row: ${spent.map(([g, us]) => `${g} ${us.toFixed(2)}`).join(', ')}`,
    );
  } finally {
    await client.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
void main();
