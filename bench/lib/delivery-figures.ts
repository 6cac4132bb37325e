import type { LoadResult } from './load-runner.js';
import type { OpenLoopResult } from './open-loop.js';
import type { GroupPeaks } from './process-sampler.js';
import { figure, type Figure } from './scenario.js';

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
  /** Closed loop, 1 API process, the decision log on (first run and a second run after the run with it off). */
  closed: LoadResult;
  closedAgain: LoadResult;
  /** The same with DECISION_LOG=off: before the second run with it on, and after it. */
  closedLogOff: LoadResult;
  closedLogOffAgain: LoadResult;
  closed2Api: LoadResult;
  open: OpenLoopResult;
  overload: OpenLoopResult;
  recoveryMs: number;
  base: LoadResult;
  baseOpen: OpenLoopResult;
  baseOverload: OpenLoopResult;
  openRate: number;
  overloadRate: number;
}

export function figures(m: Measured): Record<string, Figure> {
  const baselineLabel = 'bare Fastify route answering one HGETALL of the profile';
  const openLabel = `the same baseline at the same open-loop rate (${m.openRate.toLocaleString('en')} req/s)`;
  const overLabel = `the same baseline at the same rate (${m.overloadRate.toLocaleString('en')} req/s), which is below its own capacity`;
  const on = (m.closed.rps + m.closedAgain.rps) / 2;
  const off = (m.closedLogOff.rps + m.closedLogOffAgain.rps) / 2;
  const shedShare = m.overload.answered > 0 ? m.overload.refused / m.overload.answered : NaN;
  return {
    requestsPerSec: figure({
      label: 'GetTreatments requests/s',
      unit: 'req/s',
      value: m.closed.rps,
      baseline: m.base.rps,
      baselineLabel,
      better: 'higher',
      target: TARGETS.rpsRatio,
    }),
    p50Ms: figure({ label: 'GetTreatments p50 at saturation', unit: 'ms', value: m.closed.p50, baseline: m.base.p50, baselineLabel, better: 'lower' }),
    p99Ms: figure({
      label: 'GetTreatments p99 at saturation',
      unit: 'ms',
      value: m.closed.p99,
      baseline: m.base.p99,
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
      baseline: 1 - m.closed.rps / m.overloadRate,
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
      label: 'decision log cost: requests/s with it off ÷ with it on − 1',
      unit: 'share',
      value: off / on - 1,
      baseline: Math.max(1e-6, Math.abs(m.closedAgain.rps - m.closed.rps) / on, Math.abs(m.closedLogOffAgain.rps - m.closedLogOff.rps) / off),
      baselineLabel: 'the larger difference between the two runs with the log on and the two with it off (run-to-run noise)',
      better: 'lower',
      target: TARGETS.decisionLogCost,
    }),
    requestsPerSec2Api: figure({
      label: 'GetTreatments requests/s, API_PROCESSES=2',
      unit: 'req/s',
      value: m.closed2Api.rps,
      baseline: m.base.rps,
      baselineLabel,
      better: 'higher',
      target: TARGETS.rpsRatio,
    }),
    p99Ms2Api: figure({
      label: 'GetTreatments p99 at saturation, API_PROCESSES=2',
      unit: 'ms',
      value: m.closed2Api.p99,
      baseline: m.base.p99,
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
