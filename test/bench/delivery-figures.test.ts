import { describe, expect, it } from 'vitest';
import { cpuPerRequest, figures, medianRun, roundsNote, spread, type Measured } from '../../bench/lib/delivery-figures.js';

/** A closed or open loop's result with the figures these tests read; the rest is not looked at. */
function load(rps: number, extra: Record<string, number> = {}): Measured['closed2Api'] {
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
    reconnects: 0,
  }) as Measured['open'];

/** Rounds of the service with the log on, with it off, and of the baseline (requests/s each). */
function measured(on: number[], off: number[], base: number[] = on.map((r) => 2 * r)): Measured {
  return {
    closedRounds: on.map((r) => load(r)),
    logOffRounds: off.map((r) => load(r)),
    baseRounds: base.map((r) => load(r)),
    closed2Api: load(on[0]),
    open: open(on[0] / 2),
    overload: open(on[0]),
    recoveryMs: 100,
    baseOpen: open(on[0] / 2),
    baseOverload: open(on[0]),
    openRate: on[0] / 2,
    overloadRate: 2 * on[0],
  };
}

describe('the delivery figures', () => {
  it("the decision log's cost is the median of the rounds' costs, each round comparing the runs with it off and on", () => {
    // costs of the rounds: 20 %, 5 %, 14.5 %: the median is 14.5 %, not the cost of the medians (12,600 / 11,000 − 1)
    const f = figures(measured([10_000, 12_000, 11_000], [12_000, 12_600, 12_595])).decisionLogCost;
    expect(f.value).toBeCloseTo(12_595 / 11_000 - 1, 10);
    // the noise is the larger spread of a kind: on 2,000 of 11,000 against off 600 of 12,595
    expect(f.baseline).toBeCloseTo(2_000 / 11_000, 10);
    expect(figures(measured([10_000, 10_100, 10_050], [11_000, 13_000, 12_000])).decisionLogCost.baseline).toBeCloseTo(2_000 / 12_000, 10);
  });

  it('requests/s and latency at saturation are those of the median rounds, of the service and of the baseline each', () => {
    const m = measured([6_000, 5_000, 7_000], [7_000, 7_000, 7_000], [15_000, 17_000, 12_000]);
    m.closedRounds[0].p99 = 20;
    m.baseRounds[0].p99 = 8;
    const all = figures(m);
    expect(all.requestsPerSec.value).toBe(6_000);
    expect(all.requestsPerSec.baseline).toBe(15_000);
    expect(all.requestsPerSec.ratio).toBeCloseTo(0.4, 10);
    expect(all.p99Ms.value).toBe(20);
    expect(all.p99Ms.baseline).toBe(8);
    // the share above the capacity is the median round's
    expect(all.overloadRefusedShare.baseline).toBeCloseTo(1 - 6_000 / 12_000, 10);
  });

  it('a log that costs nothing measures zero', () => {
    expect(figures(measured([10_000, 10_000], [10_000, 10_000])).decisionLogCost.value).toBe(0);
  });

  it('the median run of an even number is the lower of the middle two; the spread is relative to the median', () => {
    expect(medianRun([load(3), load(1), load(4), load(2)]).rps).toBe(2);
    expect(medianRun([load(3), load(1), load(2)]).rps).toBe(2);
    expect(() => medianRun([])).toThrow();
    expect(spread([load(90), load(100), load(120)])).toBeCloseTo(0.3, 10);
    expect(spread([load(100), load(120)])).toBeCloseTo(20 / 100, 10);
  });

  it('the rounds note gives every round with its ratio and cost', () => {
    const note = roundsNote(measured([5_000, 6_000], [6_000, 6_000], [10_000, 15_000]));
    expect(note).toContain('round 1: log on 5,000, off 6,000, baseline 10,000 req/s (ratio 0.50, log cost 20.0 %)');
    expect(note).toContain('round 2: log on 6,000, off 6,000, baseline 15,000 req/s (ratio 0.40, log cost 0.0 %)');
  });

  it("the decision log's CPU per request is the median round's, of the API process and of every process with Redis, on against off", () => {
    const m = measured([10_000, 10_000, 10_000], [11_000, 11_000, 11_000]);
    // API cores / requests/s: on 80, 90, 100 µs a request; off 75, 78, 90; all (service + Redis): on 120, 130, 125; off 95, 100, 105
    const cpu = (api: number, service: number, redis: number) => ({ apiCores: api, serviceCores: service, redisCores: redis });
    m.closedRounds.forEach((r, i) => (r.cpu = [cpu(0.8, 1.1, 0.1), cpu(0.9, 1.2, 0.1), cpu(1.0, 1.15, 0.1)][i]));
    m.logOffRounds.forEach((r, i) => (r.cpu = [cpu(0.825, 0.99, 0.055), cpu(0.858, 1.045, 0.055), cpu(0.99, 1.1, 0.055)][i]));
    const f = figures(m);
    expect(f.decisionLogApiCpuUs.value).toBeCloseTo(90, 6);
    expect(f.decisionLogApiCpuUs.baseline).toBeCloseTo(78, 6);
    expect(f.decisionLogApiCpuUs.ratio).toBeCloseTo(90 / 78, 6);
    expect(f.decisionLogAllCpuUs.value).toBeCloseTo(125, 6);
    expect(f.decisionLogAllCpuUs.baseline).toBeCloseTo(100, 6);
    expect(f.decisionLogAllCpuUs.unit).toBe('µs');
    expect(roundsNote(m)).toContain('CPU per request: API process 80.0 on, 75.0 off; with the other processes and Redis 120.0 on, 95.0 off µs');
  });

  it('without the CPU of every round there are no CPU figures, rather than figures of some rounds', () => {
    const m = measured([10_000, 10_000], [11_000, 11_000]);
    expect(figures(m).decisionLogApiCpuUs).toBeUndefined();
    m.closedRounds.forEach((r) => (r.cpu = { apiCores: 0.9, serviceCores: 1.2, redisCores: 0.1 }));
    m.logOffRounds[0].cpu = { apiCores: 0.9, serviceCores: 1, redisCores: 0.1 };
    expect(figures(m).decisionLogAllCpuUs).toBeUndefined();
    // the note gives it for the round that has both
    expect(roundsNote(m)).toContain('(ratio 0.50, log cost 10.0 %; CPU per request: API process 90.0 on, 81.8 off');
    expect(roundsNote(m)).toContain('round 2: log on 10,000, off 11,000, baseline 20,000 req/s (ratio 0.50, log cost 10.0 %)');
    // the API's cores not read (NaN) count as not read
    expect(cpuPerRequest({ ...m.closedRounds[0], cpu: { apiCores: NaN, serviceCores: 1, redisCores: 0 } }).api).toBeNaN();
  });
});
