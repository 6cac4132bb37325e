import { expect } from 'vitest';
import { call, createProjectWithKeys, retryUnavailable } from './context.js';
import { pendingJobs, type CrashHarness } from './crash-harness.js';

const USERS = 10;

/**
 * The workers' concurrency for this scenario: its requests make about 12 merged jobs, which 16
 * workers would take at once and complete together with their shared insert (events gather
 * 100 ms), leaving nothing for a kill to interrupt; 4 at a time complete in waves, and each kill
 * comes after a wave with jobs still to do.
 */
export const MERGE_CRASH_WORKER_CONCURRENCY = 4;

/**
 * The API of this scenario merges LogEvents requests into jobs of 100 events, not the default
 * 500: its 1,200 events make about 12 jobs instead of 3, enough for two kills mid-way. Exactly-once
 * for jobs of 500 is the events scenario's (events-crash-scenario.ts).
 */
export const MERGE_CRASH_API_ENV: Readonly<Record<string, string>> = { MERGED_JOB_EVENTS: '100' };
const REQUESTS = 6;
const EVENTS = 10;

/**
 * Signed-out users' events, the signed-in events that carry both ids (on every request, as
 * clients do) and more signed-out activity after the sign-in, all queued at once, then processed
 * by a workers process that is SIGKILLed twice mid-way and restarted. Every user must end with one
 * profile holding the sum of both histories exactly (a merge or job applied twice, or a pre-login
 * event lost in the race with its merge, would show), both ids must read it, and ClickHouse must
 * hold every event under the user exactly once.
 */
export async function mergesSurviveWorkerKills(h: CrashHarness): Promise<void> {
  const { t } = h;
  const keys = await createProjectWithKeys(t);
  const { projectId } = keys;
  const fields = await call(t, 'GetDataFields', keys.management, {
    projectId,
    dataFieldParams: [{ eventDataFieldParams: { eventSchemaName: 'purchase', dailyCountAggregation: { windowName: 'LAST_365D' } } }],
  });
  const countField: string = fields.body.dataFields[0].dataFieldId;

  const base = Date.now() - 2 * 86_400_000;
  const sends: Promise<{ status: number }>[] = [];
  const request = (userId: string, tag: string, r: number, temp?: string) => {
    const events = Array.from({ length: EVENTS }, (_, e) => ({
      eventName: 'purchase',
      // the pre-login id's events are older; the user's own are later
      clientEventTimestamp: new Date(base + (tag === 'u' ? 3_600_000 : 0) + r * 60_000 + e).toISOString(),
      insertId: `${userId}-${r}-${e}`,
      preLoginTempUserId: temp !== undefined && e === 0 ? temp : undefined,
      userProperties: e === EVENTS - 1 ? { [`${tag}_last`]: { longValue: String(r) }, shared: { stringValue: `${tag}${r}` } } : undefined,
    }));
    sends.push(retryUnavailable(() => call(t, 'LogEvents', keys.logEvents, { projectId, userId, events })));
  };
  for (let u = 0; u < USERS; u++) {
    // signed out, then signed in (every request carries the pre-login id), then the pre-login id again
    for (let r = 0; r < REQUESTS / 2; r++) request(`anon-${u}`, 't', r);
    for (let r = 0; r < REQUESTS; r++) request(`user-${u}`, 'u', r, `anon-${u}`);
    for (let r = REQUESTS / 2; r < REQUESTS; r++) request(`anon-${u}`, 't', r);
  }
  const answers = await Promise.all(sends);
  expect(answers.every((a) => a.status === 200)).toBe(true);
  const pending = pendingJobs(t.ctx.ingestion.ingest.eventsQueue);

  await h.killTwiceMidway(pending, 10, 120_000);
  // the kills left work behind (merges among it: every user's requests carry the pre-login id)
  expect(await pending()).toBeGreaterThan(0);
  await h.restartAndDrain(pending, 180_000);
  expect(await h.stopWorkers()).toBe(0);

  const perUser = 2 * REQUESTS * EVENTS;
  for (let u = 0; u < USERS; u++) {
    const p = await t.ctx.profiles.profiles.get(projectId, `user-${u}`);
    expect(p.mergedFrom).toEqual([`anon-${u}`]);
    const values = await t.ctx.aggregation.dataFieldValues(projectId, p);
    expect(values[countField]).toBe(String(perUser));
    // last write wins by timestamp across both histories
    expect(p.userProperties).toMatchObject({
      t_last: { longValue: String(REQUESTS - 1) },
      u_last: { longValue: String(REQUESTS - 1) },
      shared: { stringValue: `u${REQUESTS - 1}` },
    });
    const alias = await t.ctx.profiles.profiles.get(projectId, `anon-${u}`);
    expect(alias.mergedInto).toBe(`user-${u}`);
    expect(await t.ctx.aggregation.dataFieldValues(projectId, alias)).toEqual(values);
  }
  const rows = await h.warehouseRows<{ user_id: string; n: string; u: string }>(
    `SELECT user_id, count() AS n, uniqExact(dedup_key) AS u FROM events FINAL WHERE project_id = {p:String} AND startsWith(user_id, 'user-') GROUP BY user_id ORDER BY user_id`,
    { p: projectId },
  );
  expect(rows).toHaveLength(USERS);
  for (const row of rows) {
    expect(Number(row.n)).toBe(perUser);
    expect(Number(row.u)).toBe(perUser);
  }
}
