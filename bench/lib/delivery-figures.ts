import type { LoadResult } from './load-runner.js';
import type { OpenLoopResult } from './open-loop.js';
import type { GroupPeaks } from './process-sampler.js';
import { figure, percentile, type Figure } from './scenario.js';

/** The delivery scenario's figures, their baselines and targets (bench/scenarios/delivery.ts measures them). */
const TARGETS = {
  rpsRatio: { on: 'ratio', bound: 'min', limit: 0.5 },
  p99Ratio: { on: 'ratio', bound: 'max', limit: 3 },
  openLoopP99Ms: { on: 'value', bound: 'max', limit: 10 },
  overloadMaxWaitMs: { on: 'value', bound: 'max', limit: 1000 },
  overloadP99OkMs: { on: 'value', bound: 'max', limit: 50 },
  recoveryMs: { on: 'value', bound: 'max', limit: 2000 },
  decisionLogCost: { on: 'value', bound: 'max', limit: 0.1 },
} as const;

export function maxPeaks(all: readonly GroupPeaks[]): { apiMb: number; backgroundMb: number; totalMb: number } {
  const max = (xs: number[]) => Math.max(...xs.filter(Number.isFinite));
  return { apiMb: max(all.map((p) => p.apiMb)), backgroundMb: max(all.map((p) => p.backgroundMb)), totalMb: max(all.map((p) => p.totalMb)) };
}

/** The measurements of one scenario run, named as the figures use them. */
export interface Measured {
  /**
   * Closed loops with 1 API process, one per round of the capacity rounds: the service with the
   * decision log on, the same service with `DECISION_LOG=off` (a second one, alive beside it)
   * and the baseline, one after the other in each round, so that a drift of the machine weighs
   * on all three alike.
   */
  closedRounds: LoadResult[];
  logOffRounds: LoadResult[];
  baseRounds: LoadResult[];
  closed2Api: LoadResult;
  open: OpenLoopResult;
  overload: OpenLoopResult;
  recoveryMs: number;
  baseOpen: OpenLoopResult;
  baseOverload: OpenLoopResult;
  openRate: number;
  overloadRate: number;
}

/** The run of median throughput (`percentile`'s median: of an even number, the lower of the middle two). */
export function medianRun<T extends { rps: number }>(runs: readonly T[]): T {
  if (runs.length === 0) throw new Error('no runs');
  return [...runs].sort((a, b) => a.rps - b.rps)[Math.ceil(runs.length / 2) - 1];
}

const median = (xs: readonly number[]) =>
  percentile(
    [...xs].sort((a, b) => a - b),
    50,
  );

/** How far runs of the same thing spread: (largest − smallest) ÷ median of their requests/s. */
export function spread(runs: readonly { rps: number }[]): number {
  const rps = runs.map((r) => r.rps);
  return (Math.max(...rps) - Math.min(...rps)) / median(rps);
}

/** What the capacity rounds measured, round by round: each round's requests/s and ratios. */
export function roundsNote(m: Pick<Measured, 'closedRounds' | 'logOffRounds' | 'baseRounds'>): string {
  const rps = (r: LoadResult) => Math.round(r.rps).toLocaleString('en');
  const each = m.closedRounds.map(
    (on, i) =>
      `round ${i + 1}: log on ${rps(on)}, off ${rps(m.logOffRounds[i])}, baseline ${rps(m.baseRounds[i])} req/s ` +
      `(ratio ${(on.rps / m.baseRounds[i].rps).toFixed(2)}, log cost ${((m.logOffRounds[i].rps / on.rps - 1) * 100).toFixed(1)} %)`,
  );
  return `capacity rounds (closed loops; the figures take the median of each): ${each.join('; ')}`;
}

export function figures(m: Measured): Record<string, Figure> {
  const baselineLabel = 'bare Fastify route answering one HGETALL of the profile';
  const openLabel = `the same baseline at the same open-loop rate (${m.openRate.toLocaleString('en')} req/s)`;
  const overLabel = `the same baseline at the same rate (${m.overloadRate.toLocaleString('en')} req/s), which is below its own capacity`;
  const closed = medianRun(m.closedRounds);
  const base = medianRun(m.baseRounds);
  const logCost = median(m.closedRounds.map((on, i) => m.logOffRounds[i].rps / on.rps - 1));
  const shedShare = m.overload.answered > 0 ? m.overload.refused / m.overload.answered : NaN;
  return {
    requestsPerSec: figure({
      label: 'GetTreatments requests/s (median of the rounds)',
      unit: 'req/s',
      value: closed.rps,
      baseline: base.rps,
      baselineLabel,
      better: 'higher',
      target: TARGETS.rpsRatio,
    }),
    p50Ms: figure({
      label: 'GetTreatments p50 at saturation (the median round)',
      unit: 'ms',
      value: closed.p50,
      baseline: base.p50,
      baselineLabel,
      better: 'lower',
    }),
    p99Ms: figure({
      label: 'GetTreatments p99 at saturation (the median round)',
      unit: 'ms',
      value: closed.p99,
      baseline: base.p99,
      baselineLabel,
      better: 'lower',
      target: TARGETS.p99Ratio,
    }),
    openLoopP50Ms: figure({
      label: 'GetTreatments p50, open loop at half its own capacity',
      unit: 'ms',
      value: m.open.p50,
      baseline: m.baseOpen.p50,
      baselineLabel: openLabel,
      better: 'lower',
    }),
    openLoopP99Ms: figure({
      label: 'GetTreatments p99, open loop at half its own capacity',
      unit: 'ms',
      value: m.open.p99,
      baseline: m.baseOpen.p99,
      baselineLabel: openLabel,
      better: 'lower',
      target: TARGETS.openLoopP99Ms,
    }),
    overloadMaxWaitMs: figure({
      label: 'overload at twice its capacity: longest wait for an answer (200 or 503)',
      unit: 'ms',
      value: m.overload.maxWaitMs,
      baseline: m.baseOverload.maxWaitMs,
      baselineLabel: overLabel,
      better: 'lower',
      target: TARGETS.overloadMaxWaitMs,
    }),
    overloadP99OkMs: figure({
      label: 'overload at twice its capacity: p99 of the 200s',
      unit: 'ms',
      value: m.overload.p99,
      baseline: m.baseOverload.p99,
      baselineLabel: overLabel,
      better: 'lower',
      target: TARGETS.overloadP99OkMs,
    }),
    overloadRefusedShare: figure({
      label: 'overload at twice its capacity: share answered 503',
      unit: 'share',
      value: shedShare,
      baseline: 1 - closed.rps / m.overloadRate,
      baselineLabel: 'the share above its capacity (1 − capacity ÷ rate)',
      better: 'lower',
    }),
    recoveryMs: figure({
      label: 'after the overload: time until the latency is back to the idle level',
      unit: 'ms',
      value: m.recoveryMs,
      better: 'lower',
      target: TARGETS.recoveryMs,
    }),
    decisionLogCost: figure({
      label: 'decision log cost: requests/s with it off ÷ with it on − 1 (median of the rounds)',
      unit: 'share',
      value: logCost,
      baseline: Math.max(1e-6, spread(m.closedRounds), spread(m.logOffRounds)),
      baselineLabel: 'the larger spread (largest − smallest ÷ median) of the rounds with the log on and of those with it off (run-to-run noise)',
      better: 'lower',
      target: TARGETS.decisionLogCost,
    }),
    requestsPerSec2Api: figure({
      label: 'GetTreatments requests/s, API_PROCESSES=2',
      unit: 'req/s',
      value: m.closed2Api.rps,
      baseline: base.rps,
      baselineLabel,
      better: 'higher',
      target: TARGETS.rpsRatio,
    }),
    p99Ms2Api: figure({
      label: 'GetTreatments p99 at saturation, API_PROCESSES=2',
      unit: 'ms',
      value: m.closed2Api.p99,
      baseline: base.p99,
      baselineLabel,
      better: 'lower',
    }),
  };
}

/**
 * GetTreatments for 2 surfaces of a project of 50 LIVE treatments with 3 rules each, over
 * seeded profiles: closed loop (capacity), open loop at half that capacity, an overload at twice
 * it and the recovery after it, with the decision log on and off, and with 2 API processes;
 * baseline: a bare Fastify route answering one HGETALL of the same profile, at the same loads.
 */
