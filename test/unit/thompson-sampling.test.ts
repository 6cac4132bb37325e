import { describe, expect, it } from 'vitest';
import { statsViewFromHash, type ArmStats, type RankingPolicy } from '../../shared/delivery/ranking/ranking-policy.js';
import { greedy, posterior, sampleBeta, thompsonSampling } from '../../shared/delivery/ranking/thompson-sampling.js';
import { seededRandom } from '../helpers/seeded-random.js';

const ctx = (treatmentId: string) => ({ projectId: 'p', surface: 'home', treatmentId, userId: 'u' });

/** Share of `draws` requests in which arm `a` outscores arm `b`. */
function winRate(policy: RankingPolicy, a: ArmStats, b: ArmStats, draws = 2000): number {
  let wins = 0;
  for (let i = 0; i < draws; i++) if (policy.score(ctx('a'), a) > policy.score(ctx('b'), b)) wins++;
  return wins / draws;
}

describe('Thompson sampling', () => {
  it('ranks a clearly better arm first in most draws', () => {
    const policy = thompsonSampling(seededRandom(1));
    const good = { views: 1000, actions: 200 };
    const poor = { views: 1000, actions: 50 };
    expect(winRate(policy, good, poor)).toBeGreaterThan(0.99);
    // even with little data a large difference shows
    expect(winRate(policy, { views: 40, actions: 20 }, { views: 40, actions: 2 })).toBeGreaterThan(0.95);
  });

  it('still explores an arm with no data against a strong one, but rarely against overwhelming evidence', () => {
    const policy = thompsonSampling(seededRandom(2));
    const fresh = { views: 0, actions: 0 };
    // Beta(1,1) is uniform: it beats an 80% arm about 20% of the time
    const vsStrong = winRate(policy, fresh, { views: 1000, actions: 800 });
    expect(vsStrong).toBeGreaterThan(0.1);
    expect(vsStrong).toBeLessThan(0.3);
    // and a known-bad arm is almost never shown against a known-good one
    expect(winRate(policy, { views: 1000, actions: 0 }, { views: 1000, actions: 500 })).toBe(0);
  });

  it('draws from Beta(1 + actions, 1 + views − actions)', () => {
    const random = seededRandom(3);
    const n = 20_000;
    const draws = Array.from({ length: n }, () => sampleBeta(3, 7, random));
    const mean = draws.reduce((s, x) => s + x, 0) / n;
    const variance = draws.reduce((s, x) => s + (x - mean) ** 2, 0) / n;
    expect(mean).toBeCloseTo(0.3, 2);
    // Beta(3,7): variance = ab / ((a+b)^2 (a+b+1)) = 21 / 1100
    expect(variance).toBeCloseTo(21 / 1100, 3);
    expect(draws.every((x) => x > 0 && x < 1)).toBe(true);
    expect(posterior({ views: 9, actions: 2 })).toEqual({ alpha: 3, beta: 8 });
  });

  it('draws from the closed forms where a parameter is 1 with the right mean and variance', () => {
    const random = seededRandom(5);
    const n = 40_000;
    // [alpha, beta]: uniform, Beta(1, b) (no action yet), Beta(a, 1) (no failure yet)
    for (const [a, b] of [
      [1, 1],
      [1, 5],
      [4, 1],
    ]) {
      const draws = Array.from({ length: n }, () => sampleBeta(a, b, random));
      const mean = draws.reduce((s, x) => s + x, 0) / n;
      const variance = draws.reduce((s, x) => s + (x - mean) ** 2, 0) / n;
      expect(mean).toBeCloseTo(a / (a + b), 2);
      expect(variance).toBeCloseTo((a * b) / ((a + b) ** 2 * (a + b + 1)), 3);
      expect(draws.every((x) => x >= 0 && x <= 1)).toBe(true);
      // and the shape, not only two moments: the share below the median matches the CDF
      const median = b === 1 ? Math.pow(0.5, 1 / a) : 1 - Math.pow(0.5, 1 / b);
      expect(draws.filter((x) => x < median).length / n).toBeCloseTo(0.5, 1);
    }
    // a new arm against one with no failures in 3 views (Beta(4, 1), mean 0.8) wins about 20 % of draws
    const rate = winRate(thompsonSampling(seededRandom(6)), { views: 0, actions: 0 }, { views: 3, actions: 3 }, 20_000);
    expect(rate).toBeGreaterThan(0.18);
    expect(rate).toBeLessThan(0.22);
  });

  it('handles huge counts and actions logged without views', () => {
    const policy = thompsonSampling(seededRandom(4));
    const big = policy.score(ctx('a'), { views: 50_000_000, actions: 5_000_000 });
    expect(big).toBeCloseTo(0.1, 3);
    expect(posterior({ views: 1, actions: 5 })).toEqual({ alpha: 6, beta: 1 });
    expect(Number.isFinite(policy.score(ctx('a'), { views: 1, actions: 5 }))).toBe(true);
  });

  it('is reproducible with the same random source', () => {
    const a = thompsonSampling(seededRandom(7));
    const b = thompsonSampling(seededRandom(7));
    const stats = { views: 10, actions: 3 };
    expect(Array.from({ length: 5 }, () => a.score(ctx('x'), stats))).toEqual(Array.from({ length: 5 }, () => b.score(ctx('x'), stats)));
  });
});

describe('greedy', () => {
  it('scores by the posterior mean, deterministically', () => {
    const policy = greedy();
    expect(policy.score(ctx('a'), { views: 8, actions: 3 })).toBe(0.4);
    expect(policy.score(ctx('a'), { views: 0, actions: 0 })).toBe(0.5);
    expect(policy.score(ctx('a'), { views: 100, actions: 30 })).toBeGreaterThan(policy.score(ctx('b'), { views: 100, actions: 10 }));
  });
});

describe('statsViewFromHash', () => {
  it('reads views and actions per surface and treatment, surfaces with colons included', () => {
    const view = statsViewFromHash({ 'v:home:1': '10', 'a:home:1': '3', 'v:app:main/top:22': '7', 'x:junk': '1', 'v:home:2': 'NaN' });
    expect(view.get('home', '1')).toEqual({ views: 10, actions: 3 });
    expect(view.get('app:main/top', '22')).toEqual({ views: 7, actions: 0 });
    expect(view.get('home', '2')).toEqual({ views: 0, actions: 0 });
    expect(view.get('inbox', '1')).toEqual({ views: 0, actions: 0 });
  });
});
