import { randomBytes } from 'node:crypto';
import { dailyCountPrefix } from '../../shared/profiles/index.js';
import { eventsQueue, eventsQueueState, readProfiles } from '../lib/bench-redis.js';
import { runClickhouseTask } from '../lib/clickhouse-task.js';
import { EVENT_NAMES, eventRequest, logEventsBody, userIdOf, type EventStream } from '../lib/event-generator.js';
import { checkLoad, runLoad } from '../lib/load-runner.js';
import { figure, rssFigures, type Scenario, type ScenarioContext, type ScenarioResult, type Size } from '../lib/scenario.js';
import { ScenarioRun } from '../lib/scenario-run.js';
import type { ServiceProcess, ProjectKeys } from '../lib/service-process.js';
import { sleep } from '../lib/tsx-child.js';
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

    run.progress(`sending ${events.toLocaleString('en')} events in ${requests.toLocaleString('en')} requests over ${p.connections} connections`);
    const deadline = performance.now() + p.maxSec * 1000;
    const started = performance.now();
    const measured = await run.withCpu(
      () => svc.sampler.cpuSeconds(),
      async () => {
        let accepted = 0;
        let acceptedAt = NaN;
        let loadDone = false;
        const loading = runLoad({
          baseUrl: svc.baseUrl,
          path: '/v1/LogEvents',
          connections: p.connections,
          amount: requests,
          maxSec: p.maxSec,
          headers: { 'x-api-key': keys.logEvents },
          body: (i) => logEventsBody(PROJECT_ID, eventRequest(stream, i, Date.now())),
          onResponse: (status) => {
            if (status === 200 && ++accepted === requests) acceptedAt = performance.now();
          },
          onTick: (sec, n) => run.progress(`${sec.toFixed(0)} s: ${(n * p.eventsPerRequest).toLocaleString('en')} events accepted`),
        });
        void loading.finally(() => (loadDone = true)).catch(() => undefined);
        // polled while the load runs, so the end is seen within 50 ms whichever finishes last
        let state = { pending: -1, failed: 0 };
        let doneAt = NaN;
        let lastReport = performance.now();
        while (performance.now() < deadline && !(loadDone && accepted < requests)) {
          await sleep(50);
          if (accepted < requests) continue;
          state = await eventsQueueState(queue);
          if (state.pending === 0) {
            doneAt = performance.now();
            break;
          }
          if (performance.now() - lastReport > 1000) {
            lastReport = performance.now();
            run.progress(`${((performance.now() - started) / 1000).toFixed(0)} s: all accepted, ${state.pending.toLocaleString('en')} jobs still pending`);
          }
        }
        const load = await loading;
        return { load, acceptedSec: (acceptedAt - started) / 1000, state, seconds: (doneAt - started) / 1000 };
      },
    );
    const { load, acceptedSec, state, seconds } = measured.value;
    checkLoad('LogEvents', load, 0);
    if (load.ok !== requests) throw new Error(`only ${load.ok} of ${requests} requests were accepted within ${p.maxSec} s`);
    if (state.pending !== 0) throw new Error(`${state.pending} jobs still pending after ${p.maxSec} s`);
    if (state.failed > 0) throw new Error(`${state.failed} ingestion jobs failed`);
    const eventsPerSec = events / seconds;
    run.notes.push(`all ${requests.toLocaleString('en')} requests accepted after ${acceptedSec.toFixed(1)} s (${Math.round(events / acceptedSec).toLocaleString('en')} events/s), all stored after ${seconds.toFixed(1)} s`);
    run.notes.push(`CPU over the whole run: service ${measured.serviceCores.toFixed(2)} cores, load generator ${measured.loadGeneratorCores.toFixed(2)} cores, Redis ${measured.redisCores.toFixed(2)} cores`);
    await queue.close();

    const totals = await profileTotals(run, p.users, fieldIds);
    run.notes.push(`profiles: daily counts sum to ${totals.counted.toLocaleString('en')} of ${events.toLocaleString('en')} events; ${totals.withProperty.toLocaleString('en')} of ${p.users.toLocaleString('en')} users carry the user property`);
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
    run.notes.push(`baseline: ${base.result.rows.toLocaleString('en')} rows in ${base.result.seconds.toFixed(2)} s of inserts (peak RSS ${base.peakRssMb.toFixed(0)} MB)`);

    return run.result({
      eventsPerSec: figure({
        label: 'events/s end to end',
        unit: 'events/s',
        value: eventsPerSec,
        baseline: baselinePerSec,
        baselineLabel: 'insertRows straight into ClickHouse, 10,000 rows per insert',
        better: 'higher',
        target: { on: 'value', bound: 'min', limit: 50_000 },
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
