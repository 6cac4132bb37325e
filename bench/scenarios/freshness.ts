import { randomBytes } from 'node:crypto';
import type { Queue } from 'bullmq';
import { eventsQueue, eventsQueueState, waitForDrain } from '../lib/bench-redis.js';
import { checkDrained, sendAndDrain } from '../lib/ingest-run.js';
import { checkLoad } from '../lib/load-runner.js';
import { runOpenLoop } from '../lib/open-loop.js';
import { figure, percentile, rssFigures, type Scenario, type ScenarioContext, type ScenarioResult, type Size } from '../lib/scenario.js';
import { ScenarioRun } from '../lib/scenario-run.js';
import type { ProjectKeys, ServiceProcess } from '../lib/service-process.js';
import { sleep } from '../lib/tsx-child.js';
import { INGEST_SIZES } from './ingest.js';
import { LOG_EVENTS_SIZES, logEventsBodies, PROJECT_ID } from './log-events.js';

export interface FreshnessParams {
  idleProbes: number;
  /** Probes of each loaded phase (fewer when the phase's time runs out first). */
  loadedProbes: number;
  /** Events sent to measure the end-to-end ingest capacity when neither ingest nor `--capacity` gives it. */
  capacityEvents: number;
  /** A probe that is not reflected within this long counts as failed. */
  probeTimeoutMs: number;
  /** Pause between two GetTreatments polls of a probe. */
  pollMs: number;
  /** Time a loaded phase may take for its probes. */
  maxPhaseSec: number;
  /** Load before the first probe of a phase (the backlog reaches its steady state). */
  settleSec: number;
  /** The fixed-rate phase: events/s (the issue's 10,000 at full size). */
  fixedEventsPerSec: number;
  /** Bound on waiting for the events queue to drain between phases. */
  maxDrainSec: number;
}

export const FRESHNESS_SIZES: Record<Size, FreshnessParams> = {
  tiny: {
    idleProbes: 3,
    loadedProbes: 5,
    capacityEvents: 2_000,
    probeTimeoutMs: 10_000,
    pollMs: 2,
    maxPhaseSec: 30,
    settleSec: 0.2,
    fixedEventsPerSec: 200,
    maxDrainSec: 60,
  },
  full: {
    idleProbes: 50,
    loadedProbes: 200,
    capacityEvents: 200_000,
    probeTimeoutMs: 10_000,
    pollMs: 2,
    maxPhaseSec: 180,
    settleSec: 2,
    fixedEventsPerSec: 10_000,
    maxDrainSec: 300,
  },
};

const PROBE_SURFACE = 'probe';

/** A treatment on the probe surface whose content renders the user's `probe_seq` property (a `{{probe_seq}}` placeholder). */
async function createProbeCatalogue(svc: ServiceProcess, keys: ProjectKeys): Promise<void> {
  const m = (op: string, body: Record<string, unknown>) => svc.call(op, keys.management, { projectId: keys.projectId, ...body });
  await m('InsertSurface', { name: PROBE_SURFACE });
  await m('InsertTreatmentType', {
    treatmentTypeName: 'probe_card',
    lastModifiedBy: 'bench',
    surfaces: [{ surfaceName: PROBE_SURFACE }],
    contentFieldTypes: [{ fieldName: 'seq', maximumLengthAllowed: 64 }],
  });
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
        events: [
          {
            eventName: 'probe',
            clientEventTimestamp: new Date().toISOString(),
            insertId: `probe-${runId}-${seq}`,
            userProperties: { probe_seq: { longValue: String(seq) } },
          },
        ],
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

interface Probed {
  sorted: number[];
  failed: number;
}

/** Up to `n` probes one after another, for at most `budgetMs`; a progress line every 5 s (a probe may take its whole timeout). */
async function probeMany(pr: Prober, n: number, budgetMs: number, progress: (s: string) => void): Promise<Probed> {
  const ok: number[] = [];
  let failed = 0;
  const end = performance.now() + budgetMs;
  const timer = setInterval(() => {
    const sorted = [...ok].sort((a, b) => a - b);
    progress(
      `${ok.length + failed} / ${n} probes (${failed} not reflected in time${sorted.length > 0 ? `; p50 so far ${percentile(sorted, 50).toFixed(0)} ms` : ''})`,
    );
  }, 5000);
  try {
    for (let i = 0; i < n && performance.now() < end; i++) {
      const ms = await pr.probe();
      if (Number.isNaN(ms)) failed++;
      else ok.push(ms);
    }
  } finally {
    clearInterval(timer);
  }
  return { sorted: ok.sort((a, b) => a - b), failed };
}

/**
 * The end-to-end ingest capacity in LogEvents requests/s of `eventsPerRequest` events (the size
 * this scenario loads with): `--capacity`, else measured here with the ingest scenario's method
 * (send as fast as accepted, until every event is stored and counted) on `capacityEvents` events
 * in requests of that size. The ingest scenario's own figure is for requests of 100 events: the
 * pipeline's cost is partly per request, so half of that rate in requests of 10 can be past what
 * the pipeline sustains for them (noted for comparison, not used).
 */
async function capacity(
  ctx: ScenarioContext,
  run: ScenarioRun,
  svc: ServiceProcess,
  keys: ProjectKeys,
  queue: Queue,
  eventsPerRequest: number,
): Promise<number> {
  const p = FRESHNESS_SIZES[ctx.size];
  const known = ctx.previous.get('ingest')?.figures.eventsPerSec?.value;
  if (known !== undefined && Number.isFinite(known)) {
    run.notes.push(
      `the ingest scenario of this run: ${Math.round(known).toLocaleString('en')} events/s in requests of ${INGEST_SIZES[ctx.size].eventsPerRequest} events (not used: this scenario loads requests of ${eventsPerRequest})`,
    );
  }
  if (ctx.ingestCapacity !== undefined) {
    run.notes.push(
      `end-to-end ingest capacity given on the command line: ${Math.round(ctx.ingestCapacity).toLocaleString('en')} req/s of ${eventsPerRequest} events`,
    );
    return ctx.ingestCapacity;
  }
  const ing = INGEST_SIZES[ctx.size];
  const requests = Math.ceil(p.capacityEvents / eventsPerRequest);
  const events = requests * eventsPerRequest;
  run.progress(
    `measuring the end-to-end ingest capacity: ${events.toLocaleString('en')} events, ${eventsPerRequest} per request, ${ing.connections} connections`,
  );
  const stream = { runId: randomBytes(4).toString('hex'), users: ing.users, eventsPerRequest };
  const r = await sendAndDrain({
    svc,
    key: keys.logEvents,
    projectId: PROJECT_ID,
    stream,
    requests,
    connections: ing.connections,
    queue,
    maxSec: ing.maxSec,
    progress: (m) => run.progress(`capacity: ${m}`),
  });
  checkDrained(r, requests, ing.maxSec);
  run.notes.push(
    `end-to-end ingest capacity measured here, in requests of ${eventsPerRequest} events: ${events.toLocaleString('en')} events stored in ${r.seconds.toFixed(1)} s = ${Math.round(events / r.seconds).toLocaleString('en')} events/s`,
  );
  return events / r.seconds / eventsPerRequest;
}

/**
 * LogEvents load at `rate` req/s (open loop: evenly spaced, whatever the latency) while probes
 * run one after another; then the load stops and, when another phase follows, the backlog drains.
 */
async function loadedPhase(
  run: ScenarioRun,
  svc: ServiceProcess,
  keys: ProjectKeys,
  queue: Queue,
  pr: Prober,
  label: string,
  rate: number,
  drainAfter: boolean,
): Promise<Probed> {
  const p = FRESHNESS_SIZES[run.ctx.size];
  const le = LOG_EVENTS_SIZES[run.ctx.size];
  run.progress(
    `${label}: LogEvents at ${rate.toLocaleString('en')} req/s (${(rate * le.eventsPerRequest).toLocaleString('en')} events/s); up to ${p.loadedProbes} probes in ${p.maxPhaseSec} s`,
  );
  const stop = new AbortController();
  const before = await eventsQueueState(queue);
  let maxBacklog = before.pending;
  const loadRun = runOpenLoop({
    baseUrl: svc.baseUrl,
    path: '/v1/LogEvents',
    rate,
    durationSec: p.maxPhaseSec + p.settleSec + 30,
    connections: le.connections,
    headers: { 'x-api-key': keys.logEvents },
    body: logEventsBodies(le),
    signal: stop.signal,
  });
  const backlog = setInterval(() => {
    void eventsQueueState(queue).then(
      (s) => (maxBacklog = Math.max(maxBacklog, s.pending)),
      () => undefined,
    );
  }, 1000);
  let probed: Probed;
  try {
    await sleep(p.settleSec * 1000);
    probed = await probeMany(pr, p.loadedProbes, p.maxPhaseSec * 1000, (s) =>
      run.progress(`${label}: ${s}; backlog ${maxBacklog.toLocaleString('en')} jobs at most`),
    );
  } finally {
    stop.abort();
    clearInterval(backlog);
  }
  const load = await loadRun;
  const after = await eventsQueueState(queue);
  checkLoad(`${label}: LogEvents load`, load, 0.01, { refusalsAllowed: true });
  run.loadNote(`${label}: LogEvents load (asked ${rate.toLocaleString('en')} req/s; ${load.refused} refused with 503)`, load);
  run.notes.push(
    `${label}: ${probed.sorted.length + probed.failed} probes; backlog of the events queue ${before.pending} → ${after.pending} jobs (at most ${Math.max(maxBacklog, after.pending)})`,
  );
  if (drainAfter) {
    const left = await waitForDrain(queue, p.maxDrainSec, (m) => run.progress(m));
    if (left > 0) run.notes.push(`${label}: ${left} jobs still pending ${p.maxDrainSec} s after the load stopped: the next phase starts with that backlog`);
  }
  return probed;
}

/**
 * Time from a LogEvents 200 to GetTreatments reflecting it (a user property rendered into the
 * content), while LogEvents load runs at a fixed 10,000 events/s, then at half the end-to-end
 * ingest capacity; baseline: the same probes on the idle service.
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
    const queue = eventsQueue(run.redis, run.prefix);
    const pr = prober(svc, keys, p);
    await pr.probe(); // warm-up: caches, JIT

    run.progress(`${p.idleProbes} probes on the idle service`);
    const idle = await probeMany(pr, p.idleProbes, p.maxPhaseSec * 1000, (s) => run.progress(`idle: ${s}`));
    const cap = await capacity(ctx, run, svc, keys, queue, le.eventsPerRequest);
    const left = await waitForDrain(queue, p.maxDrainSec, (m) => run.progress(m));
    if (left > 0) run.notes.push(`${left} jobs of the capacity measurement still pending after ${p.maxDrainSec} s`);

    const fixedRate = Math.max(1, Math.round(p.fixedEventsPerSec / le.eventsPerRequest));
    const halfRate = Math.max(1, Math.round(cap / 2));
    Object.assign(run.params, { fixedRate, loadRate: halfRate });
    const fixed = await loadedPhase(run, svc, keys, queue, pr, `fixed ${p.fixedEventsPerSec.toLocaleString('en')} events/s`, fixedRate, true);
    const half = await loadedPhase(
      run,
      svc,
      keys,
      queue,
      pr,
      `half the ingest capacity of ${Math.round(cap * le.eventsPerRequest).toLocaleString('en')} events/s`,
      halfRate,
      false,
    );
    await queue.close();

    const failed = idle.failed + fixed.failed + half.failed;
    if (failed > 0)
      run.notes.push(
        `${failed} probes not reflected within ${p.probeTimeoutMs} ms (left out of the percentiles): idle ${idle.failed}, fixed rate ${fixed.failed}, half capacity ${half.failed}`,
      );
    if (idle.sorted.length === 0 || fixed.sorted.length === 0 || half.sorted.length === 0) throw new Error('no probe of a phase was reflected in time');
    const svcStop = await run.stopService(svc);

    const baselineLabel = 'the same probes on the idle service';
    const max = (xs: number[]) => xs[xs.length - 1].toFixed(1);
    run.notes.push(
      `idle: p50 ${percentile(idle.sorted, 50).toFixed(1)} ms, max ${max(idle.sorted)} ms; fixed rate: p50 ${percentile(fixed.sorted, 50).toFixed(1)} ms, max ${max(fixed.sorted)} ms; half capacity: max ${max(half.sorted)} ms`,
    );
    const idleP50 = percentile(idle.sorted, 50);
    const idleP99 = percentile(idle.sorted, 99);
    return run.result({
      p50Ms: figure({
        label: 'LogEvents 200 → GetTreatments, p50, at half the ingest capacity',
        unit: 'ms',
        value: percentile(half.sorted, 50),
        baseline: idleP50,
        baselineLabel,
        better: 'lower',
      }),
      p99Ms: figure({
        label: 'LogEvents 200 → GetTreatments, p99, at half the ingest capacity',
        unit: 'ms',
        value: percentile(half.sorted, 99),
        baseline: idleP99,
        baselineLabel,
        better: 'lower',
        target: { on: 'value', bound: 'max', limit: 1000 },
      }),
      p99Ms10k: figure({
        label: `LogEvents 200 → GetTreatments, p99, at ${p.fixedEventsPerSec.toLocaleString('en')} events/s`,
        unit: 'ms',
        value: percentile(fixed.sorted, 99),
        baseline: idleP99,
        baselineLabel,
        better: 'lower',
      }),
      ...rssFigures(svcStop, svc.readyRss, {}),
    });
  } finally {
    await run.close();
  }
}

export const freshnessScenario: Scenario = {
  name: 'freshness',
  summary:
    'time from a LogEvents 200 to GetTreatments reflecting it, under LogEvents load at 10,000 events/s and at half the end-to-end ingest capacity, vs the idle service',
  run: runFreshness,
};
