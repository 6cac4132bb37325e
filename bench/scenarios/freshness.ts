import { randomBytes } from 'node:crypto';
import { eventsQueue, eventsQueueState } from '../lib/bench-redis.js';
import { checkLoad, runLoad } from '../lib/load-runner.js';
import { figure, percentile, rssFigures, type Scenario, type ScenarioContext, type ScenarioResult, type Size } from '../lib/scenario.js';
import { ScenarioRun } from '../lib/scenario-run.js';
import type { ProjectKeys, ServiceProcess } from '../lib/service-process.js';
import { sleep } from '../lib/tsx-child.js';
import { LOG_EVENTS_SIZES, logEventsBodies, PROJECT_ID } from './log-events.js';

export interface FreshnessParams {
  idleProbes: number;
  loadedProbes: number;
  /** Length of the capacity measurement when no log-events result of this run is available. */
  capacitySec: number;
  /** A probe that is not reflected within this long counts as failed. */
  probeTimeoutMs: number;
  /** Pause between two GetTreatments polls of a probe. */
  pollMs: number;
  /** Bound on the loaded phase. */
  maxLoadSec: number;
}

export const FRESHNESS_SIZES: Record<Size, FreshnessParams> = {
  tiny: { idleProbes: 3, loadedProbes: 5, capacitySec: 1, probeTimeoutMs: 10_000, pollMs: 2, maxLoadSec: 60 },
  full: { idleProbes: 50, loadedProbes: 200, capacitySec: 5, probeTimeoutMs: 10_000, pollMs: 2, maxLoadSec: 600 },
};

const PROBE_SURFACE = 'probe';

/** A treatment on the probe surface whose content renders the user's `probe_seq` property (a `{{probe_seq}}` placeholder). */
async function createProbeCatalogue(svc: ServiceProcess, keys: ProjectKeys): Promise<void> {
  const m = (op: string, body: Record<string, unknown>) => svc.call(op, keys.management, { projectId: keys.projectId, ...body });
  await m('InsertSurface', { name: PROBE_SURFACE });
  await m('InsertTreatmentType', { treatmentTypeName: 'probe_card', lastModifiedBy: 'bench', surfaces: [{ surfaceName: PROBE_SURFACE }], contentFieldTypes: [{ fieldName: 'seq', maximumLengthAllowed: 64 }] });
  await m('InsertDataField', { name: 'probe_seq', userProperty: { dataType: 'INTEGER' } });
  await m('InsertTreatment', {
    name: 'probe',
    description: 'renders probe_seq',
    treatmentTypeName: 'probe_card',
    lastModifiedBy: 'bench',
    startTimestamp: new Date(Date.now() - 3600_000).toISOString(),
    shouldPublish: true,
    content: { languageAgnosticContentFields: [{ fieldName: 'seq', stringValue: '{{probe_seq|none}}' }] },
  });
}

interface Prober {
  /** ms from the LogEvents 200 to the first GetTreatments response that shows the new value; NaN on timeout. */
  probe(): Promise<number>;
}

function prober(svc: ServiceProcess, keys: ProjectKeys, p: FreshnessParams): Prober {
  const runId = randomBytes(3).toString('hex');
  let k = 0;
  return {
    async probe() {
      const seq = ++k;
      const userId = `probe-${runId}-${seq}`;
      await svc.call('LogEvents', keys.logEvents, {
        projectId: keys.projectId,
        userId,
        events: [{ eventName: 'probe', clientEventTimestamp: new Date().toISOString(), insertId: `probe-${runId}-${seq}`, userProperties: { probe_seq: { longValue: String(seq) } } }],
      });
      const accepted = performance.now();
      const body = { projectId: keys.projectId, userId, surfaces: [{ surface: PROBE_SURFACE }] };
      while (performance.now() - accepted < p.probeTimeoutMs) {
        const res = await svc.call<{ userTreatments?: { treatmentContent: string }[] }>('GetTreatments', keys.delivery, body);
        const content = res.userTreatments?.[0]?.treatmentContent;
        if (content !== undefined && (JSON.parse(content) as { seq?: string }).seq === String(seq)) return performance.now() - accepted;
        await sleep(p.pollMs);
      }
      return NaN;
    },
  };
}

async function probeMany(pr: Prober, n: number, progress: (done: number) => void): Promise<{ sorted: number[]; failed: number }> {
  const ok: number[] = [];
  let failed = 0;
  for (let i = 0; i < n; i++) {
    const ms = await pr.probe();
    if (Number.isNaN(ms)) failed++;
    else ok.push(ms);
    progress(i + 1);
  }
  return { sorted: ok.sort((a, b) => a - b), failed };
}

async function waitForDrain(run: ScenarioRun, maxMs: number): Promise<number> {
  const queue = eventsQueue(run.redis, run.prefix);
  const end = performance.now() + maxMs;
  let state = await eventsQueueState(queue);
  while (state.pending > 0 && performance.now() < end) {
    await sleep(100);
    state = await eventsQueueState(queue);
  }
  await queue.close();
  return state.pending;
}

/** LogEvents' accept capacity: from the log-events scenario of this run, else `--capacity`, else measured here. */
async function capacity(ctx: ScenarioContext, run: ScenarioRun, svc: ServiceProcess, keys: ProjectKeys, p: FreshnessParams): Promise<number> {
  const known = ctx.previous.get('log-events')?.figures.requestsPerSec?.value;
  if (known !== undefined && Number.isFinite(known)) {
    run.notes.push(`capacity taken from the log-events scenario of this run: ${Math.round(known).toLocaleString('en')} req/s`);
    return known;
  }
  if (ctx.logEventsCapacity !== undefined) {
    run.notes.push(`capacity given on the command line: ${Math.round(ctx.logEventsCapacity).toLocaleString('en')} req/s`);
    return ctx.logEventsCapacity;
  }
  const le = LOG_EVENTS_SIZES[ctx.size];
  run.progress(`measuring LogEvents capacity (${p.capacitySec} s, ${le.connections} connections)`);
  const r = await runLoad({ baseUrl: svc.baseUrl, path: '/v1/LogEvents', connections: le.connections, durationSec: p.capacitySec, headers: { 'x-api-key': keys.logEvents }, body: logEventsBodies(le) });
  checkLoad('capacity LogEvents', r);
  run.notes.push(`capacity measured here: ${Math.round(r.rps).toLocaleString('en')} req/s of ${le.eventsPerRequest} events`);
  run.progress('waiting for the workers to drain the capacity run');
  const left = await waitForDrain(run, 300_000);
  if (left > 0) throw new Error(`${left} jobs of the capacity run still pending after 300 s`);
  return r.rps;
}

/**
 * Time from a LogEvents 200 to GetTreatments reflecting it (a user property rendered into the
 * content), while LogEvents load runs at half its measured capacity; baseline: the same probes on
 * the idle service.
 */
export async function runFreshness(ctx: ScenarioContext): Promise<ScenarioResult> {
  const p = FRESHNESS_SIZES[ctx.size];
  const le = LOG_EVENTS_SIZES[ctx.size];
  const run = ScenarioRun.open(ctx, 'freshness');
  Object.assign(run.params, p, { connections: le.connections, eventsPerRequest: le.eventsPerRequest });
  try {
    const svc = await run.startService();
    const keys = await svc.createProject(PROJECT_ID);
    await createProbeCatalogue(svc, keys);
    const pr = prober(svc, keys, p);
    await pr.probe(); // warm-up: caches, JIT

    run.progress(`${p.idleProbes} probes on the idle service`);
    const idle = await probeMany(pr, p.idleProbes, () => undefined);
    const cap = await capacity(ctx, run, svc, keys, p);
    const rate = Math.max(1, Math.round(cap / 2));
    run.params.loadRate = rate;

    run.progress(`LogEvents load at ${rate} req/s (half of ${cap.toFixed(0)}); ${p.loadedProbes} probes`);
    const stop = new AbortController();
    const queue = eventsQueue(run.redis, run.prefix);
    const before = await eventsQueueState(queue);
    const loadRun = runLoad({
      baseUrl: svc.baseUrl,
      path: '/v1/LogEvents',
      connections: le.connections,
      durationSec: p.maxLoadSec,
      overallRate: rate,
      headers: { 'x-api-key': keys.logEvents },
      body: logEventsBodies(le),
      signal: stop.signal,
    });
    let loaded;
    try {
      await sleep(Math.min(2000, p.maxLoadSec * 100));
      loaded = await probeMany(pr, p.loadedProbes, (done) => {
        if (done % 20 === 0 || done === p.loadedProbes) run.progress(`${done} / ${p.loadedProbes} probes`);
      });
    } finally {
      stop.abort();
    }
    const load = await loadRun;
    const after = await eventsQueueState(queue);
    await queue.close();
    checkLoad('LogEvents load', load);
    run.loadNote(`background load (asked ${rate} req/s)`, load);
    run.notes.push(`backlog of the events queue ${before.pending} → ${after.pending} jobs during the loaded phase`);
    const failed = idle.failed + loaded.failed;
    if (failed > 0) run.notes.push(`${failed} probes not reflected within ${p.probeTimeoutMs} ms (left out of the percentiles)`);
    if (loaded.sorted.length === 0 || idle.sorted.length === 0) throw new Error('no probe was reflected in time');
    const svcStop = await run.stopService(svc);

    const baselineLabel = 'the same probes on the idle service';
    run.notes.push(`idle: p50 ${percentile(idle.sorted, 50).toFixed(1)} ms, max ${idle.sorted[idle.sorted.length - 1].toFixed(1)} ms; loaded: max ${loaded.sorted[loaded.sorted.length - 1].toFixed(1)} ms`);
    return run.result({
      p50Ms: figure({ label: 'LogEvents 200 → GetTreatments, p50', unit: 'ms', value: percentile(loaded.sorted, 50), baseline: percentile(idle.sorted, 50), baselineLabel, better: 'lower' }),
      p99Ms: figure({ label: 'LogEvents 200 → GetTreatments, p99', unit: 'ms', value: percentile(loaded.sorted, 99), baseline: percentile(idle.sorted, 99), baselineLabel, better: 'lower', target: { on: 'value', bound: 'max', limit: 1000 } }),
      ...rssFigures(svcStop, svc.readyRss, {}),
    });
  } finally {
    await run.close();
  }
}

export const freshnessScenario: Scenario = {
  name: 'freshness',
  summary: 'time from a LogEvents 200 to GetTreatments reflecting it, under LogEvents load at half capacity, vs the idle service',
  run: runFreshness,
};
