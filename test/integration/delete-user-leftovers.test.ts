import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, projectWithKeys, type TestService, v1Calls } from '../helpers/service.js';
import { waitUntil } from '../helpers/context.js';
import { INGEST_JOB_OPTIONS } from '../../shared/platform/queues.js';
import type { EventsBatchJob, EventsJob } from '../../shared/ingestion/jobs.js';
import { UserDeletionStore } from '../../shared/profiles/user-deletion.store.js';
import { DeadLetterSink, MAX_DEAD_LETTER_PAYLOAD_BYTES } from '../../workers/ingestion/dead-letter-sink.js';
import { createProtoCodec } from '../../shared/ingestion/proto.codec.js';

/**
 * What DeleteUserData leaves behind besides profiles and rows: dead letters of every path (a
 * LogEvents request, an interaction, a decision-log batch naming several users, a Pub/Sub message,
 * a payload cut at 64 KiB before the user's id) and the ingest jobs Redis keeps for retries (failed
 * and delayed jobs, a merged job shared with another user). Whole service, embedded ClickHouse.
 */
let s: TestService;
let k: Awaited<ReturnType<typeof projectWithKeys>>;
const { v1 } = v1Calls(
  () => s,
  () => k.projectId,
);

const GONE = 'gone-user';
const STAYS = 'stays-user';

beforeAll(async () => {
  s = await startTestService();
  k = await projectWithKeys(s, 'leftovers');
}, 120_000);

afterAll(async () => {
  await s?.stop();
});

async function deadLetterIds(): Promise<string[]> {
  const rows = await s.clickhouse.query<{ m: string }>('SELECT message_id AS m FROM dead_letters FINAL WHERE project_id = {p:String} ORDER BY m', {
    p: k.projectId,
  });
  return rows.map((r) => r.m);
}

const request = (
  userId: string,
  receivedAt: number,
  events: EventsJob['events'] = [
    { eventName: 'purchase', clientEventTs: receivedAt, insertId: `${userId}-1`, userProperties: { secret: { stringValue: `${userId}'s secret` } } },
  ],
): EventsJob => ({
  kind: 'events',
  projectId: k.projectId,
  userId,
  events,
  origin: { source: 'api' },
  receivedAt,
});

async function deletionFinished(userId: string): Promise<boolean> {
  return !(await new UserDeletionStore(s.ctx.redis, s.ctx.keys).pending(k.projectId)).has(userId);
}

describe('DeleteUserData leftovers', () => {
  it('leaves no dead letter of the user, whatever its path, and keeps the others', async () => {
    const sink = new DeadLetterSink(s.clickhouse, Date.now);
    const now = Date.now();
    const letter = (messageId: string, source: 'log_events' | 'log_treatment_interaction' | 'decision_log' | 'pubsub', payload: unknown, userIds?: string[]) =>
      sink.store({ projectId: k.projectId, messageId, source, reason: 'test', payload, receiveMs: now, ...(userIds ? { userIds } : {}) });
    const codec = createProtoCodec();
    await letter('events-gone', 'log_events', request(GONE, now));
    await letter('events-stays', 'log_events', request(STAYS, now));
    // a request whose user id comes after the first 64 KiB: the kept part does not name the user
    await letter('events-cut', 'log_events', {
      kind: 'events',
      projectId: k.projectId,
      events: [{ eventName: 'x', eventProperties: { blob: { stringValue: 'x'.repeat(MAX_DEAD_LETTER_PAYLOAD_BYTES) } } }],
      userId: GONE,
    });
    await letter('interaction-gone', 'log_treatment_interaction', {
      kind: 'interaction',
      projectId: k.projectId,
      userId: GONE,
      treatmentId: '1',
      treatmentTrackingId: '1_r',
      surface: 'home',
      interactionType: 'VIEWED',
      interactionTimeMicros: '1',
      receivedAt: now,
    });
    await letter('decisions-both', 'decision_log', {
      kind: 'decisions',
      records: [
        { projectId: k.projectId, userId: STAYS, responseId: 'r1', decideTimeMs: now, decisions: [] },
        { projectId: k.projectId, userId: GONE, responseId: 'r2', decideTimeMs: now, decisions: [] },
      ],
    });
    await letter('decisions-stays', 'decision_log', {
      kind: 'decisions',
      records: [{ projectId: k.projectId, userId: STAYS, responseId: 'r3', decideTimeMs: now, decisions: [] }],
    });
    // Pub/Sub keeps the raw message; the intake names the users of one it could decode
    const message = codec.encodeLogEventsRequest({ projectId: k.projectId, userId: GONE, events: [] });
    await letter('pubsub-gone', 'pubsub', message, [GONE]);
    await letter('pubsub-stays', 'pubsub', codec.encodeLogEventsRequest({ projectId: k.projectId, userId: STAYS, events: [] }), [STAYS]);
    expect(await deadLetterIds()).toHaveLength(8);

    expect((await v1('DeleteUserData', k.management, { userId: GONE })).status).toBe(200);
    await waitUntil(() => deletionFinished(GONE), 60_000, 200);
    await waitUntil(async () => (await deadLetterIds()).length === 3, 60_000, 200);
    expect(await deadLetterIds()).toEqual(['decisions-stays', 'events-stays', 'pubsub-stays']);
  }, 120_000);

  it('erases the user from the failed and delayed jobs kept for retries; jobs of others, and of the user after the deletion, stay', async () => {
    const queue = s.ctx.ingestion.ingest.eventsQueue;
    const user = 'queued-user';
    const other = 'queued-other';
    const t0 = Date.now();
    // a job that fails for good: a failed job (kept 30 days for the dashboard) and a dead letter
    const poison = await queue.add('events', { ...request(user, t0), events: 'not a list' } as unknown as EventsJob, {
      ...INGEST_JOB_OPTIONS,
      jobId: `poison-${t0}`,
    });
    await waitUntil(async () => (await queue.getJobState(poison.id!)) === 'failed', 60_000, 100);
    // jobs waiting out a backoff: the user's own, a merged one shared with another user, another user's
    const delayed = { ...INGEST_JOB_OPTIONS, delay: 3_600_000 };
    const own = await queue.add('events', request(user, t0), { ...delayed, jobId: `own-${t0}` });
    const merged = await queue.add(
      'events',
      { kind: 'eventsBatch', requests: [request(other, t0), request(user, t0), request(other, t0, [])] } satisfies EventsBatchJob,
      { ...delayed, jobId: `merged-${t0}` },
    );
    const others = await queue.add('events', request(other, t0), { ...delayed, jobId: `others-${t0}` });
    expect((await v1('DeleteUserData', k.management, { userId: user })).status).toBe(200);
    // accepted after the deletion: a new profile's
    const later = await queue.add('events', request(user, Date.now() + 1000), { ...delayed, jobId: `later-${t0}` });
    await waitUntil(() => deletionFinished(user), 60_000, 200);

    expect(await queue.getJob(poison.id!)).toBeUndefined();
    expect(await queue.getJob(own.id!)).toBeUndefined();
    expect((await queue.getJob(others.id!))?.data).toEqual(others.data);
    expect((await queue.getJob(later.id!))?.data).toEqual(later.data);
    // the merged job keeps its requests at their places (their identities), the user's emptied
    const rewritten = (await queue.getJob(merged.id!))!.data as EventsBatchJob;
    expect(rewritten.requests).toEqual([
      request(other, t0),
      { kind: 'events', projectId: k.projectId, userId: user, events: [], origin: { source: 'api' }, receivedAt: t0 },
      request(other, t0, []),
    ]);
    expect(JSON.stringify(rewritten)).not.toContain(`${user}'s secret`);
    // the failed job's dead letter is gone too
    await waitUntil(async () => !(await deadLetterIds()).includes(poison.id!), 60_000, 200);

    // the rewritten job still runs: the other user's events are stored, nothing of the user
    await merged.promote();
    const count = async (u: string) =>
      Number(
        (
          await s.clickhouse.query<{ n: string }>('SELECT count() AS n FROM events FINAL WHERE project_id = {p:String} AND user_id = {u:String}', {
            p: k.projectId,
            u,
          })
        )[0].n,
      );
    await waitUntil(async () => (await count(other)) === 1, 60_000, 100);
    expect(await count(user)).toBe(0);
    expect((await s.ctx.profiles.profiles.get(k.projectId, user)).userProperties).toEqual({});
  }, 180_000);
});
