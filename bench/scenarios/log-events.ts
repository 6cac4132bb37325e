import { randomBytes } from 'node:crypto';
import { BASELINE_QUEUE, startBaselineServer } from '../lib/baseline-server.js';
import { deletePrefix, eventsQueue, eventsQueueState, waitForDrain } from '../lib/bench-redis.js';
import { medianRun } from '../lib/delivery-figures.js';
import { eventRequestBody, type EventStream } from '../lib/event-generator.js';
import { type LoadOptions, type LoadResult } from '../lib/load-runner.js';
import { bullPrefix } from '../../shared/platform/queues.js';
import { figure, rssFigures, type Scenario, type ScenarioContext, type ScenarioResult, type Size } from '../lib/scenario.js';
import { ScenarioRun } from '../lib/scenario-run.js';

export interface LogEventsParams {
  connections: number;
  /** Rounds of the closed loop, each against the service and then against the baseline. */
  rounds: number;
  /** Each round's measured closed loop (seconds), the service's and the baseline's. */
  durationSec: number;
  /** The first round's warm-up of each server. */
  warmupSec: number;
  /**
   * The warm-up of every later round: the processes are warm, but each round starts with the
   * service's queue drained, and its background process, idle-class while it keeps up
   * (WORKERS_SCHED_IDLE), returns to the normal class only once starved for a second; so that every
   * round measures what a longer run does, with the background storing at its loaded class, this
   * is longer than that second.
   */
  roundWarmupSec: number;
  /** Bound on waiting for the service's events queue to drain before a round. */
  maxDrainSec: number;
  users: number;
  eventsPerRequest: number;
}

export const LOG_EVENTS_SIZES: Record<Size, LogEventsParams> = {
  tiny: { connections: 2, rounds: 2, durationSec: 0.5, warmupSec: 0.3, roundWarmupSec: 0.1, maxDrainSec: 30, users: 100, eventsPerRequest: 10 },
  full: { connections: 50, rounds: 5, durationSec: 3, warmupSec: 3, roundWarmupSec: 2, maxDrainSec: 120, users: 10_000, eventsPerRequest: 10 },
};

export const PROJECT_ID = 'bench';

/** A body factory over one event stream; every call is a new request (fresh insertIds). */
export function logEventsBodies(p: Pick<LogEventsParams, 'users' | 'eventsPerRequest'>): () => string {
  const stream: EventStream = { runId: randomBytes(4).toString('hex'), users: p.users, eventsPerRequest: p.eventsPerRequest };
  let seq = 0;
  return () => eventRequestBody(PROJECT_ID, stream, seq++, Date.now());
}

/**
 * LogEvents with 10 events per request as fast as the service accepts them (its background
 * process stores them at the same time), against a bare Fastify route that adds one BullMQ job
 * per request, in rounds: each round measures the service, then the baseline, so that the
 * machine's drift (tens of per cent within minutes on these VMs) weighs on both alike, and the
 * figures take the median round of each. Every round starts with the service's events queue
 * drained: the service's rounds all start from the same state, and the baseline's never share the
 * machine with the service's storing of an earlier round.
 */
export async function runLogEvents(ctx: ScenarioContext): Promise<ScenarioResult> {
  const p = LOG_EVENTS_SIZES[ctx.size];
  const run = ScenarioRun.open(ctx, 'log-events');
  Object.assign(run.params, p);
  let base: Awaited<ReturnType<typeof startBaselineServer>> | undefined;
  try {
    const svc = await run.startService();
    const keys = await svc.createProject(PROJECT_ID);
    const queue = eventsQueue(run.redis, run.prefix);
    const baseServer = (base = await startBaselineServer('bullmq-add', ctx.redisUrl, run.prefix));
    const load = (baseUrl: string, body: () => string, headers: Record<string, string> = {}): LoadOptions => ({
      baseUrl,
      path: '/v1/LogEvents',
      connections: p.connections,
      durationSec: p.durationSec,
      headers,
      body,
    });
    const svcLoad = load(svc.baseUrl, logEventsBodies(p), { 'x-api-key': keys.logEvents });
    const baseLoad = load(baseServer.baseUrl, logEventsBodies(p));
    /**
     * After the service's round: seconds until its events queue was empty (bounded, noted when it
     * was not). The baseline adds nothing to it, so the service's next round starts drained too.
     */
    const drain = async (of: string): Promise<number> => {
      const t0 = performance.now();
      const left = await waitForDrain(queue, p.maxDrainSec, (m) => run.progress(`after the service's ${of}: ${m}`));
      if (left > 0) run.notes.push(`after the service's ${of}: ${left.toLocaleString('en')} jobs still pending after ${p.maxDrainSec} s`);
      return (performance.now() - t0) / 1000;
    };
    const svcRounds: LoadResult[] = [];
    const baseRounds: LoadResult[] = [];
    const backlogs: string[] = [];
    for (let round = 1; round <= p.rounds; round++) {
      const of = `round ${round} of ${p.rounds}`;
      const warmup = round === 1 ? p.warmupSec : p.roundWarmupSec;
      // the warm-up's requests are stored during the round, as a busy service's would be
      svcRounds.push(await run.measureLoad(`service (${of})`, () => svc.sampler.cpuSeconds(), svcLoad, warmup));
      const pending = (await eventsQueueState(queue)).pending;
      backlogs.push(`${pending.toLocaleString('en')} jobs, stored in ${(await drain(of)).toFixed(1)} s`);
      baseRounds.push(
        await run.measureLoad(`baseline (${of})`, () => baseServer.sampler.cpuSeconds(), baseLoad, warmup, {
          serverLabel: 'baseline server',
          refusalsAllowed: false,
        }),
      );
      // nobody consumes the baseline's jobs: dropped between rounds, so Redis holds one round's
      await deletePrefix(run.redis, `${bullPrefix(run.prefix)}:${BASELINE_QUEUE}`);
    }
    const failed = (await eventsQueueState(queue)).failed;
    run.notes.push(
      `rounds (closed loops; the figures take the median of each): ${svcRounds
        .map(
          (r, i) =>
            `round ${i + 1}: service ${Math.round(r.rps).toLocaleString('en')}, baseline ${Math.round(baseRounds[i].rps).toLocaleString('en')} req/s (ratio ${(r.rps / baseRounds[i].rps).toFixed(2)})`,
        )
        .join('; ')}`,
      `the service's events queue at the end of each round (its background process stores while the API accepts): ${backlogs.join('; ')}` +
        `${failed > 0 ? `; ${failed} failed jobs` : ''}`,
    );
    await baseServer.stop();
    base = undefined;
    await queue.close();
    const svcStop = await run.stopService(svc);
    const r = medianRun(svcRounds);
    const b = medianRun(baseRounds);
    const baselineLabel = 'bare Fastify route adding one BullMQ job (the median of its rounds)';
    return run.result({
      requestsPerSec: figure({
        label: 'LogEvents requests/s (median of the rounds)',
        unit: 'req/s',
        value: r.rps,
        baseline: b.rps,
        baselineLabel,
        better: 'higher',
        target: { on: 'ratio', bound: 'min', limit: 0.8 },
      }),
      eventsPerSec: figure({
        label: 'events accepted/s (median of the rounds)',
        unit: 'events/s',
        value: r.rps * p.eventsPerRequest,
        baseline: b.rps * p.eventsPerRequest,
        baselineLabel,
        better: 'higher',
      }),
      p99Ms: figure({ label: 'LogEvents p99 (the median round)', unit: 'ms', value: r.p99, baseline: b.p99, baselineLabel, better: 'lower' }),
      ...rssFigures(svcStop, svc.readyRss, {}),
    });
  } finally {
    await base?.stop();
    await run.close();
  }
}

export const logEventsScenario: Scenario = {
  name: 'log-events',
  summary: 'LogEvents, 10 events per request, 50 connections, vs a bare Fastify route adding one BullMQ job',
  run: runLogEvents,
};
