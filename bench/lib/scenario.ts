/**
 * What every benchmark scenario returns: figures measured on the service beside the same figure
 * measured on a baseline in the same run on the same machine, and their ratio (absolute numbers on shared machines drift, ratios much less).
 */

export type Size = 'tiny' | 'full';
export const SIZES: readonly Size[] = ['tiny', 'full'];

/** `share`: a fraction (0.08 = 8 %), printed as a percentage. */
export type Unit = 'req/s' | 'events/s' | 'ms' | 'µs' | 's' | 'MB' | 'share';

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
  /**
   * The same figure measured on a baseline in the same run. Absent only for a figure that has no
   * meaningful baseline (e.g. the time to recover from overload: a bare route is never overloaded
   * at the service's rates); every such figure is named in the README.
   */
  baseline?: number;
  /** What the baseline is, in a few words (shown in the README and the JSON). */
  baselineLabel?: string;
  /** value / baseline (absent without a baseline). For latencies and times lower is better, for rates higher is better. */
  ratio?: number;
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
  /** Results of scenarios run earlier in the same run (freshness notes the capacity ingest measured). */
  previous: ReadonlyMap<string, ScenarioResult>;
  /**
   * End-to-end ingest capacity given on the command line (`--capacity`), in LogEvents requests/s
   * of freshness's 10 events (events/s ÷ 10): freshness loads at half of it instead of measuring it.
   */
  ingestCapacity?: number;
}

export interface Scenario {
  name: string;
  summary: string;
  run(ctx: ScenarioContext): Promise<ScenarioResult>;
}

/** Builds a figure; the ratio is value / baseline and `met` is checked against the target. */
export function figure(f: Omit<Figure, 'ratio' | 'met'>): Figure {
  if (f.target?.on === 'ratio' && f.baseline === undefined) throw new Error(`${f.label}: a target on the ratio needs a baseline`);
  const ratio = f.baseline === undefined ? undefined : f.value / f.baseline;
  let met: boolean | undefined;
  if (f.target) {
    const x = f.target.on === 'ratio' ? (ratio as number) : f.value;
    met = f.target.bound === 'min' ? x >= f.target.limit : x <= f.target.limit;
  }
  return { ...f, ratio, met };
}

/** The memory targets (issue 19): per API process under delivery load, the background process under ingest. */
export const API_RSS_TARGET: Target = { on: 'value', bound: 'max', limit: 150 };
export const BACKGROUND_RSS_TARGET: Target = { on: 'value', bound: 'max', limit: 600 };

/**
 * Peak RSS of the service's processes beside their RSS once ready (before any load): the largest
 * API process, the background process and the whole group (supervisor included). `targets` says
 * which of the memory targets this scenario's load is the one for.
 */
export function rssFigures(
  peaks: { apiMb: number; backgroundMb: number; totalMb: number },
  ready: { apiMb: number; backgroundMb: number; totalMb: number },
  targets: { api?: boolean; background?: boolean } = {},
  variant?: { key: string; label: string },
): Record<string, Figure> {
  const baselineLabel = 'RSS of the same process(es) when ready, idle';
  const key = (k: string) => `${k}${variant?.key ?? ''}`;
  const label = (l: string) => (variant ? `${l}, ${variant.label}` : l);
  return {
    [key('peakRssApiMb')]: figure({
      label: label('peak RSS of an API process'),
      unit: 'MB',
      value: peaks.apiMb,
      baseline: ready.apiMb,
      baselineLabel,
      better: 'lower',
      target: targets.api ? API_RSS_TARGET : undefined,
    }),
    [key('peakRssBackgroundMb')]: figure({
      label: label('peak RSS of the background process'),
      unit: 'MB',
      value: peaks.backgroundMb,
      baseline: ready.backgroundMb,
      baselineLabel,
      better: 'lower',
      target: targets.background ? BACKGROUND_RSS_TARGET : undefined,
    }),
    [key('peakRssTotalMb')]: figure({
      label: label('peak RSS of all processes'),
      unit: 'MB',
      value: peaks.totalMb,
      baseline: ready.totalMb,
      baselineLabel,
      better: 'lower',
    }),
  };
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}
