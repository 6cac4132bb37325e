import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReplyError } from 'ioredis';
import { escapeKeyPart, redisKeys, unescapeKeyPart } from '../../shared/platform/redis/redis-keys.js';
import { isPermanentRedisError } from '../../workers/ingestion/permanent-errors.js';
import { startTestService, projectWithKeys, type TestService } from '../helpers/service.js';
import { waitUntil } from '../helpers/context.js';

/**
 * Ids go into Redis key names. Crafted user ids and insertIds must never make two users (or a
 * user and a marker) share a key: afterwards each user's profile holds exactly its own data,
 * GetUserProfile answers 200, and no job is failed or waiting for a retry.
 */
let s: TestService;
let keys: Awaited<ReturnType<typeof projectWithKeys>>;

beforeAll(async () => {
  s = await startTestService();
  keys = await projectWithKeys(s, 'collide');
}, 120_000);

afterAll(async () => {
  await s?.stop();
});

async function queueCounts(): Promise<Record<string, number>> {
  const e = await s.ctx.ingestion.ingest.eventsQueue.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'failed');
  const i = await s.ctx.ingestion.ingest.interactionsQueue.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'failed');
  return Object.fromEntries(Object.keys(e).map((k) => [k, (e[k] ?? 0) + (i[k] ?? 0)]));
}

async function idle(): Promise<boolean> {
  const c = await queueCounts();
  return c.waiting + c.active + c.delayed + c.prioritized === 0;
}

function logEvents(userId: string, events: object[]) {
  return s.post('/v1/LogEvents', { projectId: keys.projectId, userId, events }, { 'x-api-key': keys.logEvents });
}

async function profile(userId: string) {
  return s.admin('GetUserProfile', { projectId: keys.projectId, userId });
}

const ts = () => new Date().toISOString();

describe('crafted ids cannot collide in Redis', () => {
  it('the reported attack: user "v" with insertId "w}:profile", then user "v}:dedup:i:w"', async () => {
    expect(
      (await logEvents('v', [{ eventName: 'e', clientEventTimestamp: ts(), insertId: 'w}:profile', userProperties: { who: { stringValue: 'v' } } }])).status,
    ).toBe(200);
    await waitUntil(idle, 30_000);
    expect(
      (await logEvents('v}:dedup:i:w', [{ eventName: 'e', clientEventTimestamp: ts(), insertId: 'x', userProperties: { who: { stringValue: 'second' } } }]))
        .status,
    ).toBe(200);
    await waitUntil(idle, 30_000);

    const first = await profile('v');
    const second = await profile('v}:dedup:i:w');
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(first.body.profile).toMatchObject({ userId: 'v', userProperties: { who: 'v' } });
    expect(second.body.profile).toMatchObject({ userId: 'v}:dedup:i:w', userProperties: { who: 'second' } });
    expect((await queueCounts()).failed).toBe(0);
  });

  it('variants with ":", "{", "}" and "%" in user ids and insertIds keep every user apart', async () => {
    const day = new Date().toISOString().slice(0, 10);
    // Users whose naive keys would equal each other's or a marker's; each sends its own value.
    const users = [
      'a',
      'a:b',
      'a%3Ab',
      'a%253Ab',
      '{a}',
      'a}',
      '}{',
      '%',
      ':',
      '::',
      'a}:profile',
      `a}:ins:${day}`,
      'a}:job:x',
      'a:profile',
      'collide}:a',
      '{collide:a}',
    ];
    const insertIds = ['w}:profile', '}:job:', '{x}', '%3A', ':', '%', 'x}:ins:'];
    const answers = await Promise.all(
      users.map((userId, i) =>
        logEvents(
          userId,
          insertIds.map((insertId, k) => ({
            eventName: 'e',
            clientEventTimestamp: ts(),
            insertId,
            userProperties: k === 0 ? { who: { stringValue: `user-${i}` } } : undefined,
          })),
        ),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(users.map(() => 200));
    // The same insertIds again: duplicates of each user's own events, nothing new anywhere.
    await Promise.all(
      users.map((userId) =>
        logEvents(
          userId,
          insertIds.map((insertId) => ({ eventName: 'e', clientEventTimestamp: ts(), insertId, userProperties: { who: { stringValue: 'duplicate' } } })),
        ),
      ),
    );
    await waitUntil(idle, 60_000);

    for (const [i, userId] of users.entries()) {
      const p = await profile(userId);
      expect(p.status).toBe(200);
      expect(p.body.profile.userId).toBe(userId);
      expect(p.body.profile.userProperties).toEqual({ who: `user-${i}` });
    }
    expect((await queueCounts()).failed).toBe(0);

    const ch = s.clickhouse;
    const rows = await ch.query<{ user_id: string; n: string }>(
      'SELECT user_id, count() AS n FROM events FINAL WHERE project_id = {p:String} GROUP BY user_id',
      { p: keys.projectId },
    );
    const counts = new Map(rows.map((r) => [r.user_id, Number(r.n)]));
    for (const userId of users) expect(counts.get(userId)).toBe(insertIds.length);
  });
});

describe('a Redis reply error on a job is permanent', () => {
  it('dead-letters a request whose profile key holds another type, with the reason, without retries', async () => {
    const { ctx } = s;
    // A key of the wrong type where the user's profile hash belongs (what a collision used to cause).
    await ctx.redis.set(ctx.keys.profile(keys.projectId, 'poisoned'), 'not a hash');
    expect(
      (await logEvents('poisoned', [{ eventName: 'e', clientEventTimestamp: ts(), insertId: 'p1', userProperties: { x: { longValue: '1' } } }])).status,
    ).toBe(200);
    expect(
      (await logEvents('healthy', [{ eventName: 'e', clientEventTimestamp: ts(), insertId: 'h1', userProperties: { ok: { booleanValue: true } } }])).status,
    ).toBe(200);
    await waitUntil(idle, 30_000);
    const letters = async () => (await s.admin('ListDeadLetters', { projectId: keys.projectId })).body.deadLetters as { reason: string; source: string }[];
    await waitUntil(async () => (await letters()).some((d) => d.reason.includes('WRONGTYPE')), 30_000);
    const dl = (await letters()).filter((d) => d.reason.includes('WRONGTYPE'));
    expect(dl).toHaveLength(1);
    expect(dl[0].reason).toMatch(/^rejected by Redis: WRONGTYPE/);
    expect((await queueCounts()).delayed).toBe(0);
    expect((await profile('healthy')).body.profile.userProperties).toEqual({ ok: true });
  });

  it('classifies reply errors: WRONGTYPE and script errors are permanent; loading, busy, OOM, failover and connection errors retry', () => {
    expect(isPermanentRedisError(new ReplyError('WRONGTYPE Operation against a key holding the wrong kind of value'))).toBe(true);
    expect(isPermanentRedisError(new ReplyError("ERR user_script:3: Script attempted to access nonexistent global variable 'x'"))).toBe(true);
    for (const m of [
      'LOADING Redis is loading the dataset in memory',
      'BUSY Redis is busy running a script',
      "OOM command not allowed when used memory > 'maxmemory'.",
      "READONLY You can't write against a read only replica.",
      'MASTERDOWN Link with MASTER is down',
      'ERR max number of clients reached',
    ]) {
      expect(isPermanentRedisError(new ReplyError(m))).toBe(false);
    }
    expect(isPermanentRedisError(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6379'), { code: 'ECONNREFUSED' }))).toBe(false);
    expect(isPermanentRedisError(new Error('Connection is closed.'))).toBe(false);
  });
});

describe('escapeKeyPart', () => {
  it('is reversible and never leaves a separator or a hash-tag brace', () => {
    for (const id of ['', 'plain', 'a:b', '%3A', '%253A', '{}', '}{:%', 'ü:{x}', 'a'.repeat(300)]) {
      const e = escapeKeyPart(id);
      expect(e).not.toMatch(/[:{}]/);
      expect(unescapeKeyPart(e)).toBe(id);
    }
    expect(escapeKeyPart('user-42_x.y')).toBe('user-42_x.y');
  });

  it('gives every key of one user one hash tag, distinct per (project, user)', () => {
    const k = redisKeys('pfx');
    const tag = (key: string) => key.slice(key.indexOf('{'), key.indexOf('}') + 1);
    const userKeys = (u: string) => [k.profile('p', u), k.jobMarker('p', u, 'j:1}'), k.insertMarkers('p', u, '2026-11-23')];
    for (const u of ['v', 'v}:dedup:i:w', 'a:b', '{x}']) {
      const tags = new Set(userKeys(u).map(tag));
      expect(tags.size).toBe(1);
      expect([...tags][0]).toBe(`{p:${escapeKeyPart(u)}}`);
    }
    const all = ['v', 'v}:dedup:i:w', 'a:b', 'a%3Ab', '{x}', 'x'].flatMap((u) => [...userKeys(u), k.jobMarker('p', u, 'w}:profile')]);
    expect(new Set(all).size).toBe(all.length);
    expect(tag(k.rankingStats('p'))).toBe(tag(k.rankingJobMarker('p', 'x:{y}')));
  });
});
