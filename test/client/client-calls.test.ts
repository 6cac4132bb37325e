import { describe, expect, it } from 'vitest';
import { TdsClient, TdsError, contentOf, type ClientOptions, type Treatment } from '../../client/src/index.js';
import { createManagementClient } from '../../client/src/management.js';
import { retryAfterMs } from '../../client/src/http.js';
import { error, ok, scriptedFetch, type Reply, type Sent } from './fake-fetch.js';

/** getTreatments' timeout and fallback, interactions, event input checks, the management client: against a scripted fetch. */

const ANSWER = {
  responseId: 'r1',
  userTreatments: [
    {
      treatmentId: 't1',
      treatmentTrackingId: 't1_r1',
      surface: 'home',
      rank: '1',
      treatmentType: 'banner',
      treatmentContent: '{"title":"Hi"}',
      contentLanguageCode: 'en',
    },
  ],
};

function client(reply: (s: Sent, n: number) => Reply | Promise<Reply>, o: Partial<ClientOptions> = {}) {
  const f = scriptedFetch(reply);
  const c = new TdsClient({
    baseUrl: 'http://tds.test',
    projectId: 'shop',
    deliveryKey: 'dk',
    eventsKey: 'ek',
    fetch: f.fetch,
    flushAt: 1,
    onError: () => undefined,
    ...o,
  });
  return { c, sent: f.sent };
}

const FALLBACK = { userTreatments: [{ treatmentId: 'default', surface: 'home', treatmentContent: '{"title":"Welcome"}' }] };

describe('getTreatments', () => {
  it('posts the request with the delivery key and the project, and keeps the user on every treatment', async () => {
    const { c, sent } = client(() => ok(ANSWER));
    const a = await c.getTreatments({ userId: 'u1', surfaces: [{ surface: 'home' }] });
    expect(sent[0]).toMatchObject({
      operation: 'GetTreatments',
      headers: { 'x-api-key': 'dk', 'content-type': 'application/json' },
      body: { projectId: 'shop', userId: 'u1', surfaces: [{ surface: 'home' }] },
    });
    expect(a).toEqual({ responseId: 'r1', fallback: false, userTreatments: [{ ...ANSWER.userTreatments[0], userId: 'u1' }] });
    expect(contentOf(a.userTreatments[0])).toEqual({ title: 'Hi' });
    const none = client(() => ok({ responseId: 'r2' }));
    expect((await none.c.getTreatments({ userId: 'u', surfaces: [] })).userTreatments).toEqual([]);
  });

  it('answers the fallback after the timeout (default 300 ms), on no answer, a 429 or a 5xx', async () => {
    for (const reply of ['hang', 'network-error', error(429, 'RESOURCE_EXHAUSTED'), error(503, 'UNAVAILABLE'), error(500, 'INTERNAL')] as Reply[]) {
      const { c } = client(() => reply, { fallback: FALLBACK });
      const t0 = Date.now();
      const a = await c.getTreatments({ userId: 'u1', surfaces: [{ surface: 'home' }] });
      expect(a.fallback, JSON.stringify(reply)).toBe(true);
      expect(a.userTreatments).toEqual([
        {
          treatmentId: 'default',
          surface: 'home',
          treatmentContent: '{"title":"Welcome"}',
          treatmentTrackingId: '',
          treatmentType: '',
          contentLanguageCode: '',
          rank: '1',
          userId: 'u1',
        },
      ]);
      expect(a.error).toBeInstanceOf(TdsError);
      if (reply === 'hang') {
        expect(a.error!.kind).toBe('timeout');
        expect(Date.now() - t0).toBeGreaterThanOrEqual(290);
        expect(Date.now() - t0).toBeLessThan(2000);
      }
    }
  });

  it('takes an answer that is not JSON (a proxy page) for no answer', async () => {
    const f = scriptedFetch(() => ({ status: 200 }));
    const c = new TdsClient({
      baseUrl: 'http://tds.test',
      projectId: 'shop',
      apiKey: 'k',
      fetch: async (url, init) => ({ ...(await f.fetch(url, init)), text: async () => '<html>gateway</html>' }),
      fallback: FALLBACK,
    });
    expect(await c.getTreatments({ userId: 'u', surfaces: [] })).toMatchObject({ fallback: true, error: { kind: 'network' } });
  });

  it('takes a per-call timeout and fallback, and a fallback function of the request', async () => {
    const { c } = client(() => 'hang');
    const t0 = Date.now();
    const a = await c.getTreatments(
      { userId: 'u9', surfaces: [{ surface: 'side' }] },
      { timeoutMs: 50, fallback: (req) => ({ userTreatments: req.surfaces.map((s) => ({ treatmentId: `default-${s.surface}`, surface: s.surface })) }) },
    );
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(a.userTreatments.map((t) => t.treatmentId)).toEqual(['default-side']);
  });

  it('throws without a fallback, and always for a request the service refuses', async () => {
    await expect(client(() => 'network-error').c.getTreatments({ userId: 'u', surfaces: [] })).rejects.toMatchObject({
      name: 'TdsError',
      kind: 'network',
      unavailable: true,
    });
    const refused = client(() => error(400, 'INVALID_ARGUMENT', { details: [{ field: 'surfaces[0].surface', description: 'unknown' }] }), {
      fallback: FALLBACK,
    });
    const err = await refused.c.getTreatments({ userId: 'u', surfaces: [{ surface: 'x' }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TdsError);
    expect(err).toMatchObject({
      kind: 'http',
      status: 400,
      code: 'INVALID_ARGUMENT',
      details: [{ field: 'surfaces[0].surface', description: 'unknown' }],
      unavailable: false,
    });
    await expect(client(() => error(401, 'UNAUTHENTICATED'), { fallback: FALLBACK }).c.getTreatments({ userId: 'u', surfaces: [] })).rejects.toMatchObject({
      status: 401,
    });
  });

  it("stops at the caller's AbortSignal (no fallback: the caller gave up)", async () => {
    const { c } = client(() => 'hang', { fallback: FALLBACK });
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 20);
    await expect(c.getTreatments({ userId: 'u', surfaces: [] }, { signal: ac.signal })).rejects.toMatchObject({ kind: 'aborted' });
  });
});

describe('interactions', () => {
  it('send the tracking id, treatment, surface and user of a returned treatment', async () => {
    const { c, sent } = client((s) => (s.operation === 'GetTreatments' ? ok(ANSWER) : ok()));
    const [t] = (await c.getTreatments({ userId: 'u1', surfaces: [{ surface: 'home' }] })).userTreatments;
    expect(c.viewed(t)).toBe(true);
    expect(c.clicked(t, { actionName: 'cta', at: new Date('2026-01-02T00:00:00Z') })).toBe(true);
    await c.flush();
    const bodies = sent.filter((s) => s.operation === 'LogTreatmentInteraction').map((s) => s.body);
    expect(bodies[0]).toMatchObject({
      projectId: 'shop',
      userId: 'u1',
      treatmentTrackingId: 't1_r1',
      treatmentId: 't1',
      surface: 'home',
      interactionType: 'VIEWED',
    });
    expect(bodies[1]).toEqual({
      projectId: 'shop',
      userId: 'u1',
      treatmentTrackingId: 't1_r1',
      treatmentId: 't1',
      surface: 'home',
      interactionType: 'CLICKED',
      interactionTimeMicros: '1767312000000000',
      actionName: 'cta',
    });
    expect(Math.abs(Number(bodies[0].interactionTimeMicros) / 1000 - Date.now())).toBeLessThan(5000);
    expect(sent.filter((s) => s.operation === 'LogTreatmentInteraction').every((s) => s.headers['x-api-key'] === 'dk')).toBe(true);
  });

  it('are skipped for a fallback treatment (it has no tracking id)', async () => {
    const { c, sent } = client(() => 'network-error', { fallback: FALLBACK });
    const [t] = (await c.getTreatments({ userId: 'u1', surfaces: [] })).userTreatments;
    expect(c.viewed(t)).toBe(false);
    expect(c.stats().queued).toBe(0);
    expect(sent).toHaveLength(1);
    expect(() => c.viewed({} as Treatment)).toThrow(TypeError);
  });
});

describe('events', () => {
  it('track gives each event an insertId once, with the plain property values typed as the service takes them', async () => {
    const { c, sent } = client(() => ok());
    const id = c.track({
      userId: 'u',
      eventName: 'purchase',
      timestamp: '2026-01-01T10:00:00+01:00',
      eventProperties: { sku: 'A1', qty: 2, price: 9.5, gift: false, at: new Date(0), raw: { longValue: '12' } },
      userProperties: { tier: 'gold' },
      sessionId: 's1',
    });
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    await c.flush();
    expect(sent[0].headers['x-api-key']).toBe('ek');
    expect(sent[0].body).toEqual({
      projectId: 'shop',
      userId: 'u',
      events: [
        {
          eventName: 'purchase',
          clientEventTimestamp: '2026-01-01T10:00:00+01:00',
          insertId: id,
          sessionId: 's1',
          eventProperties: {
            sku: { stringValue: 'A1' },
            qty: { longValue: 2 },
            price: { doubleValue: 9.5 },
            gift: { booleanValue: false },
            at: { timestampValue: '1970-01-01T00:00:00.000Z' },
            raw: { longValue: '12' },
          },
          userProperties: { tier: { stringValue: 'gold' } },
        },
      ],
    });
  });

  it('logEvents queues a request in the wire form, keeping given insertIds', async () => {
    const { c, sent } = client(() => ok(), { flushAt: 2 });
    const ids = c.logEvents({
      userId: 'u',
      events: [
        { eventName: 'a', clientEventTimestamp: '2026-01-01T00:00:00Z', insertId: 'mine' },
        { eventName: 'b', clientEventTimestamp: '2026-01-01T00:00:01Z' },
      ],
    });
    expect(ids[0]).toBe('mine');
    await c.flush();
    expect(sent[0].body.events.map((e: any) => [e.eventName, e.insertId])).toEqual([
      ['a', 'mine'],
      ['b', ids[1]],
    ]);
    expect(() => c.logEvents({ projectId: 'other', userId: 'u', events: [] })).toThrow(/projectId/);
  });

  it('refuses malformed events at once, naming the problem', () => {
    const { c } = client(() => ok());
    expect(() => c.track({ userId: '', eventName: 'e' })).toThrow(/userId/);
    expect(() => c.track({ userId: 'u', eventName: 'e'.repeat(257) })).toThrow(/eventName/);
    expect(() => c.track({ userId: 'u', eventName: 'e', timestamp: '2026-01-01 10:00' })).toThrow(/RFC 3339/);
    expect(() => c.track({ userId: 'u', eventName: 'e', timestamp: Number.NaN })).toThrow(/valid time/);
    expect(() => c.track({ userId: 'u', eventName: 'e', eventProperties: { x: Number.POSITIVE_INFINITY } })).toThrow(/finite/);
    expect(() => c.track({ userId: 'u', eventName: 'e', eventProperties: { x: null as never } })).toThrow(/eventProperties\.x/);
    expect(c.stats().queued).toBe(0);
  });

  it('refuses bad options and a missing key with a TypeError naming them', () => {
    const f = scriptedFetch(() => ok()).fetch;
    expect(() => new TdsClient({ baseUrl: 'tds.test', projectId: 'p', fetch: f })).toThrow(/baseUrl/);
    expect(() => new TdsClient({ baseUrl: 'http://x', projectId: 'a b', fetch: f })).toThrow(/projectId/);
    expect(() => new TdsClient({ baseUrl: 'http://x', projectId: 'p', maxBatchEvents: 5000, fetch: f })).toThrow(/maxBatchEvents/);
    const noKeys = new TdsClient({ baseUrl: 'http://x', projectId: 'p', fetch: f });
    expect(() => noKeys.track({ userId: 'u', eventName: 'e' })).toThrow(/eventsKey/);
    return expect(noKeys.getTreatments({ userId: 'u', surfaces: [] })).rejects.toThrow(/deliveryKey/);
  });
});

describe('the management client', () => {
  it('has a typed method per management operation, filling in the project', async () => {
    const f = scriptedFetch((s) => ok({ surface: { name: s.body.name } }));
    const m = createManagementClient({ baseUrl: 'http://tds.test', projectId: 'shop', apiKey: 'mk', fetch: f.fetch });
    const r = await m.insertSurface({ name: 'home' });
    expect(r.surface.name).toBe('home');
    expect(f.sent[0]).toMatchObject({ operation: 'InsertSurface', headers: { 'x-api-key': 'mk' }, body: { projectId: 'shop', name: 'home' } });
    await m.call('GetAllSurfaces', { projectId: 'other' });
    expect(f.sent[1]).toMatchObject({ operation: 'GetAllSurfaces', body: { projectId: 'other' } });
    expect(typeof (m as unknown as Record<string, unknown>).logEvents).toBe('undefined');
    await expect(m.call('LogEvents' as never, {} as never)).rejects.toThrow(/not a management operation/);
  });

  it('retries a 429 after Retry-After, a 503 only for reads, and throws the service error otherwise', async () => {
    const f = scriptedFetch((_s, n) =>
      n === 1 ? error(429, 'RESOURCE_EXHAUSTED', { retryAfter: '0' }) : n === 2 ? error(503, 'UNAVAILABLE') : ok({ surfaces: [] }),
    );
    const m = createManagementClient({ baseUrl: 'http://tds.test', projectId: 'shop', apiKey: 'mk', fetch: f.fetch });
    expect(await m.getAllSurfaces({})).toEqual({ surfaces: [] });
    expect(f.sent).toHaveLength(3);
    const w = scriptedFetch(() => error(503, 'UNAVAILABLE'));
    const mw = createManagementClient({ baseUrl: 'http://tds.test', projectId: 'shop', apiKey: 'mk', fetch: w.fetch });
    await expect(mw.insertSurface({ name: 'x' })).rejects.toMatchObject({ status: 503, code: 'UNAVAILABLE' });
    expect(w.sent).toHaveLength(1);
  });
});

describe('Retry-After', () => {
  it('reads whole seconds and HTTP dates', () => {
    expect(retryAfterMs('3')).toBe(3000);
    expect(retryAfterMs('Thu, 01 Jan 2026 00:00:10 GMT', Date.parse('2026-01-01T00:00:00Z'))).toBe(10_000);
    expect(retryAfterMs(null)).toBeUndefined();
    expect(retryAfterMs('soon')).toBeUndefined();
  });
});
