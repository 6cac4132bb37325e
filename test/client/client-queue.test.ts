import { afterEach, describe, expect, it } from 'vitest';
import { TdsClient, type ClientOptions } from '../../client/src/index.js';
import { takeBatches, utf8Bytes, type QueuedItem } from '../../client/src/batches.js';
import { backoffMs } from '../../client/src/backoff.js';
import { error, insertIdsOf, ok, scriptedFetch, sleep, type Reply, type Sent } from './fake-fetch.js';

/**
 * The client's event queue against a scripted fetch: batching by size and time, the same insertIds
 * on every retry, Retry-After, the memory bound, close() and the page-exit flush. The same
 * behaviours against the real service: test/client/client-service.test.ts.
 */
const clients: TdsClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close(50);
});

function client(reply: (s: Sent, n: number) => Reply | Promise<Reply>, o: Partial<ClientOptions> = {}) {
  const f = scriptedFetch(reply);
  const errors: { message: string; lost: number }[] = [];
  const c = new TdsClient({
    baseUrl: 'http://tds.test/',
    projectId: 'p',
    apiKey: 'k',
    fetch: f.fetch,
    backoff: { initialDelayMs: 10, maxDelayMs: 40 },
    onError: (e, lost) => errors.push({ message: e.message, lost }),
    ...o,
  });
  clients.push(c);
  return { c, sent: f.sent, errors };
}

const event = (userId: string, i: number, extra: Record<string, unknown> = {}) => ({ userId, eventName: 'view', timestamp: 1_767_225_600_000 + i, ...extra });

describe('batching', () => {
  it('sends nothing before flushAt events, then one request per user with their events in order', async () => {
    const { c, sent } = client(() => ok(), { flushAt: 5, flushIntervalMs: 60_000 });
    for (let i = 0; i < 4; i++) c.track(event(i % 2 ? 'b' : 'a', i));
    await sleep(20);
    expect(sent).toHaveLength(0);
    c.track(event('a', 4));
    await c.flush();
    expect(sent.map((s) => [s.body.userId, s.body.events.length]).sort()).toEqual([
      ['a', 3],
      ['b', 2],
    ]);
    expect(sent.find((s) => s.body.userId === 'a')!.body.events.map((e: any) => e.clientEventTimestamp)).toEqual([
      '2026-01-01T00:00:00.000Z',
      '2026-01-01T00:00:00.002Z',
      '2026-01-01T00:00:00.004Z',
    ]);
    expect(sent[0].headers['x-api-key']).toBe('k');
    expect(sent[0].body.projectId).toBe('p');
    expect(c.stats()).toMatchObject({ queued: 0, sent: 5, dropped: 0, failed: 0 });
  });

  it('sends fewer than flushAt events after flushIntervalMs', async () => {
    const { c, sent } = client(() => ok(), { flushAt: 100, flushIntervalMs: 50 });
    c.track(event('u', 1));
    await sleep(10);
    expect(sent).toHaveLength(0);
    await sleep(120);
    expect(sent).toHaveLength(1);
  });

  it('cuts the events of a user into requests of at most maxBatchEvents events and maxBatchBytes bytes', async () => {
    const { c, sent } = client(() => ok(), { flushAt: 10_000, flushIntervalMs: 60_000, maxBatchEvents: 100, maxBatchBytes: 20_000 });
    for (let i = 0; i < 250; i++) c.track(event('u', i));
    for (let i = 0; i < 30; i++) c.track(event('big', i, { eventProperties: { pad: 'é'.repeat(1000) } }));
    await c.flush();
    const u = sent.filter((s) => s.body.userId === 'u').map((s) => s.body.events.length);
    expect(u).toEqual([100, 100, 50]);
    const big = sent.filter((s) => s.body.userId === 'big');
    expect(big.length).toBeGreaterThan(1);
    for (const s of big) expect(s.bytes).toBeLessThanOrEqual(20_000);
    expect(big.reduce((n, s) => n + s.body.events.length, 0)).toBe(30);
    expect(new Set(insertIdsOf(sent)).size).toBe(280);
  });

  it('measures UTF-8 sizes as the service does', () => {
    for (const s of ['abc', 'é', '€', '😀', 'a\u0000b', '\ud800']) expect(utf8Bytes(s), s).toBe(Buffer.byteLength(s));
    const items: QueuedItem[] = Array.from({ length: 5 }, (_, i) => ({
      kind: 'event',
      userId: 'u',
      json: `{"i":${i}}`,
      bytes: 7,
      seq: i,
      attempts: 0,
      done: false,
    }));
    const { batches } = takeBatches(items, 'p', { maxEvents: 2, maxBytes: 1000, maxBatches: 10 });
    for (const b of batches) expect(b.bytes).toBe(Buffer.byteLength(b.body));
  });
});

describe('retries', () => {
  it('retries a 503 and a dropped connection with the same insertIds, then stops', async () => {
    const { c, sent } = client((_s, n) => (n === 1 ? error(503, 'UNAVAILABLE') : n === 2 ? 'network-error' : ok()), { flushAt: 3 });
    const ids = [c.track(event('u', 1)), c.track(event('u', 2)), c.track(event('u', 3))];
    await c.close(5000);
    expect(sent).toHaveLength(3);
    for (const s of sent) expect(s.body.events.map((e: any) => e.insertId)).toEqual(ids);
    expect(c.stats()).toMatchObject({ sent: 3, retries: 2, failed: 0, dropped: 0 });
  });

  it('waits at least Retry-After after a 429', async () => {
    const { c, sent } = client((_s, n) => (n === 1 ? error(429, 'RESOURCE_EXHAUSTED', { retryAfter: '1' }) : ok()), { flushAt: 1 });
    c.track(event('u', 1));
    await c.close(5000);
    expect(sent).toHaveLength(2);
    expect(sent[1].at - sent[0].at).toBeGreaterThanOrEqual(1000);
    expect(sent[1].body.events[0].insertId).toBe(sent[0].body.events[0].insertId);
  });

  it('backs off exponentially with jitter, capped, and never under Retry-After', () => {
    const o = { initialDelayMs: 100, maxDelayMs: 1000 };
    expect([1, 2, 3, 4, 5].map((n) => backoffMs(n, o, undefined, () => 1))).toEqual([100, 200, 400, 800, 1000]);
    expect([1, 2, 3].map((n) => backoffMs(n, o, undefined, () => 0))).toEqual([50, 100, 200]);
    expect(backoffMs(1, o, 5000, () => 0)).toBe(5000);
    expect(backoffMs(1, o, 5000, () => 1)).toBe(7500);
  });

  it('drops only the events a 400 names and sends the others again', async () => {
    const { c, sent, errors } = client(
      (s) =>
        s.body.events.some((e: any) => e.eventName === 'bad')
          ? error(400, 'INVALID_ARGUMENT', { details: [{ field: 'events[1].eventName', description: 'no' }] })
          : ok(),
      { flushAt: 3 },
    );
    c.track(event('u', 1));
    c.track({ ...event('u', 2), eventName: 'bad' });
    c.track(event('u', 3));
    await c.flush();
    expect(sent).toHaveLength(2);
    expect(sent[1].body.events.map((e: any) => e.eventName)).toEqual(['view', 'view']);
    expect(c.stats()).toMatchObject({ sent: 2, failed: 1 });
    expect(errors).toEqual([{ message: expect.stringContaining('INVALID_ARGUMENT'), lost: 1 }]);
  });

  it('gives up on a wrong key (401) at once, and on a 500 after maxAttempts', async () => {
    const a = client(() => error(401, 'UNAUTHENTICATED'), { flushAt: 2 });
    a.c.track(event('u', 1));
    a.c.track(event('u', 2));
    await a.c.flush();
    expect(a.sent).toHaveLength(1);
    expect(a.c.stats()).toMatchObject({ failed: 2, sent: 0 });
    const b = client(() => error(500, 'INTERNAL'), { flushAt: 1, maxAttempts: 3 });
    b.c.track(event('u', 1));
    await b.c.close(3000);
    expect(b.sent).toHaveLength(3);
    expect(b.c.stats()).toMatchObject({ failed: 1, retries: 2 });
  });

  it('sends smaller requests after a 413, losing nothing', async () => {
    const { c, sent } = client((s) => (s.bytes > 2000 ? error(413, 'INVALID_ARGUMENT') : ok()), { flushAt: 40 });
    for (let i = 0; i < 40; i++) c.track(event('u', i));
    await c.flush();
    expect(c.stats()).toMatchObject({ sent: 40, failed: 0 });
    expect(new Set(insertIdsOf(sent.filter((s) => s.bytes <= 2000))).size).toBe(40);
  });

  it('retries an interaction only when the service certainly did not take it (429, 503, no connection)', async () => {
    const answers: Reply[] = [
      error(503, 'UNAVAILABLE'),
      'network-error',
      error(429, 'RESOURCE_EXHAUSTED', { retryAfter: '0' }),
      ok(),
      error(502, 'BAD_GATEWAY'),
    ];
    const { c, sent } = client((_s, n) => answers[n - 1] ?? ok(), { flushAt: 1, requestTimeoutMs: 50 });
    const t = {
      treatmentId: 't1',
      treatmentTrackingId: 't1_r',
      surface: 's',
      rank: '1',
      treatmentType: 'x',
      treatmentContent: '{}',
      contentLanguageCode: 'en',
      userId: 'u',
    };
    c.viewed(t);
    await c.close(3000);
    expect(sent.map((s) => s.operation)).toEqual(['LogTreatmentInteraction', 'LogTreatmentInteraction', 'LogTreatmentInteraction', 'LogTreatmentInteraction']);
    const d = client(() => error(502, 'BAD_GATEWAY'), { flushAt: 1 });
    d.c.clicked(t);
    await d.c.close(1000);
    expect(d.sent).toHaveLength(1);
    expect(d.c.stats()).toMatchObject({ failed: 1 });
  });
});

describe('memory bound, close and page exit', () => {
  it('keeps at most maxQueueSize items while the service is down, dropping the oldest, and counts them', async () => {
    let up = false;
    const accepted: Sent[] = [];
    const { c, errors } = client(
      (s) => {
        if (!up) return 'network-error';
        accepted.push(s);
        return ok();
      },
      { flushAt: 10, maxQueueSize: 50 },
    );
    const ids: string[] = [];
    for (let i = 0; i < 200; i++) {
      ids.push(c.track(event(`u${i % 3}`, i)));
      if (i % 20 === 0) await sleep(5);
    }
    expect(c.stats().queued + c.stats().inFlight).toBeLessThanOrEqual(50);
    up = true;
    await c.close(5000);
    const delivered = new Set(insertIdsOf(accepted));
    const stats = c.stats();
    expect(stats.dropped).toBeGreaterThanOrEqual(150);
    expect(stats.sent + stats.dropped).toBe(200);
    expect(delivered.size).toBe(stats.sent);
    // the newest survive
    expect(ids.slice(-40).every((id) => delivered.has(id))).toBe(true);
    expect(errors.reduce((n, e) => n + e.lost, 0)).toBe(stats.dropped);
  });

  it('close() sends what is queued, gives up at its deadline, reports the rest, and refuses more', async () => {
    const { c, errors } = client(() => 'network-error', { flushAt: 1000 });
    for (let i = 0; i < 5; i++) c.track(event('u', i));
    const t0 = Date.now();
    const stats = await c.close(300);
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(stats).toMatchObject({ dropped: 5, queued: 0 });
    expect(errors.at(-1)!.lost).toBe(5);
    expect(() => c.track(event('u', 9))).toThrow(/closed/);
    expect(await c.close()).toEqual(stats);
  });

  it('on page exit sends queued and in-flight events with keepalive, each request and all of them within 64 KiB', async () => {
    const { c, sent } = client((s) => (s.keepalive ? ok() : 'hang'), { flushAt: 5, maxBatchBytes: 200_000 });
    for (let i = 0; i < 5; i++) c.track(event('inflight', i));
    await sleep(20);
    expect(sent).toHaveLength(1);
    for (let i = 0; i < 400; i++) c.track(event(`u${i % 4}`, i, { eventProperties: { pad: 'x'.repeat(300) } }));
    (c as unknown as { queue: { flushForPageExit(): void } }).queue.flushForPageExit();
    const keepalive = sent.filter((s) => s.keepalive);
    expect(keepalive.length).toBeGreaterThan(0);
    const total = keepalive.reduce((n, s) => n + s.bytes, 0);
    expect(total).toBeLessThanOrEqual(65_536);
    expect(total).toBeGreaterThan(50_000);
    // the in-flight request's events go again, with their insertIds
    expect(insertIdsOf(keepalive)).toEqual(expect.arrayContaining(insertIdsOf([sent[0]])));
    await sleep(10);
    expect(c.stats().queued).toBeGreaterThan(0);
  });
});
