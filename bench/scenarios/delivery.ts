import { utcDay } from '../../shared/aggregation/index.js';
import { startBaselineServer } from '../lib/baseline-server.js';
import { seedProfiles } from '../lib/bench-redis.js';
import { createCatalogue, profileOf, surfaceName } from '../lib/delivery-catalogue.js';
import { userIdOf } from '../lib/event-generator.js';
import { checkLoad, type LoadOptions, type LoadResult } from '../lib/load-runner.js';
import { runOpenLoop, type OpenLoopResult } from '../lib/open-loop.js';
import { listenOverflows, overflowsClause } from '../lib/listen-overflows.js';
import { generatorWarning, measureIdleLevel, overloadAndRecover, overloadNote, type OverloadOptions } from '../lib/overload.js';
import type { GroupPeaks } from '../lib/process-sampler.js';
import { figure, rssFigures, type Figure, type Scenario, type ScenarioContext, type ScenarioResult, type Size } from '../lib/scenario.js';
import { ScenarioRun } from '../lib/scenario-run.js';
import type { ServiceProcess } from '../lib/service-process.js';
import { PROJECT_ID } from './log-events.js';

// what bench/request-cost.ts and others take from here
export { createCatalogue, profileOf } from '../lib/delivery-catalogue.js';

export interface DeliveryParams {
  users: number;
  treatments: number;
  surfaces: number;
  surfacesPerRequest: number;
  connections: number;
  durationSec: number;
  warmupSec: number;
  /** Connections of the open-loop run (enough that none waits for a free one at the target rate). */
  openLoopConnections: number;
  /** Length of the overload (open loop at twice the service's capacity). */
  overloadSec: number;
  /**
   * Connections of the overload run, opened before it starts: more than the service's in-flight
   * limit (1000), so requests queue in the service (which must refuse them), never in the load
   * generator waiting for a free connection.
   */
  overloadConnections: number;
  /** Arrivals per second of the light probe load (idle level, recovery). */
  probeRate: number;
  /** Probes measuring the idle level, in seconds of probing. */
  idleSec: number;
  /** Consecutive probes back at the idle level that make "recovered". */
  recoveryWindow: number;
  /** How long the probes look for the recovery. */
  maxRecoverySec: number;
}

export const DELIVERY_SIZES: Record<Size, DeliveryParams> = {
  tiny: {
    users: 100,
    treatments: 50,
    surfaces: 5,
    surfacesPerRequest: 2,
    connections: 2,
    durationSec: 1,
    warmupSec: 0.3,
    openLoopConnections: 4,
    overloadSec: 1,
    overloadConnections: 50,
    probeRate: 50,
    idleSec: 0.5,
    recoveryWindow: 5,
    maxRecoverySec: 3,
  },
  full: {
    users: 100_000,
    treatments: 50,
    surfaces: 5,
    surfacesPerRequest: 2,
    connections: 50,
    durationSec: 10,
    warmupSec: 3,
    openLoopConnections: 100,
    overloadSec: 10,
    overloadConnections: 1200,
    probeRate: 100,
    idleSec: 2,
    recoveryWindow: 20,
    maxRecoverySec: 15,
  },
};

/** The issue's targets for delivery. */
const TARGETS = {
  rpsRatio: { on: 'ratio', bound: 'min', limit: 0.5 },
  p99Ratio: { on: 'ratio', bound: 'max', limit: 3 },
  openLoopP99Ms: { on: 'value', bound: 'max', limit: 10 },
  overloadMaxWaitMs: { on: 'value', bound: 'max', limit: 1000 },
  overloadP99OkMs: { on: 'value', bound: 'max', limit: 50 },
  recoveryMs: { on: 'value', bound: 'max', limit: 2000 },
  decisionLogCost: { on: 'value', bound: 'max', limit: 0.1 },
} as const;

/** GetTreatments of a random user for a random pair of neighbouring surfaces, up to 3 treatments each. */
export function getTreatmentsBodies(p: DeliveryParams): () => string {
  return () => {
    const user = userIdOf(Math.floor(Math.random() * p.users));
    const first = Math.floor(Math.random() * p.surfaces);
    const surfaces = Array.from({ length: p.surfacesPerRequest }, (_, j) => `{"surface":"${surfaceName((first + j) % p.surfaces)}","maximumTreatmentCount":3}`);
    return `{"projectId":"${PROJECT_ID}","userId":"${user}","surfaces":[${surfaces.join(',')}],"languageCode":"en"}`;
  };
}

async function sampleResponses(svc: ServiceProcess, key: string, body: () => string, n: number): Promise<number> {
  let returned = 0;
  for (let i = 0; i < n; i++)
    returned += ((await svc.call<{ userTreatments?: unknown[] }>('GetTreatments', key, JSON.parse(body()))).userTreatments ?? []).length;
  return returned / n;
}

/** The larger peak of each kind over several runs of the service. */
function maxPeaks(all: readonly GroupPeaks[]): { apiMb: number; backgroundMb: number; totalMb: number } {
  const max = (xs: number[]) => Math.max(...xs.filter(Number.isFinite));
  return { apiMb: max(all.map((p) => p.apiMb)), backgroundMb: max(all.map((p) => p.backgroundMb)), totalMb: max(all.map((p) => p.totalMb)) };
}

/** The measurements of one scenario run, named as the figures use them. */
interface Measured {
  /** Closed loop, 1 API process, the decision log on (first run and a second run after the run with it off). */
  closed: LoadResult;
  closedAgain: LoadResult;
  closedLogOff: LoadResult;
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

function figures(m: Measured): Record<string, Figure> {
  const baselineLabel = 'bare Fastify route answering one HGETALL of the profile';
  const openLabel = `the same baseline at the same open-loop rate (${m.openRate.toLocaleString('en')} req/s)`;
  const overLabel = `the same baseline at the same rate (${m.overloadRate.toLocaleString('en')} req/s), which is below its own capacity`;
  const on = (m.closed.rps + m.closedAgain.rps) / 2;
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
      value: m.closedLogOff.rps / on - 1,
      baseline: Math.max(1e-6, Math.abs(m.closedAgain.rps - m.closed.rps) / on),
      baselineLabel: 'the difference between the two runs with the log on (run-to-run noise)',
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
export async function runDelivery(ctx: ScenarioContext): Promise<ScenarioResult> {
  const p = DELIVERY_SIZES[ctx.size];
  const run = ScenarioRun.open(ctx, 'delivery');
  Object.assign(run.params, p);
  try {
    const s1 = await run.startService({ label: 'api1' });
    const keys = await s1.createProject(PROJECT_ID);
    run.progress(`catalogue: ${p.surfaces} surfaces, ${p.treatments} LIVE treatments with 3 rules each`);
    const catalogue = await createCatalogue(s1, keys, p);
    const today = utcDay(Date.now());
    await seedProfiles(
      run.redis,
      run.keys,
      PROJECT_ID,
      p.users,
      userIdOf,
      (i) => profileOf(i, catalogue, today),
      (done) => {
        if (done % 20_000 === 0 || done === p.users) run.progress(`seeded ${done.toLocaleString('en')} / ${p.users.toLocaleString('en')} profiles`);
      },
    );
    const body = getTreatmentsBodies(p);
    run.notes.push(
      `treatments returned per response (sample of 50): ${(await sampleResponses(s1, keys.delivery, body, 50)).toFixed(2)} of at most ${3 * p.surfacesPerRequest}`,
    );

    const path = '/v1/GetTreatments';
    const closedLoop = (baseUrl: string, headers: Record<string, string> = {}): LoadOptions => ({
      baseUrl,
      path,
      connections: p.connections,
      durationSec: p.durationSec,
      headers,
      body,
    });
    const svcHeaders = { 'x-api-key': keys.delivery };
    const openLoop = async (label: string, baseUrl: string, rate: number, cpu: () => number, serverLabel: string, headers: Record<string, string> = {}) => {
      const o = { baseUrl, path, rate, durationSec: p.durationSec, connections: p.openLoopConnections, headers, body, preconnect: true };
      // a warm-up at the same rate: the generator's connections and code paths, not measured
      run.progress(`${label}: ${p.warmupSec} s warm-up + ${p.durationSec} s`);
      await runOpenLoop({ ...o, durationSec: p.warmupSec });
      const m = await run.withCpu(cpu, () =>
        runOpenLoop({ ...o, onTick: (sec, sent) => run.progress(`${label}: ${sec.toFixed(0)} s, ${sent.toLocaleString('en')} sent`) }),
      );
      checkLoad(label, m.value, 0.01, { refusalsAllowed: true });
      run.loadNote(label, m.value, m, serverLabel);
      if (m.value.refused > 0) run.notes.push(`${label}: ${m.value.refused.toLocaleString('en')} answered 503 (p99 ${m.value.refusedP99.toFixed(2)} ms)`);
      if (generatorWarning(m.value))
        run.notes.push(`${label}: the generator sent up to ${m.value.maxSendLagMs.toFixed(1)} ms late${generatorWarning(m.value)}`);
      return m.value;
    };

    // 1. the service's capacity, then open loop at half of it, the idle level, and the overload
    const closed = await run.measureLoad(
      'service, 1 API process (closed loop)',
      () => s1.sampler.cpuSeconds(),
      closedLoop(s1.baseUrl, svcHeaders),
      p.warmupSec,
    );
    const openRate = Math.max(1, Math.round(closed.rps / 2));
    const overloadRate = Math.max(2, Math.round(closed.rps * 2));
    Object.assign(run.params, { openLoopRate: openRate, overloadRate });
    const open = await openLoop(
      `service, 1 API process (open loop, ${openRate} req/s)`,
      s1.baseUrl,
      openRate,
      () => s1.sampler.cpuSeconds(),
      'service',
      svcHeaders,
    );
    const ov: OverloadOptions = {
      target: { baseUrl: s1.baseUrl, path, headers: svcHeaders, body, preconnect: true },
      rate: overloadRate,
      durationSec: p.overloadSec,
      connections: p.overloadConnections,
      probeRate: p.probeRate,
      window: p.recoveryWindow,
      maxRecoverySec: p.maxRecoverySec,
      progress: (m) => run.progress(m),
    };
    run.progress(`idle level: ${p.probeRate} req/s for ${p.idleSec} s`);
    const idle = await measureIdleLevel(ov, p.idleSec);
    run.notes.push(
      `idle level (${p.probeRate} req/s): p50 ${idle.p50.toFixed(2)} ms, p99 ${idle.p99.toFixed(2)} ms; a probe is back to it within ${idle.thresholdMs.toFixed(2)} ms, recovered after ${p.recoveryWindow} such probes in a row`,
    );
    run.progress(
      `overload: ${overloadRate} req/s (twice ${Math.round(closed.rps)}) for ${p.overloadSec} s over ${p.overloadConnections} connections, then probes until recovered`,
    );
    const overflowsBefore = listenOverflows();
    const over = await run.withCpu(
      () => s1.sampler.cpuSeconds(),
      () => overloadAndRecover(ov, idle),
    );
    const outcome = over.value;
    if (outcome.overload.answered === 0) throw new Error(`overload: nothing answered (${outcome.overload.errors} errors)`);
    const overloadCpu = `CPU: service ${over.serviceCores.toFixed(2)} cores, load generator ${over.loadGeneratorCores.toFixed(2)} cores`;
    run.notes.push(`${overloadNote(`overload (${overloadRate} req/s)`, outcome.overload)}; ${overloadCpu}${overflowsClause(overflowsBefore)}`);
    run.notes.push(
      outcome.recovered
        ? `recovered ${outcome.recoveryMs.toFixed(0)} ms after the overload stopped (${outcome.relapses} probes above the idle level after that, of ${outcome.probes.sent})`
        : `not back to the idle level within ${p.maxRecoverySec} s after the overload stopped (the figure is that bound)`,
    );
    const peaks1 = await run.stopService(s1, 'service (1 API process: closed loop, open loop, overload)');

    // 2. the decision log's cost: off, then on again (its difference from the first run is the noise)
    const closedFor = async (label: string, opts: { apiProcesses?: number; env?: Record<string, string>; label: string }) => {
      const svc = await run.startService(opts);
      const r = await run.measureLoad(label, () => svc.sampler.cpuSeconds(), closedLoop(svc.baseUrl, svcHeaders), p.warmupSec);
      return { r, peaks: await run.stopService(svc, label), ready: svc.readyRss };
    };
    const off = await closedFor('service, DECISION_LOG=off (closed loop)', { env: { DECISION_LOG: 'off' }, label: 'log-off' });
    const again = await closedFor('service, decision log on again (closed loop)', { label: 'log-on-again' });
    const two = await closedFor('service, 2 API processes (closed loop)', { apiProcesses: 2, label: 'api2' });

    // 3. the baseline at the same loads (last: the service is stopped, nothing takes its CPU)
    run.progress('baseline: bare Fastify + one Redis HGETALL');
    const b = await startBaselineServer('redis-hash', ctx.redisUrl, run.prefix);
    const baseCpu = () => b.sampler.cpuSeconds();
    const base = await run.measureLoad('baseline (closed loop)', baseCpu, closedLoop(b.baseUrl), p.warmupSec, {
      serverLabel: 'baseline server',
      refusalsAllowed: false,
    });
    const baseOpen = await openLoop(`baseline (open loop, ${openRate} req/s)`, b.baseUrl, openRate, baseCpu, 'baseline server');
    run.progress(`baseline at the overload rate: ${overloadRate} req/s for ${p.overloadSec} s`);
    const baseOverflows = listenOverflows();
    const baseOverload = await runOpenLoop({
      baseUrl: b.baseUrl,
      path,
      body,
      rate: overloadRate,
      durationSec: p.overloadSec,
      connections: p.overloadConnections,
      preconnect: true,
      onTick: (sec) => run.progress(`baseline at the overload rate: ${sec.toFixed(0)} s`),
    });
    run.notes.push(overloadNote(`baseline at the overload rate (${overloadRate} req/s)`, baseOverload) + overflowsClause(baseOverflows));
    await b.stop();

    const cost = off.r.rps / ((closed.rps + again.r.rps) / 2) - 1;
    run.notes.push(
      `decision log: ${Math.round(closed.rps)} and ${Math.round(again.r.rps)} req/s with it on, ${Math.round(off.r.rps)} with it off: it costs ${(cost * 100).toFixed(1)} % of the throughput`,
    );
    return run.result({
      ...figures({
        closed,
        closedAgain: again.r,
        closedLogOff: off.r,
        closed2Api: two.r,
        open,
        overload: outcome.overload,
        recoveryMs: outcome.recoveryMs,
        base,
        baseOpen,
        baseOverload,
        openRate,
        overloadRate,
      }),
      // the 1-API-process runs: the first (with the overload), log off, log on again
      ...rssFigures(maxPeaks([peaks1, off.peaks, again.peaks]), s1.readyRss, { api: true }),
      ...rssFigures(two.peaks, two.ready, { api: true }, { key: '2Api', label: 'API_PROCESSES=2' }),
    });
  } finally {
    await run.close();
  }
}

export const deliveryScenario: Scenario = {
  name: 'delivery',
  summary:
    'GetTreatments for 2 surfaces, 50 LIVE treatments with 3 rules, seeded profiles: capacity, open loop at half of it, overload at twice it, decision log on/off; vs a bare Fastify route with one HGETALL',
  run: runDelivery,
};
