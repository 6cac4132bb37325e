import { gzipSync } from 'node:zlib';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_BODY_DEPTH } from '../../shared/platform/http/body-shape.js';
import { createProjectWithKeys, createTestApp, waitUntil, type ProjectKeys, type TestApp } from '../helpers/context.js';
import { listen } from './attack.js';

/*
 * Attack class: compressed bodies. LogEvents and LogTreatmentInteraction accept
 * `Content-Encoding: gzip`; every body limit applies to the inflated body, and a decompression
 * bomb is refused (413) after inflating no more than the limit, through a real listener.
 */

const MiB = 1024 * 1024;
let t: TestApp;
let url: string;
let k: ProjectKeys;

beforeAll(async () => {
  t = await createTestApp();
  k = await createProjectWithKeys(t);
  url = await listen(t.app);
});

afterAll(async () => {
  await t?.close();
});

interface Answer {
  status: number;
  body: any;
  headers: Headers;
}

async function send(path: string, body: Buffer | string, headers: Record<string, string>): Promise<Answer> {
  const res = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : new Uint8Array(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
}

const gz = (value: unknown) => gzipSync(Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)));
const logEvents = (body: Buffer | string, encoding = 'gzip') => send('/v1/LogEvents', body, { 'x-api-key': k.logEvents, 'content-encoding': encoding });
const now = () => new Date().toISOString();
const events = (userId: string, n: number, extra: Record<string, unknown> = {}) => ({
  projectId: k.projectId,
  userId,
  events: Array.from({ length: n }, (_, i) => ({ eventName: 'gz', clientEventTimestamp: now(), insertId: `${userId}-${i}`, ...extra })),
});

/** A gzip stream of `members` concatenated members, each `memberBytes` of zeros inflated (~1,000:1). */
function bomb(members: number, memberBytes = MiB): Buffer {
  const one = gzipSync(Buffer.alloc(memberBytes), { level: 9 });
  return Buffer.concat(Array.from({ length: members }, () => one));
}

function expectError(r: Answer, status: number, pattern?: RegExp): void {
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  expect(r.body.error.code).toBe(status);
  expect(Array.isArray(r.body.error.details)).toBe(true);
  if (pattern) expect(r.body.error.message).toMatch(pattern);
}

describe('Content-Encoding: gzip on LogEvents and LogTreatmentInteraction', () => {
  it('a gzip body is inflated and ingested like the plain one', async () => {
    const r = await logEvents(gz(events('gz-user', 3)));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toEqual({});
    expect((await logEvents(gz(events('gz-user-x', 1)), 'x-gzip')).status).toBe(200);
    expect((await logEvents(JSON.stringify(events('gz-identity', 1)), 'identity')).status).toBe(200);
    const jobs = await t.ctx.ingestion.ingest.eventsQueue.getJobs(['waiting', 'delayed', 'active', 'completed']);
    const users = jobs.flatMap((j) => (j.data.kind === 'eventsBatch' ? j.data.requests : [j.data])).map((d: any) => d.userId);
    expect(users).toEqual(expect.arrayContaining(['gz-user', 'gz-user-x', 'gz-identity']));
  });

  it('LogTreatmentInteraction accepts gzip too (and validates the inflated body)', async () => {
    const r = await send(
      '/v1/LogTreatmentInteraction',
      gz({ projectId: k.projectId, treatmentTrackingId: 'x', interactionType: 'NOT_A_TYPE', interactionTimeMicros: Date.now() * 1000 }),
      { 'x-api-key': k.delivery, 'content-encoding': 'gzip' },
    );
    expectError(r, 400);
    expect(r.body.error.details.map((d: any) => d.field)).toContain('interactionType');
  });

  it('the 1 MiB limit applies to the inflated body: a 40 KB body that inflates past it is 413', async () => {
    const big = JSON.stringify(events('gz-big', 1, { eventProperties: { pad: { stringValue: 'a'.repeat(8000) } } }));
    const padded = big.replace(
      '"events":[',
      `"events":[${Array.from({ length: 140 }, () => JSON.stringify({ eventName: 'p', clientEventTimestamp: now(), eventProperties: { pad: { stringValue: 'b'.repeat(8000) } } })).join(',')},`,
    );
    expect(padded.length).toBeGreaterThan(MiB);
    const body = gz(padded);
    expect(body.length).toBeLessThan(100_000);
    expectError(await logEvents(body), 413, /decompressed/);
  });

  it('the shape limits apply to the inflated body: too deep, too many events', async () => {
    const deep = `{"projectId":"${k.projectId}","userId":"u","events":${'['.repeat(MAX_BODY_DEPTH + 5)}${']'.repeat(MAX_BODY_DEPTH + 5)}}`;
    expectError(await logEvents(gz(deep)), 400, /nested/);
    const tooMany = await logEvents(gz(events('gz-many', 1001)));
    expectError(tooMany, 400);
    expect(tooMany.body.error.details.map((d: any) => d.field)).toContain('events');
  });

  it('a decompression bomb (1 MB inflating to ~1 GiB) is 413 after inflating no more than the limit', async () => {
    const body = bomb(990);
    expect(body.length).toBeLessThan(MiB);
    // Inflation runs on libuv's threads, so the event loop would not show it: the process's CPU
    // time does, counted until a while after the answer (an inflation left running after the 413
    // would go on). Inflating the whole gigabyte took ~700 ms of CPU, the capped inflation and
    // everything else of the request ~140 ms.
    const before = process.cpuUsage();
    const r = await logEvents(body);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const cpu = process.cpuUsage(before);
    expect((cpu.user + cpu.system) / 1000, 'CPU ms spent on the bomb').toBeLessThan(400);
    expectError(r, 413, /decompressed/);
    // the listener still serves
    expect((await logEvents(gz(events('gz-after-bomb', 1)))).status).toBe(200);
  });

  it('a bomb sent chunked (no Content-Length) is refused the same way', async () => {
    const body = bomb(200);
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(
        `${url}/v1/LogEvents`,
        {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'content-encoding': 'gzip', 'x-api-key': k.logEvents, 'transfer-encoding': 'chunked' },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      for (let i = 0; i < body.length; i += 16_384) req.write(body.subarray(i, i + 16_384));
      req.end();
    });
    expect(status).toBe(413);
  });

  it('corrupt or truncated gzip is 400; another encoding is 415', async () => {
    expectError(await logEvents(Buffer.from('{"not":"gzip"}')), 400, /gzip/);
    const whole = gz(events('gz-trunc', 2));
    expectError(await logEvents(whole.subarray(0, whole.length - 12)), 400, /gzip/);
    for (const encoding of ['br', 'deflate', 'gzip, gzip', 'compress'])
      expectError(await logEvents(gz(events('gz-enc', 1)), encoding), 415, /Content-Encoding/);
  });

  it('other operations take no encoded body (415), and a gzip body is authenticated before it is inflated', async () => {
    const r = await send('/v1/GetTreatments', gz({ projectId: k.projectId, userId: 'u', surfaces: [] }), {
      'x-api-key': k.delivery,
      'content-encoding': 'gzip',
    });
    expectError(r, 415, /Content-Encoding/);
    expectError(await send('/v1/GetAllSurfaces', JSON.stringify({ projectId: k.projectId }), { 'x-api-key': k.management, 'content-encoding': 'br' }), 415);
    expectError(await send('/v1/LogEvents', bomb(10), { 'x-api-key': 'not-a-key', 'content-encoding': 'gzip' }), 401);
  });
});

describe('the listener after refused bodies', () => {
  it('keeps answering on new connections', async () => {
    await waitUntil(async () => (await fetch(`${url}/healthz`)).status === 200, 5000);
  });
});
