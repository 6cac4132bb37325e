import { readdirSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, projectWithKeys, type TestService } from '../helpers/service.js';
import { waitUntil } from '../helpers/context.js';
import { bullPrefix, INGEST_JOB_OPTIONS } from '../../shared/platform/queues.js';
import { JobCompletions } from '../helpers/job-completions.js';

let s: TestService;
let keys: Awaited<ReturnType<typeof projectWithKeys>>;

async function chCount(sql: string, params: Record<string, unknown>): Promise<number> {
  const rows = await s.clickhouse.query<{ n: string }>(sql, params);
  return Number(rows[0]?.n ?? 0);
}

function eventsCount(userId: string): Promise<number> {
  return chCount('SELECT count() AS n FROM events FINAL WHERE project_id = {p:String} AND user_id = {u:String}', { p: keys.projectId, u: userId });
}

async function queuesIdle(): Promise<boolean> {
  const counts = await s.ctx.ingestion.ingest.eventsQueue.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
  const ic = await s.ctx.ingestion.ingest.interactionsQueue.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
  return Object.values(counts).every((n) => n === 0) && Object.values(ic).every((n) => n === 0);
}

function logEvents(body: unknown, key = keys.logEvents) {
  return s.post('/v1/LogEvents', body, { 'x-api-key': key });
}

// Event times come from the real clock: the service accepts them within [now − RETENTION_DAYS, now + 24 h].
const now = () => new Date().toISOString();
const DAY = 86_400_000;
const HOUR = 3_600_000;
/** The instant `ms` written in local time at UTC+02:00. */
const atPlus2 = (ms: number) => `${new Date(ms + 2 * HOUR).toISOString().slice(0, 19)}+02:00`;

/** The events queue's completed jobs (completed jobs are removed at once). */
const completions = () => new JobCompletions(s.ctx.redis, bullPrefix(s.ctx.config.redisPrefix, s.ctx.redis), 'events');

beforeAll(async () => {
  s = await startTestService();
  keys = await projectWithKeys(s, 'ingest1');
}, 120_000);

afterAll(async () => {
  await s?.stop();
});

describe('LogEvents end to end', () => {
  it('stores each event exactly once across retried and concurrent requests with the same insertIds', async () => {
    const body = {
      projectId: keys.projectId,
      userId: 'u-dup',
      events: [1, 2, 3].map((i) => ({
        eventName: 'purchase',
        clientEventTimestamp: now(),
        insertId: `ins-${i}`,
        eventProperties: { amount: { longValue: String(i) } },
      })),
    };
    const answers = await Promise.all([logEvents(body), logEvents(body), logEvents(body)]);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    expect(answers[0].body).toEqual({});
    await logEvents(body);
    await waitUntil(queuesIdle, 20_000);
    expect(await eventsCount('u-dup')).toBe(3);
  });

  it('never de-duplicates events without insertId, and stores every field', async () => {
    const ev = { eventName: 'view', clientEventTimestamp: now(), country: 'DE', sessionId: 's1' };
    expect((await logEvents({ projectId: keys.projectId, userId: 'u-noins', events: [ev, ev] })).status).toBe(200);
    expect((await logEvents({ projectId: keys.projectId, userId: 'u-noins', events: [ev] })).status).toBe(200);
    await waitUntil(queuesIdle, 20_000);
    expect(await eventsCount('u-noins')).toBe(3);
    expect(
      await chCount("SELECT count() AS n FROM events FINAL WHERE user_id = 'u-noins' AND country = 'DE' AND session_id = 's1' AND source = 'api'", {}),
    ).toBe(3);
  });

  it('applies user properties last-write-wins by clientEventTimestamp, even out of order', async () => {
    const at = (iso: string, tier: string, insertId: string) => ({
      eventName: 'profile',
      clientEventTimestamp: iso,
      insertId,
      userProperties: { tier: { stringValue: tier } },
    });
    const first = Date.now() - 10 * DAY;
    await logEvents({ projectId: keys.projectId, userId: 'u-lww', events: [at(new Date(first + DAY).toISOString(), 'gold', 'a')] });
    await logEvents({ projectId: keys.projectId, userId: 'u-lww', events: [at(new Date(first).toISOString(), 'silver', 'b')] });
    // 22 h after gold, written with an offset
    await logEvents({
      projectId: keys.projectId,
      userId: 'u-lww',
      events: [
        {
          ...at(atPlus2(first + DAY + 22 * HOUR), 'bronze', 'c'),
          userProperties: { tier: { stringValue: 'bronze' }, visits: { longValue: '9007199254740993' } },
        },
      ],
    });
    await waitUntil(queuesIdle, 20_000);
    const profile = await s.admin('GetUserProfile', { projectId: keys.projectId, userId: 'u-lww' });
    expect(profile.status).toBe(200);
    expect(profile.body.profile.userProperties).toEqual({ tier: 'bronze', visits: '9007199254740993' });
  });

  it('merges concurrent requests into few queue jobs, each request keeping its own identity', async () => {
    const done = completions();
    const mark = await done.mark();
    const users = Array.from({ length: 30 }, (_, i) => `u-merge-${i}`);
    const bare = { eventName: 'view', clientEventTimestamp: now() };
    const answers = await Promise.all(
      users.map((userId) => logEvents({ projectId: keys.projectId, userId, events: [bare, bare, { ...bare, insertId: `${userId}-x` }] })),
    );
    expect(answers.every((a) => a.status === 200)).toBe(true);
    await waitUntil(queuesIdle, 20_000);
    const jobs = (await done.since(mark)).length;
    expect(jobs).toBeGreaterThan(0);
    expect(jobs).toBeLessThanOrEqual(users.length);
    for (const u of users) expect(await eventsCount(u)).toBe(3);
    // events without insertId are keyed by <jobId>.<request index>:<event index>: never two alike
    const keysSql = "SELECT count() AS n FROM events FINAL WHERE project_id = {p:String} AND startsWith(user_id, 'u-merge-') AND startsWith(dedup_key, 'j:')";
    expect(await chCount(keysSql, { p: keys.projectId })).toBe(60);
    expect(await chCount(keysSql.replace('count()', 'uniqExact(dedup_key)'), { p: keys.projectId })).toBe(60);
  });

  it('merges the requests of one event-loop turn into jobs of at most 500 events; a larger request goes alone', async () => {
    const done = completions();
    const mark = await done.mark();
    const request = (userId: string, n: number) => ({
      kind: 'events' as const,
      projectId: keys.projectId,
      userId,
      events: Array.from({ length: n }, (_, i) => ({ eventName: 'view', clientEventTs: Date.now(), insertId: `${userId}-${i}` })),
      origin: { source: 'api' as const },
      receivedAt: Date.now(),
    });
    const sizes = [200, 200, 200, 150, 600];
    // enqueued in one turn, as concurrent requests are: the third makes 600, over 500, so 200+200 | 200 go at once;
    // then 150 (to go at the turn's end) and 600 make 750: 150 | 600 at once
    await Promise.all(sizes.map((n, i) => s.ctx.ingestion.ingest.logEvents.enqueue(request(`u-turn-${i}`, n), { weight: n })));
    await waitUntil(queuesIdle, 20_000);
    expect(await done.since(mark)).toHaveLength(4);
    for (const [i, n] of sizes.entries()) expect(await eventsCount(`u-turn-${i}`)).toBe(n);
  });

  it('a request of a merged job that can never be stored becomes a dead letter alone; the others are stored', async () => {
    const jobId = `merged-poison-${Date.now()}`;
    const request = (userId: string, clientEventTs: number) => ({
      kind: 'events' as const,
      projectId: keys.projectId,
      userId,
      events: [{ eventName: 'view', clientEventTs }],
      origin: { source: 'api' as const },
      receivedAt: Date.now(),
    });
    // past DateTime64's range: the row mapping refuses it (the API would have answered 400)
    const job = {
      kind: 'eventsBatch' as const,
      requests: [request('u-merge-ok', Date.now()), request('u-merge-poison', Date.UTC(2400, 0, 1)), request('u-merge-ok2', Date.now())],
    };
    await s.ctx.ingestion.ingest.eventsQueue.add('events', job, { ...INGEST_JOB_OPTIONS, jobId });
    await waitUntil(queuesIdle, 20_000);
    expect(await completions().completed(jobId)).toBe(true);
    // a completed job keeps nothing in Redis (its markers expire after a short grace)
    expect(await s.ctx.ingestion.ingest.eventsQueue.getJobState(jobId)).toBe('unknown');
    expect(await eventsCount('u-merge-ok')).toBe(1);
    expect(await eventsCount('u-merge-ok2')).toBe(1);
    expect(await eventsCount('u-merge-poison')).toBe(0);
    expect(await chCount('SELECT count() AS n FROM dead_letters FINAL WHERE message_id = {m:String}', { m: `${jobId}.1` })).toBe(1);
    expect(await chCount('SELECT count() AS n FROM dead_letters FINAL WHERE startsWith(message_id, {m:String})', { m: jobId })).toBe(1);
  });

  it('an all-roles process runs the workers on its main thread, at the normal priority (WORKERS_NICE is for the background process alone)', () => {
    expect(s.ctx.config.workersNice).toBe(10);
    // field 19 of /proc/<pid>/task/<tid>/stat is a thread's nice value (after the "(comm)" field)
    const niceOf = (tid: string) =>
      Number(
        readFileSync(`/proc/self/task/${tid}/stat`, 'utf8')
          .replace(/^.*\) /s, '')
          .split(' ')[16],
      );
    expect(niceOf(String(process.pid))).toBe(0);
    // (the engine's own threads set theirs: its MemoryWorker runs at -20; none at WORKERS_NICE)
    expect(readdirSync('/proc/self/task').map(niceOf)).not.toContain(10);
    // the engine is this thread's own client: no thread or process in between
    expect(s.clickhouse).toBeDefined();
  });

  it("the workers' counters, readiness and the process figures reach the ops listener of the all-roles process", async () => {
    const metrics = await (await fetch(`http://127.0.0.1:${s.service.ops.port}/metrics`)).text();
    const written = /^tds_ingest_events_written_total (\d+)/m.exec(metrics);
    expect(Number(written?.[1])).toBeGreaterThanOrEqual(3);
    expect(metrics).toMatch(/^tds_nodejs_heap_size_used_bytes\{thread="main"\} \d+/m);
    expect(metrics).not.toMatch(/thread="workers"/);
    expect(metrics.match(/^tds_process_resident_memory_bytes/gm)).toHaveLength(1);
    const ready = await (await fetch(`http://127.0.0.1:${s.service.ops.port}/readyz`)).json();
    expect(ready.status).toBe('ready');
    expect(ready.checks).toEqual(expect.arrayContaining(['lifecycle', 'redis', 'clickhouse']));
    expect(ready.checks).not.toContain('workers-thread');
  });

  it('accepts snake_case fields and the api-key query parameter', async () => {
    const res = await s.post(`/v1/LogEvents?api-key=${encodeURIComponent(keys.logEvents)}`, {
      project_id: keys.projectId,
      user_id: 'u-snake',
      events: [{ event_name: 'x', client_event_timestamp: now(), event_properties: { Some_Prop: { string_value: 'v' } } }],
    });
    expect(res.status).toBe(200);
    await waitUntil(queuesIdle, 20_000);
    expect(
      await chCount(
        "SELECT count() AS n FROM events FINAL WHERE user_id = 'u-snake' AND JSONExtractString(event_properties, 'Some_Prop', 'stringValue') = 'v'",
        {},
      ),
    ).toBe(1);
  });
});

describe('LogEvents validation and auth', () => {
  const valid = () => ({ projectId: keys.projectId, userId: 'u-v', events: [{ eventName: 'e', clientEventTimestamp: now() }] });
  const cases: [string, (b: any) => void, string][] = [
    ['missing userId', (b) => delete b.userId, 'userId'],
    ['empty events', (b) => (b.events = []), 'events'],
    ['missing eventName', (b) => delete b.events[0].eventName, 'events[0].eventName'],
    ['bad timestamp', (b) => (b.events[0].clientEventTimestamp = 'yesterday'), 'events[0].clientEventTimestamp'],
    ['timestamp without offset', (b) => (b.events[0].clientEventTimestamp = now().slice(0, 19)), 'events[0].clientEventTimestamp'],
    [
      'more than 24 h in the future',
      (b) => (b.events[0].clientEventTimestamp = new Date(Date.now() + 25 * HOUR).toISOString()),
      'events[0].clientEventTimestamp',
    ],
    ['unknown field', (b) => (b.events[0].colour = 'red'), 'events[0].colour'],
    ['a timestamp before 1900', (b) => (b.events[0].clientEventTimestamp = '1850-01-01T00:00:00Z'), 'events[0].clientEventTimestamp'],
    ['two values in a PropertyValue', (b) => (b.events[0].eventProperties = { a: { stringValue: 'x', longValue: '1' } }), 'events[0].eventProperties'],
    ['empty PropertyValue', (b) => (b.events[0].eventProperties = { a: {} }), 'events[0].eventProperties'],
    ['longValue not an int64', (b) => (b.events[0].eventProperties = { a: { longValue: '1.5' } }), 'events[0].eventProperties'],
    ['longValue beyond int64', (b) => (b.events[0].eventProperties = { a: { longValue: '9223372036854775808' } }), 'events[0].eventProperties.a.longValue'],
    ['1001 events', (b) => (b.events = Array.from({ length: 1001 }, () => b.events[0])), 'events'],
  ];
  for (const [name, mutate, field] of cases) {
    it(`400 INVALID_ARGUMENT: ${name}`, async () => {
      const b = valid();
      mutate(b);
      const res = await logEvents(b);
      expect(res.status).toBe(400);
      expect(res.body.error.status).toBe('INVALID_ARGUMENT');
      expect(res.body.error.details.map((d: any) => d.field).some((f: string) => f.startsWith(field))).toBe(true);
    });
  }

  it('413 for a body over 1 MiB', async () => {
    const b = valid();
    (b.events[0] as any).eventProperties = { big: { stringValue: 'x'.repeat(8000) } };
    const big = { ...b, events: Array.from({ length: 200 }, () => b.events[0]) };
    const res = await logEvents(big);
    expect(res.status).toBe(413);
    expect(res.body.error.status).toBe('INVALID_ARGUMENT');
  });

  it('401 without a key, with a DELIVERY key 403, with another project’s key 401', async () => {
    expect((await s.post('/v1/LogEvents', valid())).status).toBe(401);
    expect((await logEvents(valid(), keys.delivery)).status).toBe(403);
    const other = await projectWithKeys(s, 'ingest-other');
    expect((await logEvents(valid(), other.logEvents)).status).toBe(401);
  });
});
