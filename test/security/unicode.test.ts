/// <reference lib="es2024.string" />
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { v1Operations } from '../../api/v1.routes.js';
import { adminOperations } from '../../api/admin.routes.js';
import { INGEST_JOB_OPTIONS } from '../../shared/platform/queues.js';
import type { EventsJob } from '../../shared/ingestion/jobs.js';
import type { Permission } from '../../shared/projects/index.js';
import { MAX_DEAD_LETTER_PAYLOAD_BYTES } from '../../workers/ingestion/dead-letter-sink.js';
import { ADMIN_TOKEN, waitUntil } from '../helpers/context.js';
import { projectWithKeys, startTestService, type TestService } from '../helpers/service.js';

/*
 * Attack class: strings that are not Unicode. An unpaired UTF-16 surrogate (`"sur\ud800"` in JSON)
 * used to be accepted with 200, then failed the ClickHouse insert and became a dead letter holding
 * the whole payload. Now every string of every operation must be well-formed: 400 naming the field,
 * before anything is queued. Whatever still becomes a dead letter (a job queued before the check, a
 * Pub/Sub message that cannot be decoded) keeps at most 64 KiB of its payload.
 */

let s: TestService;
let keys: { projectId: string; management: string; delivery: string; logEvents: string };

beforeAll(async () => {
  s = await startTestService();
  keys = await projectWithKeys(s, `uni${Date.now().toString(36)}`);
}, 120_000);

afterAll(async () => {
  await s?.stop();
}, 120_000);

const keyFor = (permissions: readonly Permission[]): string =>
  permissions.includes('TREATMENT_MANAGEMENT') ? keys.management : permissions.includes('DELIVERY') ? keys.delivery : keys.logEvents;

/** POSTs the JSON text as given (JSON.stringify writes a lone surrogate as its escape). */
async function send(path: string, text: string | Uint8Array, headers: Record<string, string>): Promise<{ status: number; body: any }> {
  const res = await fetch(`${s.baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof text === 'string' ? text : new Uint8Array(text),
  });
  return { status: res.status, body: await res.json() };
}

const operations = [
  ...v1Operations.map((op) => ({ name: op.operation, path: `/v1/${op.operation}`, headers: () => ({ 'x-api-key': keyFor(op.permissions) }) })),
  ...adminOperations.map((op) => ({
    name: `admin ${op.operation}`,
    path: `/admin/v1/${op.operation}`,
    headers: () => ({ authorization: `Bearer ${ADMIN_TOKEN}` }),
  })),
];

async function queuedJobs(): Promise<number> {
  const c = await s.ctx.ingestion.ingest.eventsQueue.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'completed', 'failed');
  return Object.values(c).reduce((a, b) => a + b, 0);
}

describe('unpaired surrogates', () => {
  it.each(operations.map((op) => [op.name, op] as const))('%s: 400 naming the field', async (_name, op) => {
    for (const [body, field] of [
      [{ projectId: keys.projectId, userId: 'sur\ud800' }, 'userId'],
      [{ projectId: keys.projectId, name: '\udc00', items: ['ok', 'x\udbff'] }, 'name'],
      [{ project_id: keys.projectId, user_properties: { ['k\ud800']: { string_value: 'v' } } }, 'user_properties.k\\ud800'],
    ] as const) {
      const r = await send(op.path, JSON.stringify(body), op.headers());
      expect(r.status, `${op.name} ${JSON.stringify(r.body)}`).toBe(400);
      expect(r.body.error).toMatchObject({
        code: 400,
        status: 'INVALID_ARGUMENT',
        details: [{ field, description: expect.stringMatching(/unpaired UTF-16 surrogate/) }],
      });
    }
  });

  it('LogEvents: refused before anything is queued, wherever the string is; well-formed text of any script is accepted', async () => {
    const before = await queuedJobs();
    const event = { eventName: 'purchase', clientEventTimestamp: new Date().toISOString() };
    for (const [body, field] of [
      [{ userId: 'sur\ud800', events: [event] }, 'userId'],
      [{ userId: 'u', events: [event, { ...event, eventName: 'e\udfff' }] }, 'events[1].eventName'],
      [
        { userId: 'u', events: [{ ...event, eventProperties: { p: { stringValue: `${'x'.repeat(500_000)}\ud83d` } } }] },
        'events[0].eventProperties.p.stringValue',
      ],
      [{ userId: 'u', events: [{ ...event, preLoginTempUserId: '\udc00\ud800' }] }, 'events[0].preLoginTempUserId'],
    ] as const) {
      const r = await send('/v1/LogEvents', JSON.stringify({ projectId: keys.projectId, ...body }), { 'x-api-key': keys.logEvents });
      expect(r.status, JSON.stringify(r.body).slice(0, 300)).toBe(400);
      expect(r.body.error.details[0].field).toBe(field);
    }
    expect(await queuedJobs()).toBe(before);
    const fine = await send(
      '/v1/LogEvents',
      JSON.stringify({
        projectId: keys.projectId,
        userId: 'ユーザー😀',
        events: [{ ...event, eventProperties: { p: { stringValue: '𝔘𝔫𝔦𝔠𝔬𝔡𝔢 \\ud800 as text' } } }],
      }),
      { 'x-api-key': keys.logEvents },
    );
    expect(fine.status).toBe(200);
  });

  it('bytes that are not UTF-8 (a surrogate encoded on its own) arrive as U+FFFD: stored, never a dead letter', async () => {
    const userId = 'raw-bytes';
    const text = Buffer.from(
      JSON.stringify({
        projectId: keys.projectId,
        userId,
        events: [{ eventName: 'purchase', clientEventTimestamp: new Date().toISOString(), insertId: 'raw-1', eventProperties: { p: { stringValue: 'ABC' } } }],
      }),
    );
    text.set([0xed, 0xa0, 0x80], text.indexOf('ABC'));
    expect((await send('/v1/LogEvents', text, { 'x-api-key': keys.logEvents })).status).toBe(200);
    const stored = async () =>
      s.clickhouse.query<{ p: string }>('SELECT event_properties AS p FROM events FINAL WHERE project_id = {p:String} AND user_id = {u:String}', {
        p: keys.projectId,
        u: userId,
      });
    await waitUntil(async () => (await stored()).length === 1, 30_000, 100);
    expect((await stored())[0].p).toContain('\ufffd');
    expect((await s.admin('ListDeadLetters', { projectId: keys.projectId })).body.deadLetters).toEqual([]);
  }, 60_000);
});

describe('dead letters are bounded', () => {
  it('five 500 KB poison jobs (queued before the check existed) make five small dead letters that name their user', async () => {
    // what LogEvents accepted before: a job ClickHouse cannot store
    const job = (i: number): EventsJob => ({
      kind: 'events',
      projectId: keys.projectId,
      userId: `poison\ud800${i}`,
      events: [{ eventName: 'purchase', clientEventTs: Date.now(), insertId: `poison-${i}`, eventProperties: { blob: { stringValue: 'x'.repeat(500_000) } } }],
      origin: { source: 'api' },
      receivedAt: Date.now(),
    });
    const ids: string[] = [];
    const { eventsQueue } = s.ctx.ingestion.ingest;
    for (let i = 0; i < 5; i++) ids.push((await eventsQueue.add('events', job(i), { ...INGEST_JOB_OPTIONS, jobId: `poison-${i}-${Date.now()}` })).id!);
    const letters = async () =>
      ((await s.admin('ListDeadLetters', { projectId: keys.projectId })).body.deadLetters as any[]).filter((l) => ids.includes(l.messageId));
    await waitUntil(async () => (await letters()).length === 5, 60_000, 200);
    for (const l of await letters()) {
      expect(l.source).toBe('log_events');
      expect(l.payloadTruncated).toBe(true);
      expect(Buffer.from(l.payloadBase64, 'base64').byteLength).toBe(MAX_DEAD_LETTER_PAYLOAD_BYTES);
      expect(l.payloadBytes).toBeGreaterThan(500_000);
      expect(l.payloadSha256).toMatch(/^[0-9a-f]{64}$/);
    }
    const rows = await s.clickhouse.query<{ user_ids: string[]; n: string }>(
      'SELECT user_ids, toString(length(payload_base64) + length(reason)) AS n FROM dead_letters FINAL WHERE project_id = {p:String} AND has({ids:Array(String)}, message_id) ORDER BY message_id',
      { p: keys.projectId, ids },
    );
    expect(rows.map((r) => r.user_ids)).toEqual([0, 1, 2, 3, 4].map((i) => [`poison\ufffd${i}`]));
    for (const r of rows) expect(Number(r.n)).toBeLessThan(MAX_DEAD_LETTER_PAYLOAD_BYTES * 1.34 + 4000);
  }, 90_000);

  it('expire after 30 days (a ClickHouse TTL)', async () => {
    expect(await s.clickhouse.ttlDays('dead_letters')).toBe(30);
  });
});
