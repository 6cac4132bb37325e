import type { LoadCpu, LoadResult } from './load-runner.js';
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
  closedRounds: Round[];
  logOffRounds: Round[];
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

/** A capacity round of the service: its closed loop, with the CPU it cost when that was read. */
export type Round = LoadResult & { cpu?: Pick<LoadCpu, 'serviceCores' | 'apiCores' | 'redisCores'> };

/**
 * CPU per request of a round, µs: of its API process (`api`), and of all the service's processes
 * and Redis together (`all`: the machine's work for a request but the load generator's). NaN when
 * the round's CPU was not read.
 */
export function cpuPerRequest(r: Round): { api: number; all: number } {
  if (!r.cpu || !(r.rps > 0)) return { api: NaN, all: NaN };
  return { api: (r.cpu.apiCores * 1e6) / r.rps, all: ((r.cpu.serviceCores + r.cpu.redisCores) * 1e6) / r.rps };
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
      `(ratio ${(on.rps / m.baseRounds[i].rps).toFixed(2)}, log cost ${((m.logOffRounds[i].rps / on.rps - 1) * 100).toFixed(1)} %` +
      `${cpuClause(on, m.logOffRounds[i])})`,
  );
  return `capacity rounds (closed loops; the figures take the median of each): ${each.join('; ')}`;
}

/** A round's CPU per request with the log on and off, when both were read. */
function cpuClause(on: Round, off: Round): string {
  const a = cpuPerRequest(on);
  const b = cpuPerRequest(off);
  if (![a.api, a.all, b.api, b.all].every(Number.isFinite)) return '';
  return `; CPU per request: API process ${a.api.toFixed(1)} on, ${b.api.toFixed(1)} off; with the other processes and Redis ${a.all.toFixed(1)} on, ${b.all.toFixed(1)} off µs`;
}

/**
 * The decision log's CPU per request, with it on against with it off, each the median over the
 * capacity rounds: of the API process (what the request path pays) and of all the service's
 * processes and Redis (what the machine pays, the embedded engine's inserts included). Absent when
 * a round's CPU was not read.
 */
function decisionLogCpuFigures(m: Pick<Measured, 'closedRounds' | 'logOffRounds'>): Record<string, Figure> {
  const on = m.closedRounds.map(cpuPerRequest);
  const off = m.logOffRounds.map(cpuPerRequest);
  if (![...on, ...off].every((c) => Number.isFinite(c.api) && Number.isFinite(c.all))) return {};
  const labels = {
    api: 'decision log: CPU of the API process per GetTreatments, with it on (median of the rounds)',
    all: "decision log: CPU of all the service's processes and Redis per GetTreatments, with it on (median of the rounds)",
  };
  const one = (side: keyof typeof labels) =>
    figure({
      label: labels[side],
      unit: 'µs',
      value: median(on.map((c) => c[side])),
      baseline: median(off.map((c) => c[side])),
      baselineLabel: 'the same with DECISION_LOG=off, in the same rounds',
      better: 'lower',
    });
  return { decisionLogApiCpuUs: one('api'), decisionLogAllCpuUs: one('all') };
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
    ...decisionLogCpuFigures(m),
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
