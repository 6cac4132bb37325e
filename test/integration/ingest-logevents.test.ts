import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, projectWithKeys, type TestService } from '../helpers/service.js';
import { waitUntil } from '../helpers/context.js';

let s: TestService;
let keys: Awaited<ReturnType<typeof projectWithKeys>>;

async function chCount(sql: string, params: Record<string, unknown>): Promise<number> {
  const rs = await s.service.ctx.clickhouse!.query({ query: sql, query_params: params, format: 'JSONEachRow' });
  const rows = await rs.json<{ n: string }>();
  return Number(rows[0]?.n ?? 0);
}

function eventsCount(userId: string): Promise<number> {
  return chCount('SELECT count() AS n FROM events FINAL WHERE project_id = {p:String} AND user_id = {u:String}', { p: keys.projectId, u: userId });
}

async function queuesIdle(): Promise<boolean> {
  const counts = await s.service.ctx.ingest.eventsQueue.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
  const ic = await s.service.ctx.ingest.interactionsQueue.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
  return Object.values(counts).every((n) => n === 0) && Object.values(ic).every((n) => n === 0);
}

function logEvents(body: unknown, key = keys.logEvents) {
  return s.post('/v1/LogEvents', body, { 'x-api-key': key });
}

const now = () => new Date().toISOString();

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
      events: [1, 2, 3].map((i) => ({ eventName: 'purchase', clientEventTimestamp: now(), insertId: `ins-${i}`, eventProperties: { amount: { longValue: String(i) } } })),
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
    expect(await chCount("SELECT count() AS n FROM events FINAL WHERE user_id = 'u-noins' AND country = 'DE' AND session_id = 's1' AND source = 'api'", {})).toBe(3);
  });

  it('applies user properties last-write-wins by clientEventTimestamp, even out of order', async () => {
    const at = (iso: string, tier: string, insertId: string) => ({ eventName: 'profile', clientEventTimestamp: iso, insertId, userProperties: { tier: { stringValue: tier } } });
    await logEvents({ projectId: keys.projectId, userId: 'u-lww', events: [at('2026-01-02T00:00:00Z', 'gold', 'a')] });
    await logEvents({ projectId: keys.projectId, userId: 'u-lww', events: [at('2026-01-01T00:00:00Z', 'silver', 'b')] });
    await logEvents({ projectId: keys.projectId, userId: 'u-lww', events: [{ ...at('2026-01-03T00:00:00+02:00', 'bronze', 'c'), userProperties: { tier: { stringValue: 'bronze' }, visits: { longValue: '9007199254740993' } } }] });
    await waitUntil(queuesIdle, 20_000);
    const profile = await s.admin('GetUserProfile', { projectId: keys.projectId, userId: 'u-lww' });
    expect(profile.status).toBe(200);
    expect(profile.body.profile.userProperties).toEqual({ tier: 'bronze', visits: '9007199254740993' });
  });

  it('runs the workers in their own thread, whose counters reach /metrics', async () => {
    expect(s.service.ctx.config.workersThread).toBe(true);
    const metrics = await (await fetch(`${s.baseUrl}/metrics`)).text();
    const written = /^ingest_events_written_total (\d+)/m.exec(metrics);
    expect(Number(written?.[1])).toBeGreaterThanOrEqual(3);
  });

  it('accepts snake_case fields and the api-key query parameter', async () => {
    const res = await s.post(`/v1/LogEvents?api-key=${encodeURIComponent(keys.logEvents)}`, { project_id: keys.projectId, user_id: 'u-snake', events: [{ event_name: 'x', client_event_timestamp: now(), event_properties: { Some_Prop: { string_value: 'v' } } }] });
    expect(res.status).toBe(200);
    await waitUntil(queuesIdle, 20_000);
    expect(await chCount("SELECT count() AS n FROM events FINAL WHERE user_id = 'u-snake' AND JSONExtractString(event_properties, 'Some_Prop', 'stringValue') = 'v'", {})).toBe(1);
  });
});

describe('LogEvents validation (D31) and auth (D9)', () => {
  const valid = () => ({ projectId: keys.projectId, userId: 'u-v', events: [{ eventName: 'e', clientEventTimestamp: now() }] });
  const cases: [string, (b: any) => void, string][] = [
    ['missing userId', (b) => delete b.userId, 'userId'],
    ['empty events', (b) => (b.events = []), 'events'],
    ['missing eventName', (b) => delete b.events[0].eventName, 'events[0].eventName'],
    ['bad timestamp', (b) => (b.events[0].clientEventTimestamp = 'yesterday'), 'events[0].clientEventTimestamp'],
    ['timestamp without offset', (b) => (b.events[0].clientEventTimestamp = '2026-01-01T00:00:00'), 'events[0].clientEventTimestamp'],
    ['more than 24 h in the future', (b) => (b.events[0].clientEventTimestamp = new Date(Date.now() + 25 * 3600_000).toISOString()), 'events[0].clientEventTimestamp'],
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
