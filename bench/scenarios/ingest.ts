import { randomBytes } from 'node:crypto';
import { dailyCountPrefix } from '../../shared/profiles/index.js';
import { eventsQueue, readProfiles } from '../lib/bench-redis.js';
import { checkDrained, sendAndDrain } from '../lib/ingest-run.js';
import { runClickhouseTask } from '../lib/clickhouse-task.js';
import { threadCpuOf, threadCpuPer } from '../lib/proc-stat.js';
import { EVENT_NAMES, userIdOf, type EventStream } from '../lib/event-generator.js';
import { figure, rssFigures, type Scenario, type ScenarioContext, type ScenarioResult, type Size } from '../lib/scenario.js';
import { ScenarioRun } from '../lib/scenario-run.js';
import type { ServiceProcess, ProjectKeys } from '../lib/service-process.js';
import { PROJECT_ID } from './log-events.js';

export interface IngestParams {
  events: number;
  eventsPerRequest: number;
  connections: number;
  users: number;
  /** Bound on sending plus draining. */
  maxSec: number;
  /** Rows per insert of the baseline. */
  baselineBatchRows: number;
}

export const INGEST_SIZES: Record<Size, IngestParams> = {
  tiny: { events: 2_000, eventsPerRequest: 100, connections: 2, users: 20, maxSec: 120, baselineBatchRows: 10_000 },
  full: { events: 1_000_000, eventsPerRequest: 100, connections: 50, users: 10_000, maxSec: 900, baselineBatchRows: 10_000 },
};

/** One daily count per event name: every event is reflected in exactly one profile counter. */
async function countFields(svc: ServiceProcess, keys: ProjectKeys): Promise<string[]> {
  const res = await svc.call<{ dataFields: { dataFieldId: string }[] }>('GetDataFields', keys.management, {
    projectId: keys.projectId,
    dataFieldParams: EVENT_NAMES.map((eventSchemaName) => ({ eventDataFieldParams: { eventSchemaName, dailyCountAggregation: { windowName: 'LAST_7D' } } })),
  });
  return res.dataFields.map((f) => f.dataFieldId);
}

/** Sum of every daily-count field of `fieldIds` over the users, and users carrying `last_request`. */
async function profileTotals(run: ScenarioRun, users: number, fieldIds: string[]): Promise<{ counted: number; withProperty: number }> {
  const ids = Array.from({ length: users }, (_, i) => userIdOf(i));
  const prefixes = fieldIds.map(dailyCountPrefix);
  let counted = 0;
  let withProperty = 0;
  for (const p of await readProfiles(run.redis, run.keys, PROJECT_ID, ids)) {
    for (const [k, v] of Object.entries(p.fields)) if (prefixes.some((x) => k.startsWith(x))) counted += Number(v);
    if (p.userProperties.last_request !== undefined) withProperty++;
  }
  return { counted, withProperty };
}

/**
 * 1,000,000 events through LogEvents until every job completed: a job completes only after its
 * rows are in ClickHouse and its profile script ran (workers/ingestion/events.processor.ts), so an
 * empty events queue with no failed job is "stored and reflected". Both are verified afterwards.
 * Baseline: the same rows inserted straight into ClickHouse with insertRows, 10,000 per insert.
 */
export async function runIngest(ctx: ScenarioContext): Promise<ScenarioResult> {
  const p = INGEST_SIZES[ctx.size];
  const run = ScenarioRun.open(ctx, 'ingest');
  Object.assign(run.params, p);
  const requests = Math.ceil(p.events / p.eventsPerRequest);
  const events = requests * p.eventsPerRequest;
  const stream: EventStream = { runId: randomBytes(4).toString('hex'), users: p.users, eventsPerRequest: p.eventsPerRequest };
  try {
    const svc = await run.startService();
    const keys = await svc.createProject(PROJECT_ID);
    const fieldIds = await countFields(svc, keys);
    const queue = eventsQueue(run.redis, run.prefix);

    const cpu0 = { api: svc.sampler.kindCpuSeconds('api'), background: svc.sampler.kindCpuSeconds('background') };
    const [backgroundPid] = svc.sampler.pids('background');
    const threads0 = threadCpuOf(backgroundPid);
    run.progress(`sending ${events.toLocaleString('en')} events in ${requests.toLocaleString('en')} requests over ${p.connections} connections`);
    const measured = await run.withCpu(
      () => svc.sampler.cpuSeconds(),
      () =>
        sendAndDrain({
          svc,
          key: keys.logEvents,
          projectId: PROJECT_ID,
          stream,
          requests,
          connections: p.connections,
          queue,
          maxSec: p.maxSec,
          progress: (m) => run.progress(m),
        }),
    );
    const sent = measured.value;
    checkDrained(sent, requests, p.maxSec);
    const threads1 = threadCpuOf(backgroundPid);
    const { acceptedSec, seconds } = sent;
    const eventsPerSec = events / seconds;
    run.notes.push(
      `all ${requests.toLocaleString('en')} requests accepted after ${acceptedSec.toFixed(1)} s (${Math.round(events / acceptedSec).toLocaleString('en')} events/s; p50 ${sent.load.p50.toFixed(1)} ms, p99 ${sent.load.p99.toFixed(1)} ms), all stored after ${seconds.toFixed(1)} s`,
    );
    // how much of the work the background did while the API was still accepting (it runs niced)
    run.notes.push(
      `when the last request was accepted, ${sent.pendingWhenAccepted.toLocaleString('en')} of the ${requests.toLocaleString('en')} requests' jobs were still to be stored (a job holds one request or several merged)`,
    );
    if (sent.load.refused > 0)
      run.notes.push(
        `${sent.load.refused.toLocaleString('en')} requests were refused (503/429: ${JSON.stringify(sent.load.statusCodes)}) and sent again after their Retry-After`,
      );
    run.notes.push(
      `CPU over the whole run: service ${measured.serviceCores.toFixed(2)} cores, load generator ${measured.loadGeneratorCores.toFixed(2)} cores, Redis ${measured.redisCores.toFixed(2)} cores`,
    );
    // per event, which barely moves with what else runs on the machine (unlike events/s)
    const perEvent = (kind: 'api' | 'background') => (((svc.sampler.kindCpuSeconds(kind) - cpu0[kind]) * 1e6) / events).toFixed(1);
    run.notes.push(
      `CPU per event: API process ${perEvent('api')} µs, background process ${perEvent('background')} µs (its JavaScript thread and the embedded ClickHouse's threads)`,
    );
    const byThread = threadCpuPer(threads0, threads1, events, 0.05);
    run.notes.push(
      `background by thread (µs per event; \`node\`: V8's helper threads and libuv's pool, which runs the engine's asynchronous calls): ${byThread.map(([t, us]) => `${t} ${us.toFixed(2)}`).join(', ')}`,
    );
    await queue.close();

    const totals = await profileTotals(run, p.users, fieldIds);
    run.notes.push(
      `profiles: daily counts sum to ${totals.counted.toLocaleString('en')} of ${events.toLocaleString('en')} events; ${totals.withProperty.toLocaleString('en')} of ${p.users.toLocaleString('en')} users carry the user property`,
    );
    if (totals.counted !== events) throw new Error(`profiles reflect ${totals.counted} events, expected ${events}`);
    const svcStop = await run.stopService(svc);

    run.progress('verifying the rows in ClickHouse');
    const stored = await runClickhouseTask({ task: 'count-events', dataDir: run.dataDir, projectId: PROJECT_ID });
    run.notes.push(`ClickHouse holds ${stored.result.rows.toLocaleString('en')} rows (FINAL) of ${stored.result.users.toLocaleString('en')} users`);
    if (stored.result.rows !== events) throw new Error(`ClickHouse holds ${stored.result.rows} rows, expected ${events}`);

    run.progress(`baseline: the same rows straight into ClickHouse, ${p.baselineBatchRows.toLocaleString('en')} per insert`);
    const base = await runClickhouseTask(
      { task: 'insert-rows', dataDir: run.tempDir('baseline'), projectId: PROJECT_ID, stream, requests, batchRows: p.baselineBatchRows, nowMs: Date.now() },
      (s) => run.progress(`baseline: ${s}`),
    );
    const baselinePerSec = base.result.rows / base.result.seconds;
    run.notes.push(
      `baseline: ${base.result.rows.toLocaleString('en')} rows in ${base.result.seconds.toFixed(2)} s of inserts (peak RSS ${base.peakRssMb.toFixed(0)} MB)`,
    );

    return run.result({
      eventsPerSec: figure({
        label: 'events/s end to end',
        unit: 'events/s',
        value: eventsPerSec,
        baseline: baselinePerSec,
        baselineLabel: 'insertRows straight into ClickHouse, 10,000 rows per insert',
        better: 'higher',
        target: { on: 'value', bound: 'min', limit: 75_000 },
      }),
      ...rssFigures(svcStop, svc.readyRss, { background: true }),
    });
  } finally {
    await run.close();
  }
}

export const ingestScenario: Scenario = {
  name: 'ingest',
  summary: '1,000,000 events through LogEvents until stored in ClickHouse and in the profiles, vs straight ClickHouse inserts',
  run: runIngest,
};
