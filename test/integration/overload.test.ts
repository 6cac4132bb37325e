import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { readAnswer } from '../helpers/raw-answer.js';
import { createProjectWithKeys, createTestApp, type ProjectKeys, type TestApp } from '../helpers/context.js';

/**
 * Overload is refused, not queued: while the event loop lags, a public request is answered at once
 * with 503 UNAVAILABLE and Retry-After (counted in /metrics), health keeps answering, and once the
 * lag is gone requests are admitted again. The lag is made by blocking this process's event loop
 * after the requests are on the wire, exactly what a saturated process sees.
 */
let t: TestApp;
let k: ProjectKeys;
let port: number;

function block(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // busy: the event loop cannot run
  }
}

async function open(): Promise<Socket> {
  const s = connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => s.once('connect', resolve).once('error', reject));
  return s;
}

function post(s: Socket, path: string, key: string, body: unknown): void {
  const json = JSON.stringify(body);
  s.write(
    `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Api-Key: ${key}\r\nContent-Length: ${Buffer.byteLength(json)}\r\n\r\n${json}`,
  );
}

beforeAll(async () => {
  t = await createTestApp({ OVERLOAD_MAX_LAG_MS: '20', OVERLOAD_MAX_IN_FLIGHT: '128' });
  k = await createProjectWithKeys(t);
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  port = (t.app.server.address() as AddressInfo).port;
});

afterAll(async () => {
  await t?.close();
});

describe('load shedding', () => {
  it('answers public requests 503 with Retry-After at once while the event loop lags; health still answers; then admits again', async () => {
    const a = await open();
    const h = await open();
    const request = { projectId: k.projectId, userId: 'u1', surfaces: [{ surface: 'nowhere' }] };
    const before = t.ctx.metrics.overload.shed;
    // the process is kept busy 40 ms of every turn of its event loop: a sustained lag (a single
    // late sample is a pause, not overload)
    const busy = setInterval(() => block(40), 1);
    let r: Awaited<ReturnType<typeof readAnswer>>;
    let healthAnswer: Promise<Awaited<ReturnType<typeof readAnswer>>>;
    try {
      await new Promise((res) => setTimeout(res, 150));
      const refused = readAnswer(a);
      healthAnswer = readAnswer(h);
      post(a, '/v1/GetTreatments', k.delivery, request);
      h.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      r = await refused;
      await healthAnswer;
      // it refused while lagging beyond the target: at the next sample (due before this timer) the
      // in-flight limit in force is halved; each later sample that refused nothing adds 4 (128 / 32)
      await new Promise((res) => setTimeout(res, 15));
      const limit = t.ctx.metrics.overload.inFlightLimit;
      expect(limit).toBeGreaterThanOrEqual(64);
      expect(limit).toBeLessThan(128);
      expect((limit - 64) % 4).toBe(0);
      expect(await t.ctx.metrics.render()).toMatch(new RegExp(`tds_http_in_flight_limit ${limit}\\b`));
    } finally {
      clearInterval(busy);
    }
    expect(r.status).toBe(503);
    expect(r.headers['retry-after']).toBe('1');
    expect(JSON.parse(r.body)).toMatchObject({ error: { code: 503, status: 'UNAVAILABLE' } });
    expect((await healthAnswer).status).toBe(200);
    expect(t.ctx.metrics.overload.shed).toBe(before + 1);
    expect(await t.ctx.metrics.render()).toMatch(new RegExp(`tds_http_requests_shed_total ${before + 1}\\b`));

    // the lag is gone at the next sample: the same connection is served again
    await new Promise((res) => setTimeout(res, 50));
    const again = readAnswer(a);
    post(a, '/v1/GetTreatments', k.delivery, request);
    const served = await again;
    // the surface does not exist: a 400 from the operation itself, not a refusal
    expect(served.status).toBe(400);
    a.destroy();
    h.destroy();
  });
});
