import { runClickhouseTask } from '../lib/clickhouse-task.js';
import { figure, rssFigures, type Scenario, type ScenarioContext, type ScenarioResult, type Size } from '../lib/scenario.js';
import { ScenarioRun } from '../lib/scenario-run.js';
import { PROJECT_ID } from './log-events.js';

export interface ReportParams {
  decisions: number;
  users: number;
  interactions: number;
  /** `purchase` and `page_view` events (half each): the conversions. */
  events: number;
  holdoutPct: number;
  spreadDays: number;
  seedBatchRows: number;
  /** GetTreatmentReport calls measured (after one warm-up call); the figure is their median. */
  calls: number;
}

export const REPORT_SIZES: Record<Size, ReportParams> = {
  tiny: { decisions: 20_000, users: 1_000, interactions: 2_000, events: 4_000, holdoutPct: 20, spreadDays: 29, seedBatchRows: 10_000, calls: 1 },
  full: {
    decisions: 10_000_000,
    users: 100_000,
    interactions: 2_000_000,
    events: 2_000_000,
    holdoutPct: 20,
    spreadDays: 29,
    seedBatchRows: 1_000_000,
    calls: 5,
  },
};

/**
 * GetTreatmentReport over 10,000,000 decisions of 100,000 users (with 2,000,000
 * interactions and 2,000,000 events), seeded straight into the service's ClickHouse before it
 * starts; the figure is the median time of the whole call (HTTP, Redis reads, the ClickHouse
 * query). Baseline: the bare per-user scan of the treatment's decisions (first decision and
 * group), in its own process on the same data, which any report has to do.
 */
export async function runReport(ctx: ScenarioContext): Promise<ScenarioResult> {
  const p = REPORT_SIZES[ctx.size];
  const run = ScenarioRun.open(ctx, 'report');
  Object.assign(run.params, p);
  const nowMs = Date.now();
  // The first treatment of a fresh Redis prefix gets id 1 (checked below): the seeded rows name it.
  const treatmentId = '1';
  try {
    run.progress(
      `seeding ${p.events.toLocaleString('en')} events, ${p.decisions.toLocaleString('en')} decisions and ${p.interactions.toLocaleString('en')} interactions of ${p.users.toLocaleString('en')} users`,
    );
    const events = await runClickhouseTask(
      {
        task: 'seed-events',
        dataDir: run.dataDir,
        projectId: PROJECT_ID,
        events: p.events,
        users: p.users,
        eventNames: ['purchase', 'page_view'],
        spreadDays: p.spreadDays,
        batchRows: p.seedBatchRows,
        nowMs,
      },
      (s) => run.progress(s),
    );
    const seeded = await runClickhouseTask(
      {
        task: 'seed-decisions',
        dataDir: run.dataDir,
        projectId: PROJECT_ID,
        treatmentId,
        decisions: p.decisions,
        interactions: p.interactions,
        users: p.users,
        holdoutPct: p.holdoutPct,
        spreadDays: p.spreadDays,
        batchRows: p.seedBatchRows,
        nowMs,
      },
      (s) => run.progress(s),
    );
    run.notes.push(`seeded in ${(events.result.seconds + seeded.result.seconds).toFixed(1)} s`);

    run.progress('baseline: the bare per-user scan of the decisions');
    const base = await runClickhouseTask({ task: 'report-baseline', dataDir: run.dataDir, projectId: PROJECT_ID, treatmentId });
    run.notes.push(`baseline: ${base.result.users.toLocaleString('en')} users in ${base.result.seconds.toFixed(2)} s`);

    const svc = await run.startService();
    const keys = await svc.createProject(PROJECT_ID);
    await svc.call('InsertSurface', keys.management, { projectId: PROJECT_ID, name: 'home' });
    await svc.call('InsertTreatmentType', keys.management, {
      projectId: PROJECT_ID,
      treatmentTypeName: 'card',
      lastModifiedBy: 'bench',
      surfaces: [{ surfaceName: 'home' }],
      contentFieldTypes: [{ fieldName: 'title', maximumLengthAllowed: 100, isPerLanguage: true }],
    });
    const schema = await svc.call<{ eventSchema: { eventId: string } }>('InsertEventSchema', keys.management, { projectId: PROJECT_ID, eventName: 'purchase' });
    const created = await svc.call<{ treatment: { treatmentId: string } }>('InsertTreatment', keys.management, {
      projectId: PROJECT_ID,
      name: 'measured',
      description: 'the treatment of the seeded decisions',
      treatmentTypeName: 'card',
      lastModifiedBy: 'bench',
      startTimestamp: new Date(nowMs - 60 * 86_400_000).toISOString(),
      shouldPublish: true,
      content: { contentByLanguage: [{ languageCode: { languageCode: 'en' }, contentFields: [{ fieldName: 'title', stringValue: 'x' }] }] },
      targetAction: { eventId: schema.eventSchema.eventId },
    });
    if (created.treatment.treatmentId !== treatmentId)
      throw new Error(`expected the first treatment to get id ${treatmentId}, got ${created.treatment.treatmentId}`);

    type Report = { report: { groups: { group: string; users: number; conversions?: number }[]; uplift?: unknown } };
    const body = { projectId: PROJECT_ID, treatmentId };
    run.progress('warm-up call');
    const first = await svc.call<Report>('GetTreatmentReport', keys.management, body);
    const times: number[] = [];
    const measured = await run.withCpu(
      () => svc.sampler.cpuSeconds(),
      async () => {
        for (let i = 0; i < p.calls; i++) {
          const started = performance.now();
          await svc.call<Report>('GetTreatmentReport', keys.management, body);
          times.push((performance.now() - started) / 1000);
        }
      },
    );
    times.sort((a, b) => a - b);
    const median = times[Math.floor(times.length / 2)];
    run.notes.push(
      `GetTreatmentReport: ${times.map((t) => t.toFixed(2)).join(', ')} s (warm-up excluded); CPU: service ${measured.serviceCores.toFixed(2)} cores`,
    );
    const users = first.report.groups.reduce((n, g) => n + g.users, 0);
    run.notes.push(
      `groups: ${first.report.groups.map((g) => `${g.group} ${g.users.toLocaleString('en')} users, ${g.conversions ?? 0} conversions`).join('; ')}`,
    );
    if (users !== base.result.users) throw new Error(`the report has ${users} users, the baseline ${base.result.users}`);
    const svcStop = await run.stopService(svc);

    return run.result({
      seconds: figure({
        label: 'GetTreatmentReport (median call)',
        unit: 's',
        value: median,
        baseline: base.result.seconds,
        baselineLabel: 'the bare per-user scan of the treatment’s decisions',
        better: 'lower',
        target: { on: 'value', bound: 'max', limit: 2 },
      }),
      ...rssFigures(svcStop, svc.readyRss, {}),
    });
  } finally {
    await run.close();
  }
}

export const reportScenario: Scenario = {
  name: 'report',
  summary: 'GetTreatmentReport over 10,000,000 decisions of 100,000 users, vs the bare per-user scan of the decisions',
  run: runReport,
};
