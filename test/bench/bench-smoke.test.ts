import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DOCS_FILE, parseArgs, printReport, SCENARIOS, UsageError } from '../../bench/run.js';
import type { ScenarioContext, ScenarioResult } from '../../bench/lib/scenario.js';

/**
 * Every benchmark scenario once at `--size tiny`, so the suite cannot rot. Speed is never
 * asserted (this runs beside other tests on a shared machine): only that each scenario runs to
 * the end and reports the figures it promises, each with a finite baseline and ratio.
 */
const RSS = ['peakRssApiMb', 'peakRssBackgroundMb', 'peakRssTotalMb'];
const EXPECTED_FIGURES: Record<string, string[]> = {
  delivery: [
    ...[
      'requestsPerSec',
      'p50Ms',
      'p99Ms',
      'openLoopP50Ms',
      'openLoopP99Ms',
      'overloadMaxWaitMs',
      'overloadP99OkMs',
      'overloadRefusedShare',
      'recoveryMs',
      'decisionLogCost',
      'decisionLogApiCpuUs',
      'decisionLogAllCpuUs',
      'requestsPerSec2Api',
      'p99Ms2Api',
    ],
    ...RSS,
    ...RSS.map((k) => `${k}2Api`),
  ],
  'log-events': ['requestsPerSec', 'eventsPerSec', 'p99Ms', ...RSS],
  ingest: ['eventsPerSec', ...RSS],
  freshness: ['p50Ms', 'p99Ms', 'p99Ms10k', ...RSS],
  backfill: ['seconds', ...RSS],
  report: ['seconds', ...RSS],
  client: ['cpuMsPerCall'],
};

/** Figures of the "Done when" that must carry a target (printed beside them as met / not met). */
const WITH_TARGET: Record<string, string[]> = {
  delivery: ['requestsPerSec', 'p99Ms', 'openLoopP99Ms', 'overloadMaxWaitMs', 'overloadP99OkMs', 'recoveryMs', 'decisionLogCost', 'peakRssApiMb'],
  'log-events': ['requestsPerSec'],
  ingest: ['eventsPerSec', 'peakRssBackgroundMb'],
  freshness: ['p99Ms'],
};
/** Figures without a baseline (README: nothing comparable exists); every other has one. */
const WITHOUT_BASELINE = new Set(['delivery.recoveryMs']);
/** Figures that may be 0 (nothing refused, recovered at once) or, for a cost, below 0 (noise). */
const MAY_BE_ZERO = new Set(['delivery.overloadRefusedShare', 'delivery.recoveryMs']);
const MAY_BE_NEGATIVE = new Set(['delivery.decisionLogCost']);

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
        const name = `${scenario.name}.${key}`;
        const lowest = MAY_BE_NEGATIVE.has(name) ? -Infinity : MAY_BE_ZERO.has(name) ? 0 : Number.MIN_VALUE;
        expect(Number.isFinite(f.value) && f.value >= lowest, `${name} value ${f.value}`).toBe(true);
        if (WITHOUT_BASELINE.has(name)) {
          expect(f.baseline, name).toBeUndefined();
          expect(f.ratio, name).toBeUndefined();
        } else {
          expect(f.baseline !== undefined && Number.isFinite(f.baseline) && f.baseline > 0, `${name} baseline ${f.baseline}`).toBe(true);
          expect(Number.isFinite(f.ratio), `${name} ratio ${f.ratio}`).toBe(true);
          expect(f.ratio).toBeCloseTo(f.value / (f.baseline as number), 9);
        }
        if (WITH_TARGET[scenario.name]?.includes(key)) expect(typeof f.met, `${name} met`).toBe('boolean');
      }
    }, 300_000);
  }

  it('ingest notes what was left to store when the last request was accepted, and the background CPU by thread', () => {
    const notes = results.find((r) => r.scenario === 'ingest')?.notes ?? [];
    const pending = notes.map((n) => /^when the last request was accepted, ([\d,]+) of the ([\d,]+) requests' jobs/.exec(n)).find((m) => m !== null);
    expect(pending, notes.join('\n')).toBeDefined();
    const [left, of] = [pending![1], pending![2]].map((s) => Number(s.replace(/,/g, '')));
    expect(of).toBeGreaterThan(0);
    expect(left >= 0 && left <= of, `${left} of ${of}`).toBe(true);
    // the JavaScript thread always spends something per event
    expect(notes.find((n) => n.startsWith('background by thread'))).toMatch(/main \d+\.\d\d/);
  });

  it('log-events measures in rounds, service then baseline, and reports the median round of each', () => {
    const r = results.find((x) => x.scenario === 'log-events')!;
    const notes = r.notes;
    const rounds = notes.find((n) => n.startsWith('rounds (closed loops'));
    expect(rounds, notes.join('\n')).toBeDefined();
    const each = [...rounds!.matchAll(/round (\d+): service ([\d,]+), baseline ([\d,]+) req\/s/g)].map((m) => ({
      service: Number(m[2].replace(/,/g, '')),
      baseline: Number(m[3].replace(/,/g, '')),
    }));
    const n = Number(r.params.rounds);
    expect(n).toBeGreaterThanOrEqual(2);
    expect(each).toHaveLength(n);
    // the figures are the median round of each side (the note rounds to whole requests/s)
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.ceil(xs.length / 2) - 1];
    expect(Math.abs(r.figures.requestsPerSec.value - median(each.map((x) => x.service)))).toBeLessThanOrEqual(1);
    expect(Math.abs((r.figures.requestsPerSec.baseline as number) - median(each.map((x) => x.baseline)))).toBeLessThanOrEqual(1);
    // each round's service measurement and its baseline's, in that order
    const order = notes.filter((x) => /^(service|baseline) \(round \d+ of \d+\):/.test(x)).map((x) => x.slice(0, x.indexOf(':')));
    expect(order).toEqual(Array.from({ length: n }, (_, i) => [`service (round ${i + 1} of ${n})`, `baseline (round ${i + 1} of ${n})`]).flat());
    expect(notes.find((x) => x.startsWith("the service's events queue at the end of each round"))).toMatch(/jobs, stored in \d+\.\d s/);
  });

  it('prints one table row per figure', () => {
    expect(results).toHaveLength(SCENARIOS.length);
    const table = printReport({
      machine: { cpus: 2, cpuModel: 'x', node: 'v20', platform: 'linux' },
      size: 'tiny',
      startedAt: '',
      loadAverage: { before: 0.42, after: 1.37 },
      results,
      failures: [],
    });
    for (const r of results) for (const f of Object.values(r.figures)) expect(table).toContain(f.label);
    expect(table).toContain('load average (1 min): 0.42 before the run, 1.37 after it');
    // every target is printed beside its figure as met / NOT MET
    const rows = table.split('\n');
    for (const r of results) {
      for (const f of Object.values(r.figures).filter((x) => x.target)) {
        const row = rows.find((l) => l.startsWith(`${r.scenario} `) && l.includes(` ${f.label} `));
        expect(row, `${r.scenario}: ${f.label}`).toMatch(f.met ? / met$/ : / NOT MET$/);
      }
    }
  });
});

describe('bench CLI arguments', () => {
  it('defaults to every scenario at full size; takes names, --size, --json and --write-docs', () => {
    expect(parseArgs([]).scenarios.map((s) => s.name)).toEqual(SCENARIOS.map((s) => s.name));
    expect(parseArgs([]).size).toBe('full');
    const o = parseArgs(['ingest', '--size', 'tiny', '--json', 'out.json', 'log-events']);
    expect(o.scenarios.map((s) => s.name)).toEqual(['log-events', 'ingest']);
    expect(o).toMatchObject({ size: 'tiny', json: 'out.json' });
    expect(parseArgs(['freshness', '--capacity', '3500'])).toMatchObject({ ingestCapacity: 3500 });
    expect(parseArgs([]).writeDocs).toBeUndefined();
    expect(parseArgs(['--write-docs']).writeDocs).toBe(DOCS_FILE);
  });

  it('rejects an unknown scenario, size or option', () => {
    expect(() => parseArgs(['nope'])).toThrow(UsageError);
    expect(() => parseArgs(['--size', 'huge'])).toThrow(UsageError);
    expect(() => parseArgs(['--fast'])).toThrow(UsageError);
    expect(() => parseArgs(['--capacity', 'lots'])).toThrow(UsageError);
    expect(() => parseArgs(['--capacity', '0'])).toThrow(UsageError);
  });
});
