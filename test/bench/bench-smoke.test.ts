import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseArgs, printReport, SCENARIOS, UsageError } from '../../bench/run.js';
import type { ScenarioContext, ScenarioResult } from '../../bench/lib/scenario.js';

/**
 * Every benchmark scenario once at `--size tiny`, so the suite cannot rot. Speed is never
 * asserted (this runs beside other tests on a shared machine): only that each scenario runs to
 * the end and reports the figures it promises, each with a finite baseline and ratio.
 */
const EXPECTED_FIGURES: Record<string, string[]> = {
  delivery: ['requestsPerSec', 'p50Ms', 'p99Ms', 'openLoopP50Ms', 'openLoopP99Ms', 'requestsPerSec2Api', 'p99Ms2Api', 'peakRssApiMb', 'peakRssBackgroundMb', 'peakRssTotalMb', 'peakRssApiMb2Api', 'peakRssBackgroundMb2Api', 'peakRssTotalMb2Api'],
  'log-events': ['requestsPerSec', 'eventsPerSec', 'p99Ms', 'peakRssApiMb', 'peakRssBackgroundMb', 'peakRssTotalMb'],
  ingest: ['eventsPerSec', 'peakRssApiMb', 'peakRssBackgroundMb', 'peakRssTotalMb'],
  freshness: ['p50Ms', 'p99Ms', 'peakRssApiMb', 'peakRssBackgroundMb', 'peakRssTotalMb'],
  backfill: ['seconds', 'peakRssApiMb', 'peakRssBackgroundMb', 'peakRssTotalMb'],
  report: ['seconds', 'peakRssApiMb', 'peakRssBackgroundMb', 'peakRssTotalMb'],
  client: ['cpuMsPerCall'],
};

let workDir: string;
const results: ScenarioResult[] = [];

beforeAll(() => {
  workDir = mkdtempSync(join(tmpdir(), 'tds-bench-smoke-'));
});
afterAll(() => {
  rmSync(workDir, { recursive: true, force: true });
});

function context(): ScenarioContext {
  return { size: 'tiny', redisUrl: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', progress: () => undefined, workDir, previous: new Map() };
}

describe('benchmark scenarios at --size tiny', () => {
  it('covers every scenario of the CLI', () => {
    expect(SCENARIOS.map((s) => s.name).sort()).toEqual(Object.keys(EXPECTED_FIGURES).sort());
  });

  // One after another, and after every other test file (vitest.bench.config.ts): each scenario's
  // service child takes ~540 MB and a core, which would starve tests running beside it.
  for (const scenario of SCENARIOS) {
    it(`${scenario.name} reports its figures beside a baseline, with a finite ratio`, async () => {
      const r = await scenario.run(context());
      results.push(r);
      expect(r.scenario).toBe(scenario.name);
      expect(r.size).toBe('tiny');
      expect(Object.keys(r.figures).sort()).toEqual([...EXPECTED_FIGURES[scenario.name]].sort());
      for (const [key, f] of Object.entries(r.figures)) {
        expect(Number.isFinite(f.value) && f.value > 0, `${key} value ${f.value}`).toBe(true);
        expect(Number.isFinite(f.baseline) && f.baseline > 0, `${key} baseline ${f.baseline}`).toBe(true);
        expect(Number.isFinite(f.ratio), `${key} ratio ${f.ratio}`).toBe(true);
        expect(f.ratio).toBeCloseTo(f.value / f.baseline, 9);
      }
    }, 300_000);
  }

  it('prints one table row per figure', () => {
    expect(results).toHaveLength(SCENARIOS.length);
    const table = printReport({ machine: { cpus: 2, cpuModel: 'x', node: 'v20', platform: 'linux' }, size: 'tiny', startedAt: '', results, failures: [] });
    for (const r of results) for (const f of Object.values(r.figures)) expect(table).toContain(f.label);
  });
});

describe('bench CLI arguments', () => {
  it('defaults to every scenario at full size; takes names, --size and --json', () => {
    expect(parseArgs([]).scenarios.map((s) => s.name)).toEqual(SCENARIOS.map((s) => s.name));
    expect(parseArgs([]).size).toBe('full');
    const o = parseArgs(['ingest', '--size', 'tiny', '--json', 'out.json', 'log-events']);
    expect(o.scenarios.map((s) => s.name)).toEqual(['log-events', 'ingest']);
    expect(o).toMatchObject({ size: 'tiny', json: 'out.json' });
    expect(parseArgs(['freshness', '--capacity', '3500'])).toMatchObject({ logEventsCapacity: 3500 });
  });

  it('rejects an unknown scenario, size or option', () => {
    expect(() => parseArgs(['nope'])).toThrow(UsageError);
    expect(() => parseArgs(['--size', 'huge'])).toThrow(UsageError);
    expect(() => parseArgs(['--fast'])).toThrow(UsageError);
    expect(() => parseArgs(['--capacity', 'lots'])).toThrow(UsageError);
    expect(() => parseArgs(['--capacity', '0'])).toThrow(UsageError);
  });
});
