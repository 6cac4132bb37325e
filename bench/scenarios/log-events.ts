import { randomBytes } from 'node:crypto';
import { startBaselineServer } from '../lib/baseline-server.js';
import { eventsQueue, eventsQueueState } from '../lib/bench-redis.js';
import { eventRequestBody, type EventStream } from '../lib/event-generator.js';
import { runLoad, type LoadOptions } from '../lib/load-runner.js';
import { figure, rssFigures, type Scenario, type ScenarioContext, type ScenarioResult, type Size } from '../lib/scenario.js';
import { ScenarioRun } from '../lib/scenario-run.js';

export interface LogEventsParams {
  connections: number;
  durationSec: number;
  warmupSec: number;
  users: number;
  eventsPerRequest: number;
}

export const LOG_EVENTS_SIZES: Record<Size, LogEventsParams> = {
  tiny: { connections: 2, durationSec: 1, warmupSec: 0.3, users: 100, eventsPerRequest: 10 },
  full: { connections: 50, durationSec: 10, warmupSec: 3, users: 10_000, eventsPerRequest: 10 },
};

export const PROJECT_ID = 'bench';

/** A body factory over one event stream; every call is a new request (fresh insertIds). */
export function logEventsBodies(p: Pick<LogEventsParams, 'users' | 'eventsPerRequest'>): () => string {
  const stream: EventStream = { runId: randomBytes(4).toString('hex'), users: p.users, eventsPerRequest: p.eventsPerRequest };
  let seq = 0;
  return () => eventRequestBody(PROJECT_ID, stream, seq++, Date.now());
}

/**
 * LogEvents with 10 events per request as fast as the service accepts them (its
 * background process ingests at the same time), against a bare Fastify route that
 * adds one BullMQ job per request.
 */
export async function runLogEvents(ctx: ScenarioContext): Promise<ScenarioResult> {
  const p = LOG_EVENTS_SIZES[ctx.size];
  const run = ScenarioRun.open(ctx, 'log-events');
  Object.assign(run.params, p);
  try {
    const svc = await run.startService();
    const keys = await svc.createProject(PROJECT_ID);
    const queue = eventsQueue(run.redis, run.prefix);
    run.progress(`service: ${p.connections} connections, ${p.warmupSec} s warm-up + ${p.durationSec} s`);
    const load = (baseUrl: string, body: () => string, headers: Record<string, string> = {}): LoadOptions => ({
      baseUrl,
      path: '/v1/LogEvents',
      connections: p.connections,
      durationSec: p.durationSec,
      headers,
      body,
    });
    const body = logEventsBodies(p);
    await runLoad({ ...load(svc.baseUrl, body, { 'x-api-key': keys.logEvents }), durationSec: p.warmupSec });
    const before = await eventsQueueState(queue);
    const r = await run.measureLoad('service', () => svc.sampler.cpuSeconds(), load(svc.baseUrl, body, { 'x-api-key': keys.logEvents }), 0);
    const after = await eventsQueueState(queue);
    const processed = (r.ok - (after.pending - before.pending)) * p.eventsPerRequest;
    run.notes.push(
      `workers in the same process stored ${Math.round(processed / r.seconds).toLocaleString('en')} events/s during the run; ` +
        `backlog ${before.pending.toLocaleString('en')} → ${after.pending.toLocaleString('en')} jobs${after.failed > 0 ? `, ${after.failed} failed jobs` : ''}`,
    );
    await queue.close();
    const svcStop = await run.stopService(svc);

    run.progress('baseline: bare Fastify + BullMQ add');
    const base = await startBaselineServer('bullmq-add', ctx.redisUrl, run.prefix);
    const b = await run.measureLoad('baseline', () => base.sampler.cpuSeconds(), load(base.baseUrl, logEventsBodies(p)), p.warmupSec, {
      serverLabel: 'baseline server',
      refusalsAllowed: false,
    });
    await base.stop();

    const baselineLabel = 'bare Fastify route adding one BullMQ job';
    return run.result({
      requestsPerSec: figure({
        label: 'LogEvents requests/s',
        unit: 'req/s',
        value: r.rps,
        baseline: b.rps,
        baselineLabel,
        better: 'higher',
        target: { on: 'ratio', bound: 'min', limit: 0.8 },
      }),
      eventsPerSec: figure({
        label: 'events accepted/s',
        unit: 'events/s',
        value: r.rps * p.eventsPerRequest,
        baseline: b.rps * p.eventsPerRequest,
        baselineLabel,
        better: 'higher',
      }),
      p99Ms: figure({ label: 'LogEvents p99', unit: 'ms', value: r.p99, baseline: b.p99, baselineLabel, better: 'lower' }),
      ...rssFigures(svcStop, svc.readyRss, {}),
    });
  } finally {
    await run.close();
  }
}

export const logEventsScenario: Scenario = {
  name: 'log-events',
  summary: 'LogEvents, 10 events per request, 50 connections, vs a bare Fastify route adding one BullMQ job',
  run: runLogEvents,
};
