import { expect } from 'vitest';
import { call, createProjectWithKeys, retryUnavailable } from './context.js';
import { pendingJobs, type CrashHarness } from './crash-harness.js';
import { MERGED_JOB_EVENTS } from '../../shared/ingestion/index.js';

const USERS = 20;
const REQUESTS_PER_USER = 15;
const EVENTS_PER_REQUEST = 20;

/**
 * `users` × `requests` LogEvents bodies of purchases, each user's newest first. Every request
 * repeats one insertId-carrying event of the user's previous request: the duplicates must
 * collapse. Each request sets `last` to its own sequence number, sent out of order, so
 * last-write-wins must pick the highest timestamp whatever order jobs ran in.
 */
export function* overlappingRequests(users: number, requests: number, eventsPerRequest: number, base: number) {
  for (let u = 0; u < users; u++) {
    const userId = `user-${u}`;
    for (let r = requests - 1; r >= 0; r--) {
      const events = Array.from({ length: eventsPerRequest }, (_, e) => ({
        eventName: 'purchase',
        clientEventTimestamp: new Date(base + r * 60_000 + e).toISOString(),
        insertId: e === 0 && r > 0 ? `${userId}-${r - 1}-1` : `${userId}-${r}-${e}`,
        userProperties: e === eventsPerRequest - 1 ? { last: { longValue: String(r) } } : undefined,
      }));
      yield { u, r, userId, events };
    }
  }
}

/**
 * Events queued at once, then workers SIGKILLed twice in the middle of batches and restarted:
 * every event must be stored exactly once and every profile be correct. Counters are applied
 * incrementally by the workers, so a job applied twice would show in them.
 */
export async function eventsSurviveWorkerKills(h: CrashHarness): Promise<void> {
  const { t } = h;
  const keys = await createProjectWithKeys(t);
  const { projectId } = keys;
  const fields = await call(t, 'GetDataFields', keys.management, {
    projectId,
    dataFieldParams: [
      { eventDataFieldParams: { eventSchemaName: 'purchase', dailyCountAggregation: { windowName: 'LAST_365D' } } },
      { eventDataFieldParams: { eventSchemaName: 'purchase', firstTimestampAggregation: {} } },
    ],
  });
  const [countField, firstField] = fields.body.dataFields.map((f: { dataFieldId: string }) => f.dataFieldId);

  const base = Date.now() - 30 * 86_400_000;
  const sends = [...overlappingRequests(USERS, REQUESTS_PER_USER, EVENTS_PER_REQUEST, base)].map(({ userId, events }) =>
    retryUnavailable(() => call(t, 'LogEvents', keys.logEvents, { projectId, userId, events })),
  );
  const answers = await Promise.all(sends);
  expect(answers.every((a) => a.status === 200)).toBe(true);
  const pending = pendingJobs(t.ctx.ingestion.ingest.eventsQueue);
  // Concurrent requests are merged into jobs of up to MERGED_JOB_EVENTS (25 requests of 20 here): jobs of 500
  // events, a few at a time under the workers' events budget, so each kill finds jobs in flight.
  const total = await pending();
  expect(total).toBeGreaterThanOrEqual((USERS * REQUESTS_PER_USER * EVENTS_PER_REQUEST) / MERGED_JOB_EVENTS);
  expect(total).toBeLessThanOrEqual(USERS * REQUESTS_PER_USER);

  await h.killTwiceMidway(pending, 20, 60_000);
  expect(await pending()).toBeGreaterThan(0);
  await h.restartAndDrain(pending, 90_000);
  expect(await h.stopWorkers()).toBe(0);

  // Distinct events: per user, the first request has 20 and each later one 19 new ones.
  const perUser = EVENTS_PER_REQUEST + (REQUESTS_PER_USER - 1) * (EVENTS_PER_REQUEST - 1);
  const [row] = await h.warehouseRows<{ n: string; u: string }>(
    'SELECT count() AS n, uniqExact(user_id, dedup_key) AS u FROM events FINAL WHERE project_id = {p:String}',
    { p: projectId },
  );
  expect(Number(row.n)).toBe(USERS * perUser);
  expect(Number(row.u)).toBe(USERS * perUser);
  for (let u = 0; u < USERS; u++) {
    const p = await t.ctx.profiles.profiles.get(projectId, `user-${u}`);
    expect(p.userProperties.last).toEqual({ longValue: String(REQUESTS_PER_USER - 1) });
    const values = await t.ctx.aggregation.dataFieldValues(projectId, p);
    expect(values[countField]).toBe(String(perUser));
    expect(values[firstField]).toBe(new Date(base).toISOString());
  }
}
