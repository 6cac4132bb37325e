import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, projectWithKeys, type TestService, v1Calls } from '../helpers/service.js';
import { ADMIN_TOKEN, waitUntil } from '../helpers/context.js';
import { Queue, Worker } from 'bullmq';
import { bullPrefix, INGEST_JOB_OPTIONS } from '../../shared/platform/queues.js';
import { type EventsJob } from '../../shared/ingestion/jobs.js';
import { enqueueUserDeletion } from '../../shared/profiles/user-deletion.queue.js';
import { createRedis, queueConnection } from '../../shared/platform/redis/redis.js';
import { UserDeletionStore } from '../../shared/profiles/user-deletion.store.js';
import { USER_TABLES } from '../../shared/platform/warehouse/tables.js';
import type { Warehouse } from '../../shared/platform/warehouse/warehouse.js';
import { runAdminCli } from '../../api/cli/admin-cli.js';
import { JobCompletions } from '../helpers/job-completions.js';
import { toClickhouseDateTime64 } from '../../shared/platform/warehouse/clickhouse-datetime.js';
import { toDeadLetterRow } from '../../shared/ingestion/dead-letters.warehouse.js';
import { toEventRow } from '../../shared/ingestion/event-rows.warehouse.js';

/**
 * DeleteUserData against the whole service (workers in this process, embedded ClickHouse, real Redis):
 * DeleteUserData erases a user's Redis keys at once and their ClickHouse rows within 60 s, no
 * recompute brings anything back, in-flight jobs of the user are dropped, later events start a
 * new profile, and the change log names the user by a digest only. RETENTION_DAYS is the TTL.
 */
const RETENTION_DAYS = 123;
let s: TestService;
let k: Awaited<ReturnType<typeof projectWithKeys>>;
let other: Awaited<ReturnType<typeof projectWithKeys>>;
let ch: Warehouse;
let countField: string;

// ids with every character that matters in a key name or a SCAN pattern
const ALICE = 'al*ce{1}:x?[';
const ALZZCE = 'alZZce{1}:x?['; // matches ALICE's prefix if `*` were not escaped in the SCAN pattern
const TABLES = USER_TABLES.map((t) => t.table);

const { v1, ok } = v1Calls(
  () => s,
  () => k.projectId,
);

async function rowsOf(table: string, userId: string): Promise<number> {
  const rows = await ch.query<{ n: string }>(`SELECT count() AS n FROM ${table} FINAL WHERE project_id = {p:String} AND user_id = {u:String}`, {
    p: k.projectId,
    u: userId,
  });
  return Number(rows[0].n);
}
async function deadLetters(messageId: string): Promise<number> {
  const rows = await ch.query<{ n: string }>('SELECT count() AS n FROM dead_letters FINAL WHERE project_id = {p:String} AND message_id = {m:String}', {
    p: k.projectId,
    m: messageId,
  });
  return Number(rows[0].n);
}
async function rowsByTable(userId: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const t of TABLES) out[t] = await rowsOf(t, userId);
  return out;
}

/** Every Redis key of the user, found by a plain SCAN of the prefix (no escaping shortcuts). */
async function userKeys(userId: string): Promise<string[]> {
  const prefix = s.ctx.keys.userKeyPrefix(k.projectId, userId);
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await s.ctx.redis.scan(cursor, 'MATCH', `${s.ctx.config.redisPrefix}:u:*`, 'COUNT', 10_000);
    cursor = next;
    found.push(...keys.filter((key) => key.startsWith(prefix)));
  } while (cursor !== '0');
  return found;
}

async function purchases(userId: string): Promise<number> {
  const p = await s.ctx.profiles.profiles.get(k.projectId, userId);
  const day = new Date().toISOString().slice(0, 10).replace(/-/g, '');
  return Number(p.fields[`dc:${countField}:${day}`] ?? 0);
}

async function logPurchases(userId: string, insertIds: string[], tier = 'gold'): Promise<void> {
  await ok('LogEvents', k.logEvents, {
    userId,
    events: insertIds.map((insertId) => ({
      eventName: 'purchase',
      insertId,
      clientEventTimestamp: new Date().toISOString(),
      userProperties: { tier: { stringValue: tier } },
    })),
  });
}

/** A user with events, an interaction, decisions, a profile update row and a profile. */
async function populate(userId: string): Promise<void> {
  await logPurchases(userId, ['i1', 'i2', 'i3']);
  await ok('GetTreatments', k.delivery, { userId, surfaces: [{ surface: 'home', maximumTreatmentCount: 1 }] });
  await ok('LogTreatmentInteraction', k.delivery, {
    userId,
    treatmentId: '1',
    treatmentTrackingId: '1_r',
    surface: 'home',
    interactionType: 'VIEWED',
    interactionTimeMicros: String(Date.now() * 1000),
  });
  const now = toClickhouseDateTime64(Date.now());
  // a dead letter of a LogEvents request of the user, as the workers store it
  await ch.insertRows('dead_letters', [
    toDeadLetterRow({
      projectId: k.projectId,
      messageId: `dl-${userId}`,
      source: 'log_events',
      reason: 'test',
      receiveMs: Date.now(),
      dataType: 'EventData',
      payload: Buffer.from(JSON.stringify({ kind: 'events', projectId: k.projectId, userId, events: [] })),
    }),
  ]);
  await ch.insertRows('user_attribute_updates', [
    { project_id: k.projectId, user_id: userId, dedup_key: `m:${userId}`, update_ts: now, user_properties: '{}', source: 'pubsub', ingest_ts: now },
  ]);
}

async function waitForRows(userId: string): Promise<void> {
  await waitUntil(async () => Object.values(await rowsByTable(userId)).every((n) => n > 0) && (await purchases(userId)) === 3, 60_000, 100);
}

beforeAll(async () => {
  s = await startTestService({ WORKERS_THREAD: 'false', RETENTION_DAYS: String(RETENTION_DAYS) });
  ch = s.clickhouse;
  k = await projectWithKeys(s, 'deluser');
  other = await projectWithKeys(s, 'delother');
  await ok('InsertSurface', k.management, { name: 'home' });
  await ok('InsertTreatmentType', k.management, {
    treatmentTypeName: 'card',
    lastModifiedBy: 't',
    surfaces: [{ surfaceName: 'home' }],
    contentFieldTypes: [{ fieldName: 'title', maximumLengthAllowed: 100, isPerLanguage: true }],
  });
  await ok('InsertTreatment', k.management, {
    name: 'a',
    description: 'a',
    treatmentTypeName: 'card',
    lastModifiedBy: 't',
    startTimestamp: new Date(Date.now() - 86_400_000).toISOString(),
    shouldPublish: true,
    content: { contentByLanguage: [{ languageCode: { languageCode: 'en' }, contentFields: [{ fieldName: 'title', stringValue: 'a' }] }] },
  });
  const fields = await ok('GetDataFields', k.management, {
    dataFieldParams: [{ eventDataFieldParams: { eventSchemaName: 'purchase', dailyCountAggregation: { windowName: 'LAST_7D' } } }],
  });
  countField = fields.dataFields[0].dataFieldId;
}, 180_000);

afterAll(async () => {
  await s?.stop();
});

describe('DeleteUserData', () => {
  it('erases the user from Redis at once and from every ClickHouse table within 60 s; nothing comes back', async () => {
    await populate(ALICE);
    await populate(ALZZCE);
    await waitForRows(ALICE);
    await waitForRows(ALZZCE);
    const before = await userKeys(ALICE);
    expect(before).toContain(s.ctx.keys.profile(k.projectId, ALICE));
    expect(before.some((key) => key.includes(':ins:'))).toBe(true);

    const res = await v1('DeleteUserData', k.management, { userId: ALICE });
    expect(res).toEqual({ status: 200, body: {} });
    // Redis: every key of the user is gone when the call answers; the other user keeps everything
    expect(await userKeys(ALICE)).toEqual([]);
    expect(await purchases(ALZZCE)).toBe(3);
    expect((await s.ctx.profiles.profiles.get(k.projectId, ALZZCE)).userProperties).toEqual({ tier: { stringValue: 'gold' } });

    // ClickHouse: no row of the user in any table (FINAL) within 60 s
    const none = Object.fromEntries(TABLES.map((t) => [t, 0]));
    let last: Record<string, number> = {};
    await waitUntil(async () => JSON.stringify((last = await rowsByTable(ALICE))) === JSON.stringify(none), 60_000, 200).catch(() =>
      expect(last).toEqual(none),
    );
    for (const [t, n] of Object.entries(await rowsByTable(ALZZCE))) expect(n, t).toBeGreaterThan(0);

    await waitUntil(async () => (await deadLetters(`dl-${ALICE}`)) === 0, 60_000, 200);
    expect(await deadLetters(`dl-${ALZZCE}`)).toBe(1);

    // a full recompute brings nothing back
    const run = await s.admin('RunAggregations', { projectId: k.projectId });
    expect(run.status).toBe(200);
    expect(await s.ctx.redis.hgetall(s.ctx.keys.profile(k.projectId, ALICE))).toEqual({});
    expect(await purchases(ALZZCE)).toBe(3);

    // events logged afterwards start a new profile (an old insertId is new again: its marker is gone)
    await logPurchases(ALICE, ['i1'], 'silver');
    await waitUntil(async () => (await purchases(ALICE)) === 1, 60_000, 100);
    expect((await s.ctx.profiles.profiles.get(k.projectId, ALICE)).userProperties).toEqual({ tier: { stringValue: 'silver' } });
    await waitUntil(async () => (await rowsOf('events', ALICE)) === 1, 60_000, 100);
    await s.admin('RunAggregations', { projectId: k.projectId });
    expect(await purchases(ALICE)).toBe(1);

    // the change log records the deletion without the user id
    const changes = (await s.admin('ListChanges', { projectId: k.projectId, pageSize: 10 })).body.changes as any[];
    const entry = changes.find((c) => c.operation === 'DeleteUserData');
    expect(entry).toMatchObject({
      resourceKind: 'user',
      resourceId: createHash('sha256').update(ALICE).digest('hex'),
      actor: expect.stringMatching(/^apiKey:/),
    });
    expect(JSON.stringify(entry)).not.toContain('al*ce');
  }, 240_000);

  it('erases the pre-login ids merged into the user with it; a late job of one brings nothing back', async () => {
    const user = 'merged-u';
    const temp = 'anon*{t}'; // another slot, and characters that matter in a SCAN pattern
    const stranger = 'anon-s';
    await populate(temp);
    await populate(user);
    await waitForRows(temp);
    await waitForRows(user);
    await logPurchases(stranger, ['s1']);
    await waitUntil(async () => (await purchases(stranger)) === 1, 60_000, 100);
    // the user signs in: the pre-login id's history merges into the user's
    await ok('LogEvents', k.logEvents, {
      userId: user,
      events: [{ eventName: 'purchase', insertId: 'u-in', clientEventTimestamp: new Date().toISOString(), preLoginTempUserId: temp }],
    });
    const { profiles } = s.ctx.profiles;
    // the same insertIds collapse
    await waitUntil(async () => (await profiles.get(k.projectId, user)).mergedFrom?.[0] === temp && (await rowsOf('events', user)) === 4, 60_000, 100);
    expect(await s.ctx.redis.hget(s.ctx.keys.profile(k.projectId, temp), '@alias')).toBe(user);
    // a merge marker whose id does not stand for the user (an alias expired, the id started anew) erases nothing of that id
    await s.ctx.redis.hset(s.ctx.keys.profile(k.projectId, user), `merged:${stranger}`, String(Date.now()));

    const deletedAt = Date.now();
    expect(await v1('DeleteUserData', k.management, { userId: user })).toEqual({ status: 200, body: {} });
    expect(await userKeys(user)).toEqual([]);
    expect(await userKeys(temp)).toEqual([]);
    expect((await s.admin('GetUserProfile', { projectId: k.projectId, userId: temp })).body.profile.mergedInto).toBeUndefined();
    expect(await purchases(stranger)).toBe(1);
    const none = JSON.stringify(Object.fromEntries(TABLES.map((t) => [t, 0])));
    let last: unknown;
    const gone = async () =>
      JSON.stringify((last = [await rowsByTable(user), await rowsByTable(temp)])) === JSON.stringify([JSON.parse(none), JSON.parse(none)]);
    await waitUntil(gone, 60_000, 200).catch(() => expect(last).toEqual([JSON.parse(none), JSON.parse(none)]));
    await waitUntil(async () => (await deadLetters(`dl-${temp}`)) + (await deadLetters(`dl-${user}`)) === 0, 60_000, 200);
    expect(await rowsOf('events', stranger)).toBe(1);
    expect((await new UserDeletionStore(s.ctx.redis, s.ctx.keys).pending(k.projectId)).has(temp)).toBe(false);

    // jobs accepted before the deletion and run after it, of the pre-login id and of the user signing in again with it
    const late = (userId: string, extra: Record<string, string>) => {
      const events = [{ eventName: 'purchase', insertId: `late-${userId}`, clientEventTs: deletedAt - 1000, ...extra }];
      const job = { kind: 'events', projectId: k.projectId, userId, events, origin: { source: 'api' }, receivedAt: deletedAt - 1000 } satisfies EventsJob;
      return s.ctx.ingestion.ingest.eventsQueue.add('events', job, INGEST_JOB_OPTIONS);
    };
    const jobs = [await late(temp, {}), await late(user, { preLoginTempUserId: temp })];
    const done = new JobCompletions(s.ctx.redis, bullPrefix(s.ctx.config.redisPrefix, s.ctx.redis), 'events');
    for (const job of jobs) await waitUntil(() => done.completed(job.id!), 60_000, 100);
    expect((await s.admin('RunAggregations', { projectId: k.projectId })).status).toBe(200);
    expect(await userKeys(temp)).toEqual([]);
    expect(await userKeys(user)).toEqual([]);
    expect([await rowsByTable(user), await rowsByTable(temp)]).toEqual([JSON.parse(none), JSON.parse(none)]);
  }, 240_000);

  it('a recompute skips rows whose deletion has not reached ClickHouse yet', async () => {
    const bob = 'bob';
    await populate(bob);
    await waitForRows(bob);
    // the tombstone and the Redis erasure without the ClickHouse job: the rows are still there
    await new UserDeletionStore(s.ctx.redis, s.ctx.keys).erase(k.projectId, bob, Date.now());
    expect(await rowsOf('events', bob)).toBe(3);
    expect((await s.admin('RunAggregations', { projectId: k.projectId })).status).toBe(200);
    expect(await s.ctx.redis.hgetall(s.ctx.keys.profile(k.projectId, bob))).toEqual({});
  }, 120_000);

  it('drops a job accepted before the deletion that runs after it (in flight)', async () => {
    const carol = 'carol';
    const deletedAt = Date.now();
    expect((await v1('DeleteUserData', k.management, { userId: carol })).status).toBe(200);
    // a job queued a second before the deletion, picked up only now
    const job: EventsJob = {
      kind: 'events',
      projectId: k.projectId,
      userId: carol,
      events: [{ eventName: 'purchase', insertId: 'late', clientEventTs: deletedAt - 1000 }],
      origin: { source: 'api' },
      receivedAt: deletedAt - 1000,
    };
    const added = await s.ctx.ingestion.ingest.eventsQueue.add('events', job, INGEST_JOB_OPTIONS);
    await waitUntil(() => new JobCompletions(s.ctx.redis, bullPrefix(s.ctx.config.redisPrefix, s.ctx.redis), 'events').completed(added.id!), 60_000, 100);
    expect(await userKeys(carol)).toEqual([]);
    expect(await rowsOf('events', carol)).toBe(0);
  }, 120_000);

  it('a job in flight at the deletion: the deletion waits for it, then erases again (the merged ids too) and deletes its rows', async () => {
    const { ctx } = s;
    const prefix = bullPrefix(ctx.config.redisPrefix, ctx.redis);
    // a job held by a (manual) worker stands for an ingestion job being processed at the deletion
    const probe = new Queue('probe-in-flight', { connection: queueConnection(ctx.redis), prefix });
    const holder = new Worker('probe-in-flight', null, { connection: createRedis(ctx.config, 'worker', 'probe'), prefix });
    try {
      await probe.add('x', { projectId: k.projectId, userId: 'frank' });
      const token = 'probe-token';
      const held = await holder.getNextJob(token);
      expect(held).toBeDefined();
      const deletedAtMs = Date.now();
      await new UserDeletionStore(ctx.redis, ctx.keys).erase(k.projectId, 'frank', deletedAtMs);
      await enqueueUserDeletion(ctx.redis, ctx.config.redisPrefix, {
        kind: 'deleteUser',
        projectId: k.projectId,
        userId: 'frank',
        mergedIds: ['frank-t'],
        deletedAtMs,
        inFlight: [{ queue: 'probe-in-flight', jobId: held!.id! }],
      });
      // what the racing job does after the erasure: its rows, then its profile script
      const now = toClickhouseDateTime64(Date.now());
      await ch.insertRows('events', [
        toEventRow({ projectId: k.projectId, userId: 'frank' }, { eventName: 'purchase', insertId: 'f1' }, Date.now(), undefined, 'i:f1', now, 'api'),
      ]);
      await ctx.profiles.profiles.applyEvents(k.projectId, 'frank', 'racing-job', [{ ts: Date.now(), userProperties: { tier: { stringValue: 'gold' } } }]);
      // and of the merged pre-login id the deletion named (its merge marker in frank's profile is gone by now)
      await ch.insertRows('events', [
        toEventRow({ projectId: k.projectId, userId: 'frank-t' }, { eventName: 'purchase', insertId: 'ft1' }, Date.now(), undefined, 'i:ft1', now, 'api'),
      ]);
      await ctx.profiles.profiles.applyEvents(k.projectId, 'frank-t', 'racing-job', [{ ts: Date.now(), userProperties: { tier: { stringValue: 'gold' } } }]);
      expect(await userKeys('frank')).not.toEqual([]);
      await new Promise((r) => setTimeout(r, 300));
      await held!.moveToCompleted('done', token, false);
      const erased = async (u: string) => (await userKeys(u)).length === 0 && (await rowsOf('events', u)) === 0;
      await waitUntil(async () => (await erased('frank')) && (await erased('frank-t')), 60_000, 100);
    } finally {
      await holder.close();
      await probe.obliterate({ force: true }).catch(() => undefined);
      await probe.close();
    }
  }, 120_000);

  it('is an admin operation and a CLI command too', async () => {
    await logPurchases('dave', ['d1']);
    await waitUntil(async () => (await purchases('dave')) === 1, 60_000, 100);
    expect((await s.admin('DeleteUserData', { projectId: k.projectId, userId: 'dave' })).body).toEqual({});
    expect(await userKeys('dave')).toEqual([]);

    await logPurchases('erin', ['e1']);
    await waitUntil(async () => (await purchases('erin')) === 1, 60_000, 100);
    const out: string[] = [];
    const code = await runAdminCli(
      ['delete-user-data', '--project-id', k.projectId, '--user-id', 'erin'],
      { REDIS_PREFIX: s.ctx.config.redisPrefix, AUTO_START_REDIS: 'false', ADMIN_TOKEN, LOG_LEVEL: 'silent', REDIS_URL: s.ctx.config.redisUrl },
      { out: (t) => out.push(t), err: (t) => out.push(t) },
    );
    expect(code).toBe(0);
    expect(JSON.parse(out.join(''))).toEqual({});
    expect(await userKeys('erin')).toEqual([]);
    await waitUntil(async () => (await rowsOf('events', 'erin')) === 0, 60_000, 200);
  }, 120_000);

  it('bad input is 400 naming the field; a key of another project is 401', async () => {
    for (const body of [{}, { userId: '' }, { userId: 'x'.repeat(257) }, { userId: 5 }, { userId: 'u', extra: 1 }]) {
      const r = await v1('DeleteUserData', k.management, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT' });
      expect(r.body.error.details.length).toBeGreaterThan(0);
    }
    const missing = await v1('DeleteUserData', k.management, {});
    expect(missing.body.error.details.map((d: { field: string }) => d.field).join(' ')).toContain('userId');
    expect((await v1('DeleteUserData', other.management, { userId: 'x' })).status).toBe(401);
    expect((await v1('DeleteUserData', k.delivery, { userId: 'x' })).status).toBe(403);
    expect((await s.admin('DeleteUserData', { projectId: 'nope', userId: 'x' })).status).toBe(404);
  }, 60_000);
});

describe('RETENTION_DAYS as ClickHouse TTL', () => {
  it('every per-user table carries the configured TTL; a changed setting is applied at start-up', async () => {
    for (const t of TABLES) expect(await ch.ttlDays(t), t).toBe(RETENTION_DAYS);
    const rows = await ch.query<{ q: string }>("SELECT create_table_query AS q FROM system.tables WHERE database = currentDatabase() AND name = 'events'");
    expect(rows[0].q).toContain(`TTL toDateTime(client_event_ts) + toIntervalDay(${RETENTION_DAYS})`);
    expect(await ch.applyRetentionTtl(RETENTION_DAYS)).toEqual([]);
    expect(await ch.applyRetentionTtl(RETENTION_DAYS + 1)).toEqual(TABLES);
    for (const t of TABLES) expect(await ch.ttlDays(t), t).toBe(RETENTION_DAYS + 1);
    await ch.applyRetentionTtl(RETENTION_DAYS);
    // dead letters: 30 days, or RETENTION_DAYS when shorter (they hold user data too)
    expect(await ch.ttlDays('dead_letters')).toBe(30);
    expect(await ch.applyRetentionTtl(7)).toEqual([...TABLES, 'dead_letters']);
    expect(await ch.ttlDays('dead_letters')).toBe(7);
    expect(await ch.applyRetentionTtl(RETENTION_DAYS)).toEqual([...TABLES, 'dead_letters']);
    expect(await ch.ttlDays('dead_letters')).toBe(30);
  }, 60_000);
});
