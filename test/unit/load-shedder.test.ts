import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { LoadShedder } from '../../api/http/load-shedder.js';
import { waitUntil } from '../helpers/context.js';
import { corsPolicy } from '../../api/http/cors.js';

/** A response that records what was written; 'close' is emitted by `finish()`. */
function fakeRes() {
  const res = new EventEmitter() as EventEmitter & {
    status?: number;
    headers?: Record<string, unknown>;
    body?: string;
    writeHead: (s: number, h: Record<string, unknown>) => unknown;
    end: (b: string) => void;
    finish(): void;
  };
  res.writeHead = (s, h) => {
    res.status = s;
    res.headers = h;
    return res;
  };
  res.end = (b) => {
    res.body = b;
  };
  res.finish = () => res.emit('close');
  return res;
}

/** Blocks the event loop for `ms`, then lets the sampler (due earlier) run before the caller goes on. */
async function blockFor(ms: number): Promise<void> {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // the event loop is blocked
  }
  await new Promise((r) => setTimeout(r, 1));
}

const req = (url: string, method = 'POST', headers: Record<string, string> = {}) => ({ url, method, headers }) as unknown as IncomingMessage;

/** Sends a GetTreatments through the shedder's guard to a handler that never answers: the response, open until `finish()`. */
function admitter(shedder: LoadShedder): () => ReturnType<typeof fakeRes> {
  const guard = shedder.guard(() => undefined);
  return () => {
    const res = fakeRes();
    guard(req('/v1/GetTreatments'), res as unknown as ServerResponse);
    return res;
  };
}

describe('LoadShedder', () => {
  it('refuses public requests beyond maxInFlight with 503 and Retry-After, admits them again as others finish; other paths always pass', () => {
    const stats = { shed: 0, inFlightLimit: 0 };
    const shedder = new LoadShedder({ maxEventLoopLagMs: 0, maxInFlight: 2, stats });
    const handled: string[] = [];
    const guard = shedder.guard((r) => handled.push(r.url!));
    const open = [fakeRes(), fakeRes()];
    guard(req('/v1/GetTreatments'), open[0] as unknown as ServerResponse);
    guard(req('/v1/LogEvents'), open[1] as unknown as ServerResponse);
    const refused = fakeRes();
    guard(req('/v1/GetTreatments'), refused as unknown as ServerResponse);
    expect(refused.status).toBe(503);
    expect(refused.headers?.['retry-after']).toBe('1');
    expect(JSON.parse(refused.body!)).toMatchObject({ error: { code: 503, status: 'UNAVAILABLE' } });
    expect(stats.shed).toBe(1);
    for (const path of ['/healthz', '/readyz', '/v1/InsertTreatment', '/admin/v1/GetQueueStats', '/console/'])
      guard(req(path), fakeRes() as unknown as ServerResponse);
    expect(handled).toEqual(['/v1/GetTreatments', '/v1/LogEvents', '/healthz', '/readyz', '/v1/InsertTreatment', '/admin/v1/GetQueueStats', '/console/']);
    open[0].finish();
    guard(req('/v1/GetTreatments'), fakeRes() as unknown as ServerResponse);
    expect(handled.at(-1)).toBe('/v1/GetTreatments');
    expect(stats.shed).toBe(1);
  });

  it('never refuses a CORS preflight, and a refusal to a page of an allowed origin carries its CORS headers', () => {
    const stats = { shed: 0, inFlightLimit: 0 };
    const shedder = new LoadShedder({ maxEventLoopLagMs: 0, maxInFlight: 1, stats, cors: corsPolicy(['https://shop.example']) });
    const handled: string[] = [];
    const guard = shedder.guard((r) => handled.push(`${r.method} ${r.url}`));
    guard(req('/v1/GetTreatments'), fakeRes() as unknown as ServerResponse); // holds the one slot
    guard(req('/v1/GetTreatments', 'OPTIONS', { origin: 'https://shop.example' }), fakeRes() as unknown as ServerResponse);
    expect(handled).toEqual(['POST /v1/GetTreatments', 'OPTIONS /v1/GetTreatments']);
    const fromPage = fakeRes();
    guard(req('/v1/LogEvents', 'POST', { origin: 'https://shop.example' }), fromPage as unknown as ServerResponse);
    expect(fromPage.status).toBe(503);
    expect(fromPage.headers).toMatchObject({
      'retry-after': '1',
      'access-control-allow-origin': 'https://shop.example',
      'access-control-expose-headers': 'retry-after, x-request-id',
    });
    const fromElsewhere = fakeRes();
    guard(req('/v1/LogEvents', 'POST', { origin: 'https://evil.example' }), fromElsewhere as unknown as ServerResponse);
    expect(fromElsewhere.status).toBe(503);
    expect(fromElsewhere.headers?.['access-control-allow-origin']).toBeUndefined();
  });

  it('halves the in-flight limit while it refuses and the event loop lags beyond the target, never for a lag alone, and grows it back once the lag is low', async () => {
    const stats = { shed: 0, inFlightLimit: 0 };
    // the lag bound is off, so only the in-flight limit refuses here (and it still adapts)
    const shedder = new LoadShedder({ maxEventLoopLagMs: 0, maxInFlight: 16, targetLagMs: 40, sampleMs: 5, stats }).start();
    const admit = admitter(shedder);
    try {
      const held = Array.from({ length: 10 }, admit);
      await blockFor(150); // a long turn with 10 in flight and nothing refused: a saturated closed loop, not overload
      expect(shedder.inFlightLimit).toBe(16);
      held.push(...Array.from({ length: 6 }, admit));
      expect(held.every((r) => r.status === undefined)).toBe(true);
      expect(admit().status).toBe(503); // the 17th
      await blockFor(150); // refusing, and lagging beyond the target
      expect(shedder.inFlightLimit).toBe(8);
      expect(stats.inFlightLimit).toBe(8); // the gauge's source
      for (const r of held.splice(0, 9)) r.finish(); // 7 left in flight, under the lowered limit
      expect(admit().status).toBeUndefined();
      expect(admit().status).toBe(503); // 8 in flight: the lowered limit holds
      expect(stats.shed).toBe(2);
      await waitUntil(() => shedder.inFlightLimit === 16, 5000, 5); // the lag is low again: back to all of it
    } finally {
      shedder.stop();
    }
  });

  it('grows a lowered in-flight limit back once nothing is refused, even while the event loop still lags beyond the target', async () => {
    const stats = { shed: 0, inFlightLimit: 0 };
    const shedder = new LoadShedder({ maxEventLoopLagMs: 0, maxInFlight: 16, targetLagMs: 40, sampleMs: 5, stats }).start();
    const admit = admitter(shedder);
    try {
      const held = Array.from({ length: 16 }, admit);
      expect(admit().status).toBe(503);
      await blockFor(150); // refusing, and lagging beyond the target
      expect(shedder.inFlightLimit).toBe(8);
      for (const r of held) r.finish(); // the overload is over: nothing in flight, nothing refused
      // the machine stays slow: every sample still comes more than the target late
      for (let i = 0; i < 12 && shedder.inFlightLimit < 16; i++) await blockFor(60);
      expect(shedder.inFlightLimit).toBe(16);
      expect(stats.shed).toBe(1);
    } finally {
      shedder.stop();
    }
  });

  it('refuses while the event loop lags beyond maxEventLoopLagMs two samples in a row, and stops refusing when it catches up', async () => {
    const stats = { shed: 0, inFlightLimit: 0 };
    // bounds well above what a loaded machine's scheduling adds to a 5 ms timer, blocks well above the bounds
    const shedder = new LoadShedder({ maxEventLoopLagMs: 100, maxInFlight: 0, sampleMs: 5, stats }).start();
    const calm = async () => {
      await new Promise((r) => setTimeout(r, 30)); // a few samples on time
      await waitUntil(() => !shedder.overloaded, 5000, 5);
    };
    try {
      await calm();
      await blockFor(300);
      expect(shedder.overloaded).toBe(false); // one late sample: a pause, not overload
      await blockFor(300);
      expect(shedder.lag).toBeGreaterThan(100);
      expect(shedder.overloaded).toBe(true);
      await waitUntil(() => !shedder.overloaded, 5000, 5); // caught up: admitted again
    } finally {
      shedder.stop();
    }
  });
});
