import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import { bullPrefix, QUEUE } from '../../shared/platform/queues.js';
import { capCounterField } from '../../shared/profiles/profile-layout.js';
import { createProjectWithKeys, call, waitUntil, type TestApp, type ProjectKeys } from '../helpers/context.js';
import { pendingJobs, startCrashHarness, type CrashHarness } from '../helpers/crash-harness.js';
import { queueConnection } from '../../shared/platform/redis/redis.js';

/**
 * The decision log under the crash guarantees of ingestion: the workers process is SIGKILLed twice while it stores decision
 * jobs, then restarted. Every (responseId, treatmentId, surface) is stored exactly once and the
 * RETURNED frequency-cap counters of every user equal their decisions (a retried job never counts
 * twice). The API (the decision log's producer) runs in this process.
 */
const USERS = 20;
const RESPONSES = 600;
const DAY = 86_400_000;

let h: CrashHarness;
let t: TestApp;
let k: ProjectKeys;
let queue: Queue;

async function ok(op: string, key: string, body: Record<string, unknown>): Promise<any> {
  const r = await call(t, op, key, { projectId: k.projectId, ...body });
  if (r.status !== 200) throw new Error(`${op}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

beforeAll(async () => {
  // decisions sent every millisecond: many small jobs, so the kills land among them
  h = await startCrashHarness('deccrash', { apiEnv: { DECISION_LOG_FLUSH_MS: '1' } });
  t = h.t;
  k = await createProjectWithKeys(t);
  queue = new Queue(QUEUE.decisions, { connection: queueConnection(t.ctx.redis), prefix: bullPrefix(h.prefix), skipVersionCheck: true });
  for (const name of ['home', 'feed']) await ok('InsertSurface', k.management, { name });
  await ok('InsertTreatmentType', k.management, {
    treatmentTypeName: 'card',
    lastModifiedBy: 't',
    surfaces: [{ surfaceName: 'home' }, { surfaceName: 'feed' }],
    contentFieldTypes: [{ fieldName: 'title', maximumLengthAllowed: 100, isPerLanguage: true }],
  });
  for (const name of ['a', 'b', 'c']) {
    await ok('InsertTreatment', k.management, {
      name,
      description: name,
      treatmentTypeName: 'card',
      lastModifiedBy: 't',
      startTimestamp: new Date(Date.now() - DAY).toISOString(),
      shouldPublish: true,
      // a RETURNED cap (never reached): its decisions are counted in the users' profiles
      frequencyCap: { maxCount: 1000, windowName: 'LAST_7D', countOf: 'RETURNED' },
      content: { contentByLanguage: [{ languageCode: { languageCode: 'en' }, contentFields: [{ fieldName: 'title', stringValue: name }] }] },
    });
  }
}, 60_000);

afterAll(async () => {
  await queue?.close();
  await h?.close();
}, 60_000);

describe('decision-log workers killed mid-batch', () => {
  it('stores each decision exactly once and counts it once after two SIGKILLs', async () => {
    // expected: per user and treatment, how many times it was returned
    const started = Date.now();
    const expected = new Map<string, number>();
    const identities = new Set<string>();
    for (let i = 0; i < RESPONSES; i += 2) {
      const rs = await Promise.all(
        [0, 1].map((j) =>
          ok('GetTreatments', k.delivery, {
            userId: `user-${(i + j) % USERS}`,
            surfaces: [
              { surface: 'home', maximumTreatmentCount: 2 },
              { surface: 'feed', maximumTreatmentCount: 1 },
            ],
          }),
        ),
      );
      for (const [j, r] of rs.entries()) {
        for (const u of r.userTreatments) {
          const key = `user-${(i + j) % USERS}/${u.treatmentId}`;
          expected.set(key, (expected.get(key) ?? 0) + 1);
          identities.add(`${r.responseId}/${u.treatmentId}/${u.surface}`);
        }
      }
    }
    expect(identities.size).toBe(RESPONSES * 3);
    const pending = pendingJobs(queue);
    // the producer's last turns land
    await waitUntil(async () => (await pending()) >= 50, 20_000);

    await h.killTwiceMidway(pending, 10, 90_000);
    expect(await pending()).toBeGreaterThan(0);
    await h.restartAndDrain(pending, 120_000);
    // This process has no ClickHouse: ListDecisions and GetTreatmentReport reach the workers
    // process over the rpc queue.
    const listed = (await ok('ListDecisions', k.management, { userId: 'user-0' })).decisions;
    expect(listed).toHaveLength(20);
    expect(listed.every((d: any) => d.userId === 'user-0' && d.outcome === 'RETURNED')).toBe(true);
    const [someTreatment] = [...expected.keys()][0].split('/').slice(1);
    const { report } = await ok('GetTreatmentReport', k.management, { treatmentId: someTreatment });
    expect(report.groups[0]).toMatchObject({ group: 'TREATED', users: USERS });
    expect(report.groups[1]).toMatchObject({ group: 'HOLDOUT', users: 0 });
    await h.stopWorkers();

    const rows = await h.warehouseRows<{ response_id: string; treatment_id: string; surface: string }>(
      'SELECT response_id, treatment_id, surface FROM decisions FINAL WHERE project_id = {p:String}',
      { p: k.projectId },
    );
    const stored = rows.map((r) => `${r.response_id}/${r.treatment_id}/${r.surface}`);
    expect(stored.length).toBe(identities.size);
    expect(new Set(stored)).toEqual(identities);
    for (let u = 0; u < USERS; u++) {
      const p = await t.ctx.profiles.profiles.get(k.projectId, `user-${u}`);
      for (const [key, n] of expected) {
        if (!key.startsWith(`user-${u}/`)) continue;
        const treatmentId = key.slice(key.indexOf('/') + 1);
        // the run may cross midnight UTC: the days since the test started
        let counted = 0;
        for (let day = Math.floor(started / DAY); day <= Math.floor(Date.now() / DAY); day++)
          counted += Number(p.fields[capCounterField('RETURNED', treatmentId, day)] ?? 0);
        expect(counted).toBe(n);
      }
    }
  }, 300_000);
});
