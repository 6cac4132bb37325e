import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { ensureLocalRedis } from '../shared/platform/redis/local-redis.js';
import { createLogger } from '../shared/platform/logger.js';
import { SIZES, type Scenario, type ScenarioContext, type ScenarioResult, type Size } from './lib/scenario.js';
import { resultsTable } from './lib/table-printer.js';
import { docsBlock, docsMarkers, docsRefusal, QUIET_LOAD_AVERAGE, writeDocsBlock, type DocsRun } from './lib/docs-writer.js';
import { REPO_ROOT, sleep } from './lib/tsx-child.js';
import { deliveryScenario } from './scenarios/delivery.js';
import { logEventsScenario } from './scenarios/log-events.js';
import { ingestScenario } from './scenarios/ingest.js';
import { freshnessScenario } from './scenarios/freshness.js';
import { backfillScenario } from './scenarios/backfill.js';
import { reportScenario } from './scenarios/report.js';
import { clientScenario } from './scenarios/client.js';

/** In run order (freshness notes the ingest scenario's capacity beside its own, measured in its request size). */
export const SCENARIOS: readonly Scenario[] = [
  deliveryScenario,
  logEventsScenario,
  ingestScenario,
  freshnessScenario,
  backfillScenario,
  reportScenario,
  clientScenario,
];

export interface CliOptions {
  scenarios: Scenario[];
  size: Size;
  json?: string;
  cpuProfDir?: string;
  ingestCapacity?: number;
  /** Write the results table into this Markdown file (docs/benchmarks.md), between its markers. */
  writeDocs?: string;
}

/** The page `--write-docs` writes to. */
export const DOCS_FILE = join(REPO_ROOT, 'docs', 'benchmarks.md');

const USAGE = `usage: npm run bench -- [scenario ...] [--size tiny|full] [--json <file>] [--write-docs] [--cpu-prof [<dir>]] [--capacity <req/s>]
scenarios: ${SCENARIOS.map((s) => s.name).join(', ')} (default: all)
  --size        tiny: seconds-long smoke run; full (default): the sizes of the issue
  --json        also write the figures as JSON to <file>
  --write-docs  also write the results table into docs/benchmarks.md (refused when the 1-minute load
                average is above ${QUIET_LOAD_AVERAGE} when the run starts, or at --size tiny)
  --cpu-prof    run the service child with --cpu-prof (profiles under <dir>, default ./bench-profiles) and summarise them
  --capacity    end-to-end ingest capacity for freshness, in LogEvents req/s of 10 events (events/s ÷ 10): it
                loads at half of it (else freshness measures it, in requests of 10 events)
environment: REDIS_URL (default redis://127.0.0.1:6379; a local redis-server is started when nothing answers)`;

export class UsageError extends Error {}

export function parseArgs(argv: readonly string[]): CliOptions {
  const names: string[] = [];
  let size: Size = 'full';
  let json: string | undefined;
  let cpuProfDir: string | undefined;
  let ingestCapacity: number | undefined;
  let writeDocs: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--size') {
      const v = argv[++i];
      if (!SIZES.includes(v as Size)) throw new UsageError(`--size must be tiny or full, got ${v}`);
      size = v as Size;
    } else if (a === '--json') {
      json = argv[++i];
      if (!json) throw new UsageError('--json needs a file name');
    } else if (a === '--cpu-prof') {
      cpuProfDir = argv[i + 1] && !argv[i + 1].startsWith('-') && !SCENARIOS.some((s) => s.name === argv[i + 1]) ? argv[++i] : 'bench-profiles';
    } else if (a === '--write-docs') {
      writeDocs = DOCS_FILE;
    } else if (a === '--capacity') {
      ingestCapacity = Number(argv[++i]);
      if (!(ingestCapacity > 0)) throw new UsageError(`--capacity must be a positive number of req/s, got ${argv[i]}`);
    } else if (a === '--help' || a === '-h') {
      throw new UsageError('');
    } else if (a.startsWith('-')) {
      throw new UsageError(`unknown option ${a}`);
    } else {
      if (!SCENARIOS.some((s) => s.name === a)) throw new UsageError(`unknown scenario ${a}`);
      names.push(a);
    }
  }
  const scenarios = names.length === 0 ? [...SCENARIOS] : SCENARIOS.filter((s) => names.includes(s.name));
  return { scenarios, size, json, cpuProfDir: cpuProfDir ? resolve(cpuProfDir) : undefined, ingestCapacity, writeDocs };
}

/** Everything a run measured (`--json` writes it as it is). */
export type RunReport = DocsRun;

/** The 1-minute load average (other work on the machine: above ~1 on 2 cores, it takes CPU from the figures). */
export function loadAverage(): number {
  return loadavg()[0];
}

/** Runs the scenarios one after another; a failed scenario is reported and the others still run. */
export async function runScenarios(o: CliOptions, redisUrl: string, progress: (line: string) => void): Promise<RunReport> {
  const workDir = mkdtempSync(join(tmpdir(), 'tds-bench-'));
  const previous = new Map<string, ScenarioResult>();
  const report: RunReport = {
    machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown', node: process.version, platform: `${process.platform} ${process.arch}` },
    size: o.size,
    startedAt: new Date().toISOString(),
    loadAverage: { before: loadAverage(), after: NaN },
    results: [],
    failures: [],
  };
  progress(`load average (1 min) before the run: ${report.loadAverage.before.toFixed(2)}`);
  try {
    for (const s of o.scenarios) {
      const ctx: ScenarioContext = { size: o.size, redisUrl, progress, workDir, cpuProfDir: o.cpuProfDir, previous, ingestCapacity: o.ingestCapacity };
      progress(`[${s.name}] ${s.summary}`);
      try {
        const r = await s.run(ctx);
        previous.set(s.name, r);
        report.results.push(r);
        progress(`[${s.name}] done in ${r.seconds.toFixed(1)} s`);
      } catch (err) {
        report.failures.push({ scenario: s.name, error: (err as Error).stack ?? String(err) });
        progress(`[${s.name}] FAILED: ${(err as Error).message}`);
      }
    }
  } finally {
    rmSync(workDir, { recursive: true, force: true });
  }
  report.loadAverage.after = loadAverage();
  progress(`load average (1 min) after the run: ${report.loadAverage.after.toFixed(2)}`);
  return report;
}

export function printReport(report: RunReport): string {
  const out = [
    `${report.size} run on ${report.machine.cpus} × ${report.machine.cpuModel}, node ${report.machine.node}`,
    `load average (1 min): ${report.loadAverage.before.toFixed(2)} before the run, ${report.loadAverage.after.toFixed(2)} after it`,
    '',
    resultsTable(report.results),
  ];
  for (const r of report.results) {
    out.push(
      '',
      `${r.scenario} (${Object.entries(r.params)
        .map(([k, v]) => `${k}=${v}`)
        .join(', ')}):`,
    );
    for (const n of r.notes) out.push(`  - ${n}`);
  }
  for (const f of report.failures) out.push('', `${f.scenario} FAILED: ${f.error}`);
  return out.join('\n');
}

/**
 * `npm run bench` builds the service just before the run, and the 1-minute load average lags:
 * for a run whose table goes into the docs, wait (up to 2 minutes) for it to fall back under the
 * threshold, and say at once when the table will not be written.
 */
async function settleBeforeDocsRun(o: CliOptions, progress: (line: string) => void): Promise<void> {
  if (o.size !== 'full') return;
  const end = Date.now() + 120_000;
  while (loadAverage() > QUIET_LOAD_AVERAGE && Date.now() < end) {
    progress(
      `--write-docs: load average ${loadAverage().toFixed(2)} is above ${QUIET_LOAD_AVERAGE}; waiting for it to fall (the build just ran) before starting`,
    );
    await sleep(5000);
  }
  if (loadAverage() > QUIET_LOAD_AVERAGE)
    progress(`--write-docs: the load average is still ${loadAverage().toFixed(2)}: the run goes ahead, but its table will not be written into the docs`);
}

function gitCommit(): string | undefined {
  try {
    return execFileSync('git', ['describe', '--always', '--dirty'], { cwd: REPO_ROOT, encoding: 'utf8' }).trim();
  } catch {
    return undefined;
  }
}

async function main(): Promise<void> {
  let opts: CliOptions;
  try {
    opts = parseArgs(process.argv.slice(2));
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    if (err.message) console.error(err.message);
    console.error(USAGE);
    process.exit(err.message ? 2 : 0);
  }
  // a page without its markers fails now, not after the run
  if (opts.writeDocs) docsMarkers(opts.writeDocs);
  const progress = (line: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const redisDir = mkdtempSync(join(tmpdir(), 'tds-bench-redis-'));
  let redisChild: ChildProcess | undefined;
  try {
    redisChild = await ensureLocalRedis(redisUrl, redisDir, createLogger('warn', 'bench'));
    if (redisChild) progress(`started a local redis-server for the run (nothing answered at ${redisUrl})`);
    if (opts.cpuProfDir) mkdirSync(opts.cpuProfDir, { recursive: true });
    if (opts.writeDocs) await settleBeforeDocsRun(opts, progress);
    const report = await runScenarios(opts, redisUrl, progress);
    console.log(printReport(report));
    if (opts.json) {
      writeFileSync(opts.json, JSON.stringify(report, null, 2) + '\n');
      progress(`figures written to ${opts.json}`);
    }
    let docsRefused = false;
    if (opts.writeDocs) {
      const refusal = docsRefusal(report);
      docsRefused = refusal !== undefined;
      if (refusal) console.error(refusal);
      else {
        writeDocsBlock(opts.writeDocs, docsBlock(report, gitCommit()));
        progress(`results table written to ${opts.writeDocs}`);
      }
    }
    process.exitCode = report.failures.length > 0 || docsRefused ? 1 : 0;
  } finally {
    redisChild?.kill('SIGTERM');
    rmSync(redisDir, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
