import { describe, expect, it } from 'vitest';
import { conversionRate, upliftOf, Z95, type GroupCounts } from '../../shared/impact/report-stats.js';

const g = (group: 'TREATED' | 'HOLDOUT', users: number, conversions: number): GroupCounts => ({ group, users, impressions: 0, clicks: 0, conversions });

describe('report statistics', () => {
  it('difference of proportions with the normal-approximation 95 % interval', () => {
    const u = upliftOf(g('TREATED', 1000, 120), g('HOLDOUT', 500, 50))!;
    expect(u.absolute).toBeCloseTo(0.02, 12);
    expect(u.relative).toBeCloseTo(0.2, 12);
    const se = Math.sqrt((0.12 * 0.88) / 1000 + (0.1 * 0.9) / 500);
    expect(u.confidenceInterval95.low).toBeCloseTo(0.02 - 1.959964 * se, 6);
    expect(u.confidenceInterval95.high).toBeCloseTo(0.02 + 1.959964 * se, 6);
    expect(Z95).toBeCloseTo(1.96, 2);
  });

  it('no uplift without users in both groups; no relative uplift when the holdout never converts', () => {
    expect(upliftOf(g('TREATED', 10, 1), g('HOLDOUT', 0, 0))).toBeUndefined();
    expect(upliftOf(g('TREATED', 0, 0), g('HOLDOUT', 10, 1))).toBeUndefined();
    const u = upliftOf(g('TREATED', 10, 2), g('HOLDOUT', 10, 0))!;
    expect(u.absolute).toBeCloseTo(0.2, 12);
    expect('relative' in u).toBe(false);
    expect(conversionRate(g('TREATED', 0, 0))).toBeUndefined();
    expect(conversionRate(g('TREATED', 4, 1))).toBe(0.25);
  });
});
