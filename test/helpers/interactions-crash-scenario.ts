import { expect } from 'vitest';
import { capCounterField } from '../../shared/profiles/profile-layout.js';
import { call, createProjectWithKeys, retryUnavailable, type ProjectKeys, type TestApp } from './context.js';
import { pendingJobs, type CrashHarness } from './crash-harness.js';

const USERS = 20;
/**
 * Interactions are sent in waves, each wave's calls at once and the next a moment after the
 * previous one was answered: concurrent calls are merged into jobs of up to 100 interactions (as
 * LogEvents merges requests), and the waves keep the queue at 40 jobs or more, so the workers
 * (4 at a time, see INTERACTIONS_CRASH_WORKER_CONCURRENCY) are killed eight times with jobs still
 * to do.
 */
const WAVES = 40;
const PER_WAVE = 15;
const SENT = WAVES * PER_WAVE;
const SURFACES = ['home', 'feed'] as const;
const TYPES = ['VIEWED', 'VIEWED', 'CLICKED', 'DISMISSED'] as const;
const DAY = 86_400_000;

/**
 * The workers' concurrency for this scenario: merged interaction jobs are few, and 16 workers
 * would take them at once and complete them together with their shared insert, leaving nothing
 * for a kill to interrupt; 4 at a time complete in waves, and each kill comes with jobs still to
 * do.
 */
export const INTERACTIONS_CRASH_WORKER_CONCURRENCY = 4;

interface Interaction {
  userId: string;
  treatmentId: string;
  treatmentTrackingId: string;
  surface: string;
  interactionType: string;
  atMs: number;
}

async function ok(t: TestApp, keys: ProjectKeys, op: string, body: Record<string, unknown>): Promise<any> {
  const r = await call(t, op, keys.management, { projectId: keys.projectId, ...body });
  if (r.status !== 200) throw new Error(`${op}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

/**
 * Two surfaces and two treatments shown on both; `capped` has a VIEWED frequency cap (never
 * reached), so its views are counted in the users' profiles.
 */
async function catalog(t: TestApp, keys: ProjectKeys): Promise<{ capped: string; plain: string }> {
  for (const name of SURFACES) await ok(t, keys, 'InsertSurface', { name });
  await ok(t, keys, 'InsertTreatmentType', {
    treatmentTypeName: 'card',
    lastModifiedBy: 't',
    surfaces: SURFACES.map((surfaceName) => ({ surfaceName })),
    contentFieldTypes: [{ fieldName: 'title', maximumLengthAllowed: 100, isPerLanguage: true }],
  });
  const treatment = async (name: string, extra: Record<string, unknown>) =>
    (
      await ok(t, keys, 'InsertTreatment', {
        name,
        description: name,
        treatmentTypeName: 'card',
        lastModifiedBy: 't',
        startTimestamp: new Date(Date.now() - DAY).toISOString(),
        shouldPublish: true,
        content: { contentByLanguage: [{ languageCode: { languageCode: 'en' }, contentFields: [{ fieldName: 'title', stringValue: name }] }] },
        ...extra,
      })
    ).treatment.treatmentId as string;
  const capped = await treatment('capped', { frequencyCap: { maxCount: 1000, windowName: 'LAST_7D', countOf: 'VIEWED' } });
  const plain = await treatment('plain', {});
  return { capped, plain };
}

/**
 * `SENT` interactions over `USERS` users, both treatments, both surfaces and three types, each
 * with a tracking id of its own (`<treatmentId>_r<n>`, as delivery builds them) and a time of its
 * own within the last hour.
 */
function interactions(capped: string, plain: string, base: number): Interaction[] {
  return Array.from({ length: SENT }, (_, i) => {
    const k = Math.floor(i / USERS);
    const treatmentId = k % 3 === 2 ? plain : capped;
    return {
      userId: `user-${i % USERS}`,
      treatmentId,
      treatmentTrackingId: `${treatmentId}_r${i}`,
      surface: SURFACES[Math.floor(k / 2) % 2],
      interactionType: TYPES[(k + i) % TYPES.length],
      atMs: base + i * 1000,
    };
  });
}

/** How many of `list` each key counts (skipping undefined keys). */
function tally(list: Interaction[], key: (x: Interaction) => string | undefined): Map<string, number> {
  const counts = new Map<string, number>();
  for (const x of list) {
    const k = key(x);
    if (k !== undefined) counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  return counts;
}

/**
 * Interactions queued in waves, then workers SIGKILLed eight times (within and between jobs) and
 * restarted: every interaction must be stored exactly once, and counted exactly once in its
 * user's profile (data fields, the VIEWED frequency-cap counter) and in the project's ranking
 * counters. The counters are applied incrementally by the workers, so an interaction applied
 * twice, or lost, would show in them.
 */
export async function interactionsSurviveWorkerKills(h: CrashHarness): Promise<void> {
  const { t } = h;
  const keys = await createProjectWithKeys(t);
  const { projectId } = keys;
  const { capped, plain } = await catalog(t, keys);
  const count = (extra: Record<string, unknown>) => ({ treatmentDataFieldParams: { dailyCountAggregation: { windowName: 'LAST_7D' }, ...extra } });
  const fields = await ok(t, keys, 'GetDataFields', {
    dataFieldParams: [
      count({ treatmentInteractionType: 'VIEWED' }),
      count({ treatmentInteractionType: 'CLICKED', surfaceName: 'home' }),
      count({ treatmentInteractionType: 'DISMISSED', treatmentId: plain }),
      { treatmentDataFieldParams: { treatmentInteractionType: 'VIEWED', latestTimestampAggregation: {} } },
    ],
  });
  const [viewsField, homeClicksField, plainDismissalsField, lastViewField] = fields.dataFields.map((f: { dataFieldId: string }) => f.dataFieldId);

  const started = Date.now();
  const sent = interactions(capped, plain, started - 3_600_000);
  for (let w = 0; w < WAVES; w++) {
    const answers = await Promise.all(
      sent
        .slice(w * PER_WAVE, (w + 1) * PER_WAVE)
        .map(({ atMs, ...x }) =>
          retryUnavailable(() => call(t, 'LogTreatmentInteraction', keys.delivery, { projectId, ...x, interactionTimeMicros: String(atMs * 1000) })),
        ),
    );
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
    await new Promise((r) => setTimeout(r, 20));
  }
  const pending = pendingJobs(t.ctx.ingestion.ingest.interactionsQueue);
  // One job per interaction, or concurrent interactions merged into jobs of up to 100.
  const total = await pending();
  expect(total).toBeGreaterThanOrEqual(SENT / 100);
  expect(total).toBeLessThanOrEqual(SENT);

  // Three times twice, killed once a few more interactions are applied (their ranking script, the
  // last step, has run): about one kill in three lands inside running jobs, some of whose
  // interactions are applied and the others not, and the restarted workers must redo only the
  // others. Then twice once jobs have completed: a merged job's interactions share an insert and
  // complete together, so these kills land between jobs, on jobs fetched but not yet started.
  const ranked = sent.filter((x) => x.interactionType !== 'DISMISSED').length;
  const unranked = async () => {
    const counters = await t.ctx.redis.hgetall(t.ctx.keys.rankingStats(projectId));
    return ranked - Object.values(counters).reduce((n, v) => n + Number(v), 0);
  };
  for (let round = 0; round < 3; round++) await h.killTwiceMidway(unranked, 100, 60_000);
  await h.killTwiceMidway(pending, 20, 60_000);
  expect(await pending()).toBeGreaterThan(0);
  await h.restartAndDrain(pending, 90_000);
  expect(await h.stopWorkers()).toBe(0);

  // Rows: one per call (its identity `user_id, dedup_key`), each tracking id once, none dead-lettered.
  const [row] = await h.warehouseRows<{ n: string; u: string; tracking: string }>(
    `SELECT count() AS n, uniqExact(user_id, dedup_key) AS u, uniqExact(treatment_tracking_id) AS tracking
     FROM interactions FINAL WHERE project_id = {p:String}`,
    { p: projectId },
  );
  expect(Number(row.n)).toBe(SENT);
  expect(Number(row.u)).toBe(SENT);
  expect(Number(row.tracking)).toBe(SENT);
  const [dead] = await h.warehouseRows<{ n: string }>('SELECT count() AS n FROM dead_letters WHERE project_id = {p:String}', { p: projectId });
  expect(Number(dead.n)).toBe(0);

  // Profiles: every user's data fields and VIEWED cap counter count each interaction once.
  const views = tally(sent, (x) => (x.interactionType === 'VIEWED' ? x.userId : undefined));
  const homeClicks = tally(sent, (x) => (x.interactionType === 'CLICKED' && x.surface === 'home' ? x.userId : undefined));
  const plainDismissals = tally(sent, (x) => (x.interactionType === 'DISMISSED' && x.treatmentId === plain ? x.userId : undefined));
  const cappedViews = tally(sent, (x) => (x.interactionType === 'VIEWED' && x.treatmentId === capped ? x.userId : undefined));
  const lastView = new Map<string, number>();
  for (const x of sent) if (x.interactionType === 'VIEWED') lastView.set(x.userId, Math.max(lastView.get(x.userId) ?? 0, x.atMs));
  for (let u = 0; u < USERS; u++) {
    const userId = `user-${u}`;
    const p = await t.ctx.profiles.profiles.get(projectId, userId);
    const values = await t.ctx.aggregation.dataFieldValues(projectId, p);
    expect({ user: userId, views: values[viewsField], homeClicks: values[homeClicksField], plainDismissals: values[plainDismissalsField] }).toEqual({
      user: userId,
      views: String(views.get(userId) ?? 0),
      homeClicks: String(homeClicks.get(userId) ?? 0),
      plainDismissals: String(plainDismissals.get(userId) ?? 0),
    });
    expect(values[lastViewField]).toBe(new Date(lastView.get(userId)!).toISOString());
    // the interactions' times span at most a UTC midnight: the days of the last hour
    let counted = 0;
    for (let day = Math.floor((started - 3_600_000) / DAY); day <= Math.floor(Date.now() / DAY); day++)
      counted += Number(p.fields[capCounterField('VIEWED', capped, day)] ?? 0);
    expect({ user: userId, cappedViews: counted }).toEqual({ user: userId, cappedViews: cappedViews.get(userId) ?? 0 });
  }

  // Ranking: views and actions (CLICKED) per surface and treatment, each interaction once.
  const expected: Record<string, string> = {};
  for (const [k, n] of tally(sent, (x) => (x.interactionType === 'VIEWED' ? `v:${x.surface}:${x.treatmentId}` : undefined))) expected[k] = String(n);
  for (const [k, n] of tally(sent, (x) => (x.interactionType === 'CLICKED' ? `a:${x.surface}:${x.treatmentId}` : undefined))) expected[k] = String(n);
  expect(Object.keys(expected)).toHaveLength(8);
  expect(await t.ctx.redis.hgetall(t.ctx.keys.rankingStats(projectId))).toEqual(expected);
}
