import { describe, expect, it } from 'vitest';
import { figures, type Measured } from '../../bench/lib/delivery-figures.js';

/** A closed or open loop's result with the figures these tests read; the rest is not looked at. */
function load(rps: number, extra: Record<string, number> = {}): Measured['closed'] {
  return { ok: rps * 10, non2xx: 0, errors: 0, timeouts: 0, statusCodes: {}, seconds: 10, rps, p50: 1, p90: 2, p99: 3, max: 4, ...extra };
}
const open = (rps: number) =>
  ({
    ...load(rps),
    sent: rps * 10,
    refused: 0,
    refusedP50: NaN,
    refusedP99: NaN,
    answered: rps * 10,
    maxWaitMs: 5,
    maxSendLagMs: 0,
    maxWriteLagMs: 0,
    overOneSecond: 0,
    slowest: [],
  }) as Measured['open'];

function measured(on: [number, number], off: [number, number]): Measured {
  return {
    closed: load(on[0]),
    closedAgain: load(on[1]),
    closedLogOff: load(off[0]),
    closedLogOffAgain: load(off[1]),
    closed2Api: load(on[0]),
    open: open(on[0] / 2),
    overload: open(on[0]),
    recoveryMs: 100,
    base: load(2 * on[0]),
    baseOpen: open(on[0] / 2),
    baseOverload: open(on[0]),
    openRate: on[0] / 2,
    overloadRate: 2 * on[0],
  };
}

describe('the delivery figures', () => {
  it("the decision log's cost compares the mean of the two runs without it with the mean of the two with it", () => {
    const f = figures(measured([10_000, 11_000], [12_000, 12_600])).decisionLogCost;
    expect(f.value).toBeCloseTo(24_600 / 21_000 - 1, 10);
    // the noise is the larger spread within a pair: 1,000 of 10,500 (on) against 600 of 12,300 (off)
    expect(f.baseline).toBeCloseTo(1_000 / 10_500, 10);
    expect(figures(measured([10_000, 10_100], [11_000, 13_000])).decisionLogCost.baseline).toBeCloseTo(2_000 / 12_000, 10);
  });

  it('a log that costs nothing measures about zero, and requests/s is the first run with it on', () => {
    const all = figures(measured([10_000, 10_000], [10_000, 10_000]));
    expect(all.decisionLogCost.value).toBe(0);
    expect(all.requestsPerSec.value).toBe(10_000);
    expect(all.requestsPerSec.baseline).toBe(20_000);
  });
});
