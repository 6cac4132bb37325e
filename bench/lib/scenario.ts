/**
 * What every benchmark scenario returns: figures measured on the service beside the same figure
 * measured on a baseline in the same run on the same machine, and their ratio (conventions
 * point 12: absolute numbers on shared machines drift, ratios much less).
 */

export type Size = 'tiny' | 'full';
export const SIZES: readonly Size[] = ['tiny', 'full'];

export type Unit = 'req/s' | 'events/s' | 'ms' | 's' | 'MB';

/** A target of the issue, checked against the value or against the ratio. */
export interface Target {
  on: 'value' | 'ratio';
  /** `min`: at least `limit`; `max`: at most `limit`. */
  bound: 'min' | 'max';
  limit: number;
}

export interface Figure {
  label: string;
  unit: Unit;
  value: number;
  baseline: number;
  /** What the baseline is, in a few words (shown in the README and the JSON). */
  baselineLabel: string;
  /** value / baseline. For latencies and times lower is better, for rates higher is better. */
  ratio: number;
  better: 'higher' | 'lower';
  target?: Target;
  /** Undefined when the figure has no target. */
  met?: boolean;
}

export interface ScenarioResult {
  scenario: string;
  size: Size;
  startedAt: string;
  seconds: number;
  figures: Record<string, Figure>;
  /** Parameters actually used (sizes, connections, durations). */
  params: Record<string, number | string>;
  /** What bounds the figures, verification results, anything a reader must know. */
  notes: string[];
}

export interface ScenarioContext {
  size: Size;
  redisUrl: string;
  /** A progress line (stderr in the CLI, silent in the smoke test). */
  progress(message: string): void;
  /** Parent directory of the scenario's data directories (removed after each scenario). */
  workDir: string;
  /** When set, the service child runs with `--cpu-prof` and writes its profile under this directory. */
  cpuProfDir?: string;
  /** Results of scenarios run earlier in the same run (freshness reuses log-events' capacity). */
  previous: ReadonlyMap<string, ScenarioResult>;
}

export interface Scenario {
  name: string;
  summary: string;
  run(ctx: ScenarioContext): Promise<ScenarioResult>;
}

/** Builds a figure; the ratio is value / baseline and `met` is checked against the target. */
export function figure(f: Omit<Figure, 'ratio' | 'met'>): Figure {
  const ratio = f.value / f.baseline;
  let met: boolean | undefined;
  if (f.target) {
    const x = f.target.on === 'ratio' ? ratio : f.value;
    met = f.target.bound === 'min' ? x >= f.target.limit : x <= f.target.limit;
  }
  return { ...f, ratio, met };
}

/** The memory target, shared by every scenario. */
export const RSS_TARGET: Target = { on: 'value', bound: 'max', limit: 600 };

/** Peak RSS of the all-in-one process beside its RSS once ready (before any load). */
export function rssFigure(peakMb: number, idleMb: number): Figure {
  return figure({ label: 'peak RSS of the service', unit: 'MB', value: peakMb, baseline: idleMb, baselineLabel: 'RSS of the same process when ready, idle', better: 'lower', target: RSS_TARGET });
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}
