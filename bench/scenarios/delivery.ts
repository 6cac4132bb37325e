import { utcDay } from '../../shared/aggregation/index.js';
import { startBaselineServer } from '../lib/baseline-server.js';
import { seedProfiles } from '../lib/bench-redis.js';
import { createCatalogue, profileOf, surfaceName } from '../lib/delivery-catalogue.js';
import { userIdOf } from '../lib/event-generator.js';
import { checkLoad, type LoadOptions, type LoadResult } from '../lib/load-runner.js';
import { withRunQueue } from '../lib/run-queue.js';
import { runOpenLoop } from '../lib/open-loop.js';
import { listenOverflows, overflowsClause } from '../lib/listen-overflows.js';
import { generatorWarning, measureIdleLevel, overloadAndRecover, overloadNote, type OverloadOptions } from '../lib/overload.js';
import { rssFigures, type Scenario, type ScenarioContext, type ScenarioResult, type Size } from '../lib/scenario.js';
import { ScenarioRun } from '../lib/scenario-run.js';
import { figures, maxPeaks, medianRun, roundsNote, type Round } from '../lib/delivery-figures.js';
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
  /**
   * Capacity rounds: each round runs the closed loop against the service with the decision log
   * on, the one with it off and the baseline, one after the other; the figures take the median.
   */
  capacityRounds: number;
  /** The warm-up of every round but the first (the processes are warm; the connections are new). */
  roundWarmupSec: number;
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
    capacityRounds: 2,
    roundWarmupSec: 0.2,
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
    capacityRounds: 5,
    roundWarmupSec: 1,
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
/** GetTreatments of a random user for a random pair of neighbouring surfaces, up to 3 treatments each. */
export function getTreatmentsBodies(p: DeliveryParams): () => string {
  return () => {
    const user = userIdOf(Math.floor(Math.random() * p.users));
    const first = Math.floor(Math.random() * p.surfaces);
    const surfaces = Array.from({ length: p.surfacesPerRequest }, (_, j) => `{"surface":"${surfaceName((first + j) % p.surfaces)}","maximumTreatmentCount":3}`);
    return `{"projectId":"${PROJECT_ID}","userId":"${user}","surfaces":[${surfaces.join(',')}],"languageCode":"en"}`;
  };
}

/**
 * A started service made ready for GetTreatments: its project and keys, the catalogue, `p.users`
 * seeded profiles, and the request bodies to send (`onSeeded` hears the seeding's progress).
 */
export async function prepareDelivery(
  run: ScenarioRun,
  svc: ServiceProcess,
  p: DeliveryParams,
  onSeeded: (done: number) => void = () => undefined,
  redisKeys = run.keys,
) {
  const keys = await svc.createProject(PROJECT_ID);
  run.progress(`catalogue: ${p.surfaces} surfaces, ${p.treatments} LIVE treatments with 3 rules each`);
  const catalogue = await createCatalogue(svc, keys, p);
  const today = utcDay(Date.now());
  await seedProfiles(run.redis, redisKeys, PROJECT_ID, p.users, userIdOf, (i) => profileOf(i, catalogue, today), onSeeded);
  return { keys, catalogue, body: getTreatmentsBodies(p) };
}

async function sampleResponses(svc: ServiceProcess, key: string, body: () => string, n: number): Promise<number> {
  let returned = 0;
  for (let i = 0; i < n; i++)
    returned += ((await svc.call<{ userTreatments?: unknown[] }>('GetTreatments', key, JSON.parse(body()))).userTreatments ?? []).length;
  return returned / n;
}

/** The larger peak of each kind over several runs of the service. */
export async function runDelivery(ctx: ScenarioContext): Promise<ScenarioResult> {
  const p = DELIVERY_SIZES[ctx.size];
  const run = ScenarioRun.open(ctx, 'delivery');
  Object.assign(run.params, p);
  let baseline: Awaited<ReturnType<typeof startBaselineServer>> | undefined;
  try {
    const seeded = (done: number) => {
      if (done % 20_000 === 0 || done === p.users) run.progress(`seeded ${done.toLocaleString('en')} / ${p.users.toLocaleString('en')} profiles`);
    };
    const s1 = await run.startService({ label: 'api1' });
    const { keys, body } = await prepareDelivery(run, s1, p, seeded);
    run.notes.push(
      `treatments returned per response (sample of 50): ${(await sampleResponses(s1, keys.delivery, body, 50)).toFixed(2)} of at most ${3 * p.surfacesPerRequest}`,
    );
    // The same service with the decision log off, alive beside it for the capacity rounds: its
    // own prefix and data directory, the same project, catalogue and profiles.
    const offPlace = run.place('log-off');
    const sOff = await run.startService({ env: { DECISION_LOG: 'off' }, label: 'log-off', place: offPlace });
    const offKeys = (await prepareDelivery(run, sOff, p, seeded, offPlace.keys)).keys;
    // the baseline reads the first service's profiles; idle until its turn, and alive to the end
    run.progress('baseline: bare Fastify + one Redis HGETALL');
    const b = (baseline = await startBaselineServer('redis-hash', ctx.redisUrl, run.prefix));

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
    const openLoop = async (
      label: string,
      baseUrl: string,
      rate: number,
      cpu: () => number,
      serverLabel: string,
      mainPid: number,
      headers: Record<string, string> = {},
    ) => {
      const o = { baseUrl, path, rate, durationSec: p.durationSec, connections: p.openLoopConnections, headers, body, preconnect: true };
      // a warm-up at the same rate: the generator's connections and code paths, not measured
      run.progress(`${label}: ${p.warmupSec} s warm-up + ${p.durationSec} s`);
      await runOpenLoop({ ...o, durationSec: p.warmupSec });
      const q = await withRunQueue(mainPid, () =>
        run.withCpu(cpu, () => runOpenLoop({ ...o, onTick: (sec, sent) => run.progress(`${label}: ${sec.toFixed(0)} s, ${sent.toLocaleString('en')} sent`) })),
      );
      const m = q.value;
      run.notes.push(
        `${label}: the ${serverLabel}'s main thread ran ${q.runSec.toFixed(2)} s (${((q.runSec * 1e6) / Math.max(1, m.value.sent)).toFixed(0)} µs per request) and waited ${q.waitSec.toFixed(2)} s for a CPU`,
      );
      checkLoad(label, m.value, 0.01, { refusalsAllowed: true });
      run.loadNote(label, m.value, m, serverLabel);
      if (m.value.refused > 0) run.notes.push(`${label}: ${m.value.refused.toLocaleString('en')} answered 503 (p99 ${m.value.refusedP99.toFixed(2)} ms)`);
      if (generatorWarning(m.value))
        run.notes.push(`${label}: the generator sent up to ${m.value.maxSendLagMs.toFixed(1)} ms late${generatorWarning(m.value)}`);
      return m.value;
    };

    // 1. the capacity rounds: in each, the closed loop against the service with the decision log
    // on, the one with it off and the baseline, one after the other, so that a drift of the
    // machine (these VMs' throughput moves by tens of per cent within minutes) weighs on all three
    // alike; the figures take the median of each.
    const baseCpu = () => b.sampler.cpuSeconds();
    const closedRounds: Round[] = [];
    const logOffRounds: Round[] = [];
    const baseRounds: LoadResult[] = [];
    for (let round = 1; round <= p.capacityRounds; round++) {
      const warmup = round === 1 ? p.warmupSec : p.roundWarmupSec;
      const of = `round ${round} of ${p.capacityRounds}`;
      closedRounds.push(
        await run.measureLoad(`service, 1 API process (closed loop, ${of})`, () => s1.sampler.cpuSeconds(), closedLoop(s1.baseUrl, svcHeaders), warmup, {
          apiCpu: () => s1.sampler.kindCpuSeconds('api'),
        }),
      );
      logOffRounds.push(
        await run.measureLoad(
          `service, DECISION_LOG=off (closed loop, ${of})`,
          () => sOff.sampler.cpuSeconds(),
          closedLoop(sOff.baseUrl, { 'x-api-key': offKeys.delivery }),
          warmup,
          { apiCpu: () => sOff.sampler.kindCpuSeconds('api') },
        ),
      );
      baseRounds.push(
        await run.measureLoad(`baseline (closed loop, ${of})`, baseCpu, closedLoop(b.baseUrl), warmup, {
          serverLabel: 'baseline server',
          refusalsAllowed: false,
        }),
      );
    }
    run.notes.push(roundsNote({ closedRounds, logOffRounds, baseRounds }));
    const logOffPeaks = await run.stopService(sOff, 'service, DECISION_LOG=off (the capacity rounds)');
    const closed = medianRun(closedRounds);

    // 2. open loop at half the service's capacity, the idle level, the overload and the recovery
    const openRate = Math.max(1, Math.round(closed.rps / 2));
    const overloadRate = Math.max(2, Math.round(closed.rps * 2));
    Object.assign(run.params, { openLoopRate: openRate, overloadRate });
    const open = await openLoop(
      `service, 1 API process (open loop, ${openRate} req/s)`,
      s1.baseUrl,
      openRate,
      () => s1.sampler.cpuSeconds(),
      'service',
      s1.sampler.pids('api')[0],
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

    // 3. 2 API processes, on a fresh start
    const svc2 = await run.startService({ apiProcesses: 2, label: 'api2' });
    const closed2Api = await run.measureLoad(
      'service, 2 API processes (closed loop)',
      () => svc2.sampler.cpuSeconds(),
      closedLoop(svc2.baseUrl, svcHeaders),
      p.warmupSec,
    );
    const peaks2 = await run.stopService(svc2, 'service, 2 API processes');

    // 4. the baseline at the same open-loop rates (last: the service is stopped, nothing takes its CPU)
    const baseOpen = await openLoop(`baseline (open loop, ${openRate} req/s)`, b.baseUrl, openRate, baseCpu, 'baseline server', b.sampler.pid);
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

    return run.result({
      ...figures({
        closedRounds,
        logOffRounds,
        baseRounds,
        closed2Api,
        open,
        overload: outcome.overload,
        recoveryMs: outcome.recoveryMs,
        baseOpen,
        baseOverload,
        openRate,
        overloadRate,
      }),
      // the 1-API-process services: the first (the rounds, the open loop, the overload) and the one with the log off
      ...rssFigures(maxPeaks([peaks1, logOffPeaks]), s1.readyRss, { api: true }),
      ...rssFigures(peaks2, svc2.readyRss, { api: true }, { key: '2Api', label: 'API_PROCESSES=2' }),
    });
  } finally {
    await baseline?.stop();
    await run.close();
  }
}

export const deliveryScenario: Scenario = {
  name: 'delivery',
  summary:
    'GetTreatments for 2 surfaces, 50 LIVE treatments with 3 rules, seeded profiles: capacity, open loop at half of it, overload at twice it, decision log on/off; vs a bare Fastify route with one HGETALL',
  run: runDelivery,
};
