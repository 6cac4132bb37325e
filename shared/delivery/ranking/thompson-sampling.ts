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
      // the posterior's parameters without an object per call: this runs once per qualifying arm of every request
      return sampleBeta(posteriorAlpha(stats), posteriorBeta(stats), random);
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
  return { alpha: posteriorAlpha(stats), beta: posteriorBeta(stats) };
}

function posteriorAlpha(stats: ArmStats): number {
  return 1 + Math.max(0, stats.actions);
}

function posteriorBeta(stats: ArmStats): number {
  return 1 + Math.max(0, stats.views - Math.max(0, stats.actions));
}

/**
 * A draw from Beta(alpha, beta). An arm with no action or no failure yet (new treatments, and
 * rarely-clicked ones: most arms of a young catalogue) has one parameter equal to 1, where the
 * distribution has a closed form inverted exactly by one power of one uniform draw; the others take
 * two gamma draws.
 */
export function sampleBeta(alpha: number, beta: number, random: Random): number {
  if (alpha === 1) {
    // Beta(1, 1) is uniform; Beta(1, b) has CDF 1 − (1 − x)^b. `1 - random()` is in (0, 1].
    if (beta === 1) return random();
    return 1 - Math.pow(1 - random(), 1 / beta);
  }
  // Beta(a, 1) has CDF x^a
  if (beta === 1) return Math.pow(1 - random(), 1 / alpha);
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
