import { Queue } from 'bullmq';
import { dailyCountPrefix } from '../../shared/profiles/index.js';
import { bullPrefix, QUEUE } from '../../shared/platform/queues.js';
import { readProfiles, seedProfiles } from '../lib/bench-redis.js';
import { runClickhouseTask } from '../lib/clickhouse-task.js';
import { EVENT_NAMES, userIdOf } from '../lib/event-generator.js';
import { figure, rssFigures, type Scenario, type ScenarioContext, type ScenarioResult, type Size } from '../lib/scenario.js';
import { ScenarioRun } from '../lib/scenario-run.js';
import { sleep } from '../lib/tsx-child.js';
import { PROJECT_ID } from './log-events.js';

export interface BackfillParams {
  events: number;
  users: number;
  /** Rows per seeding insert. */
  seedBatchRows: number;
  /** The events lie in the last `spreadDays` days; the new field counts the last `windowDays`. */
  spreadDays: number;
  windowDays: number;
  maxWaitSec: number;
}

export const BACKFILL_SIZES: Record<Size, BackfillParams> = {
  tiny: { events: 20_000, users: 1_000, seedBatchRows: 10_000, spreadDays: 29, windowDays: 30, maxWaitSec: 120 },
  full: { events: 10_000_000, users: 100_000, seedBatchRows: 1_000_000, spreadDays: 29, windowDays: 30, maxWaitSec: 3600 },
};

/** The new field: a daily count of one of the four stored event names (every user has some). */
const EVENT_NAME = 'purchase';

interface BackfillJob {
  state: string;
  processedOn?: number;
  finishedOn?: number;
  failedReason?: string;
}

/** Waits for the backfill job the service enqueues for a new field (workers/aggregation/scheduler.ts names it). */
async function waitForBackfill(queue: Queue, dataFieldId: string, maxMs: number, progress: (s: string) => void): Promise<BackfillJob> {
  const jobId = `backfill-${PROJECT_ID}-${dataFieldId}`;
  const end = performance.now() + maxMs;
  let lastReport = performance.now();
  while (performance.now() < end) {
    const state = await queue.getJobState(jobId);
    if (state === 'completed' || state === 'failed') {
      const job = await queue.getJob(jobId);
      return { state, processedOn: job?.processedOn, finishedOn: job?.finishedOn, failedReason: job?.failedReason };
    }
    if (performance.now() - lastReport > 5000) {
      lastReport = performance.now();
      const job = await queue.getJob(jobId);
      progress(`backfill job ${state}${job?.progress ? ` ${JSON.stringify(job.progress)}` : ''}`);
    }
    await sleep(50);
  }
  throw new Error(`the backfill of field ${dataFieldId} did not finish within ${maxMs / 1000} s`);
}

/**
 * 10,000,000 stored events of 100,000 users (seeded straight into the service's ClickHouse before
 * the service starts), then a new event data field: time from GetDataFields until the backfill
 * job finished, i.e. every profile has its value. Baseline: the bare GROUP BY computing the same
 * per-user, per-day counts, in its own process on the same data before the service opens it.
 */
export async function runBackfill(ctx: ScenarioContext): Promise<ScenarioResult> {
  const p = BACKFILL_SIZES[ctx.size];
  const run = ScenarioRun.open(ctx, 'backfill');
  Object.assign(run.params, p, { eventName: EVENT_NAME });
  const nowMs = Date.now();
  try {
    run.progress(`seeding ${p.events.toLocaleString('en')} events of ${p.users.toLocaleString('en')} users into ClickHouse`);
    const seeded = await runClickhouseTask(
      {
        task: 'seed-events',
        dataDir: run.dataDir,
        projectId: PROJECT_ID,
        events: p.events,
        users: p.users,
        eventNames: [...EVENT_NAMES],
        spreadDays: p.spreadDays,
        batchRows: p.seedBatchRows,
        nowMs,
      },
      (s) => run.progress(s),
    );
    run.notes.push(`seeded in ${seeded.result.seconds.toFixed(1)} s (${seeded.result.activeParts} active parts)`);

    run.progress('baseline: the bare GROUP BY');
    const base = await runClickhouseTask({
      task: 'group-by',
      dataDir: run.dataDir,
      projectId: PROJECT_ID,
      eventName: EVENT_NAME,
      windowDays: p.windowDays,
      nowMs,
    });
    run.notes.push(
      `baseline GROUP BY: ${base.result.users.toLocaleString('en')} users, ${base.result.total.toLocaleString('en')} events counted, ${base.result.seconds.toFixed(2)} s (peak RSS ${base.peakRssMb.toFixed(0)} MB)`,
    );

    await seedProfiles(
      run.redis,
      run.keys,
      PROJECT_ID,
      p.users,
      userIdOf,
      (i) => ({ userProperties: { plan: { stringValue: i % 3 === 0 ? 'pro' : 'basic' }, age: { longValue: String(18 + (i % 60)) } } }),
      (done) => {
        if (done % 20_000 === 0 || done === p.users) run.progress(`seeded ${done.toLocaleString('en')} / ${p.users.toLocaleString('en')} profiles`);
      },
    );

    const svc = await run.startService();
    const keys = await svc.createProject(PROJECT_ID);
    const queue = new Queue(QUEUE.aggregations, { connection: run.redis, prefix: bullPrefix(run.prefix) });
    run.progress(`new field: daily count of "${EVENT_NAME}" over LAST_${p.windowDays}D`);
    const started = performance.now();
    const measured = await run.withCpu(
      () => svc.sampler.cpuSeconds(),
      async () => {
        const created = await svc.call<{ dataFields: { dataFieldId: string }[] }>('GetDataFields', keys.management, {
          projectId: PROJECT_ID,
          dataFieldParams: [{ eventDataFieldParams: { eventSchemaName: EVENT_NAME, dailyCountAggregation: { windowName: `LAST_${p.windowDays}D` } } }],
        });
        const id = created.dataFields[0].dataFieldId;
        return { dataFieldId: id, job: await waitForBackfill(queue, id, p.maxWaitSec * 1000, (s) => run.progress(s)) };
      },
    );
    const seconds = (performance.now() - started) / 1000;
    const { dataFieldId, job } = measured.value;
    run.notes.push(
      `CPU during the backfill: service ${measured.serviceCores.toFixed(2)} cores (ClickHouse included), Redis ${measured.redisCores.toFixed(2)} cores`,
    );
    await queue.close();
    if (job.state !== 'completed') throw new Error(`the backfill job failed: ${job.failedReason}`);
    if (job.processedOn && job.finishedOn) {
      run.notes.push(
        `the recompute job ran ${((job.finishedOn - job.processedOn) / 1000).toFixed(2)} s; the rest of the ${seconds.toFixed(2)} s was GetDataFields and the start of the job (a catalogue change triggers the backfill poll)`,
      );
    }

    const profiles = await readProfiles(
      run.redis,
      run.keys,
      PROJECT_ID,
      Array.from({ length: p.users }, (_, i) => userIdOf(i)),
    );
    const prefix = dailyCountPrefix(dataFieldId);
    let withValue = 0;
    let total = 0;
    for (const prof of profiles) {
      const counts = Object.entries(prof.fields).filter(([k]) => k.startsWith(prefix));
      if (counts.length > 0) withValue++;
      for (const [, v] of counts) total += Number(v);
    }
    run.notes.push(
      `profiles with the new value: ${withValue.toLocaleString('en')} of ${p.users.toLocaleString('en')}, counts sum to ${total.toLocaleString('en')}`,
    );
    if (withValue !== base.result.users || total !== base.result.total) {
      throw new Error(`the profiles hold ${withValue} users / ${total} events, the GROUP BY ${base.result.users} / ${base.result.total}`);
    }
    const svcStop = await run.stopService(svc);

    return run.result({
      seconds: figure({
        label: 'new field → every profile has its value',
        unit: 's',
        value: seconds,
        baseline: base.result.seconds,
        baselineLabel: 'the bare ClickHouse GROUP BY computing the same counts',
        better: 'lower',
        target: { on: 'ratio', bound: 'max', limit: 2 },
      }),
      ...rssFigures(svcStop, svc.readyRss, {}),
    });
  } finally {
    await run.close();
  }
}

export const backfillScenario: Scenario = {
  name: 'backfill',
  summary: '10,000,000 stored events of 100,000 users, then a new event data field, vs the bare ClickHouse GROUP BY',
  run: runBackfill,
};
