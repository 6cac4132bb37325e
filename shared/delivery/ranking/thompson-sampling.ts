/**
 * The default ranking policy: Bernoulli Thompson sampling. Each arm (treatment on a
 * surface) has a Beta(1 + actions, 1 + views − actions) posterior over its action rate, starting
 * from a uniform prior; every request draws one sample per qualifying arm and ranks by the draws.
 * An arm with a clearly higher rate wins most draws (exploitation), while an arm with little
 * data has a wide posterior and still wins some draws (exploration), with no tuning parameter.
 */
import type { ArmStats, RankingContext, RankingPolicy } from './ranking-policy.js';

/** Uniform on [0, 1). Injected so tests are deterministic. */
export type Random = () => number;

export function thompsonSampling(random: Random = Math.random): RankingPolicy {
  return {
    name: 'thompson-sampling',
    score: (_ctx: RankingContext, stats: ArmStats) => {
      const { alpha, beta } = posterior(stats);
      return sampleBeta(alpha, beta, random);
    },
  };
}

/** Deterministic: the posterior mean. For tests and for explaining a ranking without noise. */
export function greedy(): RankingPolicy {
  return {
    name: 'greedy',
    score: (_ctx: RankingContext, stats: ArmStats) => {
      const { alpha, beta } = posterior(stats);
      return alpha / (alpha + beta);
    },
  };
}

/** Actions logged without a view (or views lost) must not make the second parameter fall below 1. */
export function posterior(stats: ArmStats): { alpha: number; beta: number } {
  const actions = Math.max(0, stats.actions);
  const failures = Math.max(0, stats.views - actions);
  return { alpha: 1 + actions, beta: 1 + failures };
}

export function sampleBeta(alpha: number, beta: number, random: Random): number {
  const x = sampleGamma(alpha, random);
  const y = sampleGamma(beta, random);
  return x / (x + y);
}

/**
 * Marsaglia and Tsang (2000), for shape ≥ 1 (always the case here: 1 + a count). Constant
 * expected time whatever the shape, so arms with millions of views cost the same as new ones.
 */
function sampleGamma(shape: number, random: Random): number {
  const d = shape - 1 / 3;
  const c = 1 / Math.sqrt(9 * d);
  for (;;) {
    let x: number;
    let v: number;
    do {
      x = sampleNormal(random);
      v = 1 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const u = random();
    if (u < 1 - 0.0331 * x * x * x * x) return d * v;
    if (u > 0 && Math.log(u) < 0.5 * x * x + d * (1 - v + Math.log(v))) return d * v;
  }
}

/** Box–Muller; `1 - random()` keeps the logarithm's argument in (0, 1]. */
function sampleNormal(random: Random): number {
  const u1 = 1 - random();
  const u2 = random();
  return Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
}
