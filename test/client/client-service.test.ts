import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TdsClient, contentOf, type ClientOptions } from '../../client/src/index.js';
import { createManagementClient, type ManagementClient } from '../../client/src/management.js';
import type { FetchLike } from '../../client/src/http.js';
import { waitUntil } from '../helpers/context.js';
import { projectWithKeys, startTestService, type TestService } from '../helpers/service.js';
import { NO_LOAD_SHEDDING } from './readme-examples.js';
import { startServiceProxy, type ServiceProxy } from './service-proxy.js';

/**
 * The client against the real service (every role, Redis, the embedded ClickHouse): typed
 * management calls, events that reach the profile exactly once through batches and retries, the
 * delivery answer with its tracking ids used by interactions, and the fallback when the service
 * is slow or stopped. Real 429s and 503s: client-retries.test.ts; a browser: client-browser.test.ts.
 */
let s: TestService;
let stopped = false;
let keys: { projectId: string; management: string; delivery: string; logEvents: string };
let mgmt: ManagementClient;
const field: Record<string, string> = {};
const clients: TdsClient[] = [];

beforeAll(async () => {
  s = await startTestService(NO_LOAD_SHEDDING);
  keys = await projectWithKeys(s, 'shop');
  mgmt = createManagementClient({ baseUrl: s.baseUrl, projectId: 'shop', apiKey: keys.management });
  // the README's catalogue, through the typed management client
  await mgmt.insertSurface({ name: 'home' });
  await mgmt.insertTreatmentType({
    treatmentTypeName: 'banner',
    lastModifiedBy: 'ci',
    surfaces: [{ surfaceName: 'home' }],
    contentFieldTypes: [{ fieldName: 'title', maximumLengthAllowed: 80, isPerLanguage: true }],
  });
  field.tier = (await mgmt.insertDataField({ name: 'tier', userProperty: { dataType: 'STRING' } })).dataField.dataFieldId;
  const counts = await mgmt.getDataFields({
    dataFieldParams: [
      { eventDataFieldParams: { eventSchemaName: 'purchase', dailyCountAggregation: { windowName: 'LAST_7D' } } },
      { eventDataFieldParams: { eventSchemaName: 'bulk', dailyCountAggregation: { windowName: 'LAST_7D' } } },
      { treatmentDataFieldParams: { surfaceName: 'home', treatmentInteractionType: 'VIEWED', dailyCountAggregation: { windowName: 'LAST_1D' } } },
      { treatmentDataFieldParams: { surfaceName: 'home', treatmentInteractionType: 'CLICKED', dailyCountAggregation: { windowName: 'LAST_1D' } } },
    ],
  });
  [field.purchases, field.bulk, field.viewed, field.clicked] = counts.dataFields.map((f) => f.dataFieldId);
  await mgmt.insertTreatment({
    name: 'gold offer',
    description: 'd',
    treatmentTypeName: 'banner',
    lastModifiedBy: 'ci',
    startTimestamp: '2026-01-01T00:00:00Z',
    shouldPublish: true,
    content: { contentByLanguage: [{ languageCode: { languageCode: 'en' }, contentFields: [{ fieldName: 'title', stringValue: 'Hi {{name|friend}}' }] }] },
    eligibilityRules: {
      rules: [
        { dataFieldId: field.purchases, condition: 'GREATER_THAN_OR_EQUALS', rhsValue: '3' },
        { dataFieldId: field.tier, condition: 'EQUALS', rhsValue: 'gold' },
      ],
    },
  });
}, 120_000);

afterAll(async () => {
  for (const c of clients) await c.close(100);
  if (!stopped) await s?.stop();
});

function client(o: Partial<ClientOptions> = {}): TdsClient {
  const c = new TdsClient({ baseUrl: s.baseUrl, projectId: 'shop', deliveryKey: keys.delivery, eventsKey: keys.logEvents, onError: () => undefined, ...o });
  clients.push(c);
  return c;
}

async function profileValue(userId: string, dataFieldId: string): Promise<unknown> {
  const r = await s.admin('GetUserProfile', { projectId: 'shop', userId });
  return r.body.profile.dataFields[dataFieldId];
}

/** Waits for `expected`, then for the ingestion queues to be idle, and checks it still holds (nothing counted twice later). */
async function settlesAt(userId: string, dataFieldId: string, expected: string): Promise<void> {
  await waitUntil(async () => (await profileValue(userId, dataFieldId)) === expected, 30_000, 100);
  const idle = async () => {
    const { eventsQueue, interactionsQueue } = s.ctx.ingestion.ingest;
    const [e, i] = await Promise.all([
      eventsQueue.getJobCounts('waiting', 'active', 'delayed'),
      interactionsQueue.getJobCounts('waiting', 'active', 'delayed'),
    ]);
    return [...Object.values(e), ...Object.values(i)].every((n) => n === 0);
  };
  await waitUntil(idle, 30_000, 100);
  expect(await profileValue(userId, dataFieldId)).toBe(expected);
}

describe('the client against the running service', () => {
  it('events reach the profile, GetTreatments answers with tracking ids, and interactions use them', async () => {
    const c = client();
    c.track({ userId: 'ann', eventName: 'purchase', userProperties: { tier: 'gold' } });
    c.logEvents({
      userId: 'ann',
      events: [
        { eventName: 'purchase', clientEventTimestamp: new Date().toISOString() },
        { eventName: 'purchase', clientEventTimestamp: new Date().toISOString() },
      ],
    });
    await c.flush();
    expect(c.stats()).toMatchObject({ sent: 3, failed: 0, dropped: 0 });
    await settlesAt('ann', field.purchases, '3');

    await waitUntil(async () => (await c.getTreatments({ userId: 'ann', surfaces: [{ surface: 'home' }] })).userTreatments.length === 1, 10_000, 100);
    const answer = await c.getTreatments({ userId: 'ann', surfaces: [{ surface: 'home' }] });
    expect(answer.fallback).toBe(false);
    const [t] = answer.userTreatments;
    expect(t).toMatchObject({ surface: 'home', treatmentType: 'banner', userId: 'ann', rank: '1' });
    expect(t.treatmentTrackingId.startsWith(`${t.treatmentId}_`)).toBe(true);
    expect(contentOf(t)).toEqual({ title: 'Hi friend' });
    expect((await c.getTreatments({ userId: 'bob', surfaces: [{ surface: 'home' }] })).userTreatments).toEqual([]);

    expect(c.viewed(t)).toBe(true);
    expect(c.clicked(t, { actionName: 'cta' })).toBe(true);
    await c.flush();
    expect(c.stats()).toMatchObject({ sent: 5, failed: 0 });
    await settlesAt('ann', field.viewed, '1');
    await settlesAt('ann', field.clicked, '1');

    const read = await c.getTreatment({ treatmentId: t.treatmentId });
    expect(read.treatment.treatmentId).toBe(t.treatmentId);
    const types = await mgmt.getAllTreatmentTypes({});
    expect(types.treatmentTypes.map((x) => x.treatmentTypeName)).toEqual(['banner']);
  }, 90_000);

  it('a management call the service refuses throws its code and details', async () => {
    const err = await mgmt.insertSurface({ name: 'not a name!' }).catch((e: unknown) => e);
    expect(err).toMatchObject({ name: 'TdsError', status: 400, code: 'INVALID_ARGUMENT' });
    expect((err as { details: { field: string }[] }).details.map((d) => d.field)).toContain('name');
  });

  it('answers lost after the service took the events: the retries carry the same insertIds and nothing counts twice', async () => {
    const proxy: ServiceProxy = await startServiceProxy(s.baseUrl, (op, n) => (op === 'LogEvents' && n <= 2 ? { loseAnswer: true } : undefined));
    try {
      const c = client({ baseUrl: proxy.url, flushAt: 5, backoff: { initialDelayMs: 50, maxDelayMs: 200 } });
      for (let i = 0; i < 5; i++) c.track({ userId: 'cat', eventName: 'purchase' });
      await c.close(10_000);
      expect(proxy.seen.get('LogEvents')).toBe(3);
      expect(c.stats()).toMatchObject({ sent: 5, retries: 2, failed: 0, dropped: 0 });
      await settlesAt('cat', field.purchases, '5');
    } finally {
      await proxy.close();
    }
  }, 60_000);

  it('batches stay within their bounds: 2,500 events of one user and 300 of 30 others, each request at most maxBatchEvents and maxBatchBytes', async () => {
    const requests: { events: number; bytes: number; status: number }[] = [];
    const counting: FetchLike = async (url, init) => {
      const res = await fetch(url, init);
      if (url.endsWith('/LogEvents')) requests.push({ events: JSON.parse(init.body).events.length, bytes: Buffer.byteLength(init.body), status: res.status });
      return res;
    };
    const c = client({ fetch: counting, flushAt: 1000, maxBatchEvents: 1000, maxBatchBytes: 100_000 });
    for (let i = 0; i < 2500; i++) c.track({ userId: 'dan', eventName: 'bulk', eventProperties: { i, pad: 'x'.repeat(50) } });
    for (let i = 0; i < 300; i++) c.track({ userId: `crowd${i % 30}`, eventName: 'bulk' });
    await c.close(30_000);
    expect(c.stats()).toMatchObject({ sent: 2800, failed: 0, dropped: 0 });
    expect(requests.every((r) => r.events <= 1000 && r.bytes <= 100_000)).toBe(true);
    // an overloaded service may refuse some (503 or 429): the client sends them again
    expect(
      requests.every((r) => [200, 429, 503].includes(r.status)),
      JSON.stringify(requests.map((r) => r.status)),
    ).toBe(true);
    expect(requests.filter((r) => r.status === 200).reduce((n, r) => n + r.events, 0)).toBe(2800);
    expect(requests.length).toBeGreaterThanOrEqual(30 + Math.ceil((2500 * 130) / 100_000));
    await settlesAt('dan', field.bulk, '2500');
    await settlesAt('crowd7', field.bulk, '10');
  }, 90_000);

  it('a slow service: getTreatments answers the fallback after its timeout', async () => {
    const proxy = await startServiceProxy(s.baseUrl, (op) => (op === 'GetTreatments' ? { delayMs: 1500 } : undefined));
    try {
      const fallback = { userTreatments: [{ treatmentId: 'house-ad', surface: 'home', treatmentContent: '{"title":"Welcome"}' }] };
      const c = client({ baseUrl: proxy.url, timeoutMs: 200, fallback });
      const t0 = Date.now();
      const a = await c.getTreatments({ userId: 'ann', surfaces: [{ surface: 'home' }] });
      expect(Date.now() - t0).toBeLessThan(1400);
      expect(a).toMatchObject({ fallback: true, responseId: 'fallback', error: { kind: 'timeout' } });
      expect(a.userTreatments.map((t) => [t.treatmentId, contentOf(t)])).toEqual([['house-ad', { title: 'Welcome' }]]);
      expect(c.viewed(a.userTreatments[0])).toBe(false);
    } finally {
      await proxy.close();
    }
  });

  it('the service stopped: getTreatments answers the fallback, and close() reports the events it could not send', async () => {
    const errors: number[] = [];
    const c = client({ fallback: { userTreatments: [] }, onError: (_e, lost) => errors.push(lost) });
    expect((await c.getTreatments({ userId: 'ann', surfaces: [{ surface: 'home' }] })).fallback).toBe(false);
    await s.stop();
    stopped = true;
    const a = await c.getTreatments({ userId: 'ann', surfaces: [{ surface: 'home' }] });
    expect(a).toMatchObject({ fallback: true, userTreatments: [], error: { kind: 'network', unavailable: true } });
    for (let i = 0; i < 3; i++) c.track({ userId: 'eve', eventName: 'purchase' });
    const stats = await c.close(1500);
    expect(stats).toMatchObject({ sent: 0, dropped: 3 });
    expect(stats.retries).toBeGreaterThan(0);
    expect(errors.reduce((n, x) => n + x, 0)).toBe(3);
  }, 60_000);
});
