/**
 * The cost of handing 10,000-row event inserts to the embedded engine: the main thread's busy
 * time per insert (rows made and handed over) and the process's CPU (also parsed and stored).
 * The engine's raw insert of the rows as bytes (insertLines, since stop 32) against
 * `@clickhouse/client`'s exec with the rows as one string (the path before, and a server's),
 * alternating; run on a quiet machine.
 *   npx tsx bench/micro/insert-path.ts [inserts per round] [rounds]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Readable } from 'node:stream';
import { drainStream } from '@clickhouse/client';
import { createClickhouse } from '../../shared/platform/warehouse/clickhouse.js';
import { runMigrations } from '../../shared/platform/warehouse/migrations.js';
import { insertLines } from '../../shared/platform/warehouse/sql/inserts.js';
import { TABLE_COLUMNS } from '../../shared/platform/warehouse/tables.js';
import { eventRowLine } from '../../shared/ingestion/event-rows.warehouse.js';
import { toClickhouseDateTime64 } from '../../shared/platform/warehouse/clickhouse-datetime.js';
import { eventRequest } from '../lib/event-generator.js';

const perRound = Number(process.argv[2] ?? 20);
const rounds = Number(process.argv[3] ?? 4);
const dir = mkdtempSync(join(tmpdir(), 'insert-path-'));
const client = createClickhouse({ dataDir: dir });
await runMigrations(client);
const stream = { runId: 'ip', users: 1000, eventsPerRequest: 100 };
const ingest = toClickhouseDateTime64(Date.now());
let seq = 0;
/** 100 jobs' chunks of 100 rows, as the batch writer holds them. */
function chunks(): string[] {
  const out: string[] = [];
  for (let r = 0; r < 100; r++) {
    const req = eventRequest(stream, seq++, Date.now());
    const owner = { projectId: 'p', userId: req.userId };
    out.push(req.events.map((e) => eventRowLine(owner, e, e.clientEventTimestamp, undefined, `i:${e.insertId}`, ingest, 'api')).join('\n'));
  }
  return out;
}
const paths: Record<string, (c: string[]) => Promise<void>> = {
  raw: (c) => insertLines(client, 'events', c, { dedupToken: false }),
  exec: async (c) => {
    const query = `INSERT INTO events (${TABLE_COLUMNS.events.join(', ')}) FORMAT JSONCompactEachRow`;
    const result = await client.exec({ query, values: Readable.from([`${c.join('\n')}\n`]) });
    await drainStream(result.stream);
  },
};
for (let round = 0; round < rounds; round++) {
  for (const [name, insert] of Object.entries(paths)) {
    const cpu0 = process.cpuUsage();
    const elu0 = performance.eventLoopUtilization();
    const t0 = performance.now();
    for (let i = 0; i < perRound; i++) await insert(chunks());
    const cpu = process.cpuUsage(cpu0);
    const mainMs = performance.eventLoopUtilization(elu0).active / perRound;
    console.log(
      `round ${round + 1} ${name.padEnd(4)}: main thread ${mainMs.toFixed(1)} ms, CPU ${((cpu.user + cpu.system) / 1000 / perRound).toFixed(1)} ms, wall ${((performance.now() - t0) / perRound).toFixed(1)} ms per 10,000-row insert`,
    );
  }
}
await client.close();
rmSync(dir, { recursive: true, force: true });
