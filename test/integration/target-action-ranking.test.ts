import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, projectWithKeys, type TestService } from '../helpers/service.js';
import { waitUntil } from '../helpers/context.js';

/**
 * A treatment's target-action event, logged through LogEvents within 7 days after the user viewed
 * the treatment, counts as a ranking action, and the bandit then favours the treatment. The whole
 * service over HTTP: API, workers, embedded ClickHouse, real Redis.
 */
let s: TestService;
let k: Awaited<ReturnType<typeof projectWithKeys>>;
const DAY = 86_400_000;
const iso = (ms: number) => new Date(ms).toISOString();
let purchase: string;
let signup: string;

async function v1(op: string, key: string, body: Record<string, unknown>): Promise<any> {
  const res = await s.post(`/v1/${op}`, { projectId: k.projectId, ...body }, { 'x-api-key': key });
  if (res.status !== 200) throw new Error(`${op}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

async function treatment(name: string, surface: string, eventId: string): Promise<string> {
  const r = await v1('InsertTreatment', k.management, {
    name,
    description: name,
    treatmentTypeName: 'card',
    lastModifiedBy: 'test',
    startTimestamp: iso(Date.now() - DAY),
    shouldPublish: true,
    content: { contentByLanguage: [{ languageCode: { languageCode: 'en' }, contentFields: [{ fieldName: 'title', stringValue: name }] }] },
    removedSurfaces: { surfaces: ['home', 'promo'].filter((x) => x !== surface).map((n) => ({ name: n })) },
    targetAction: { eventId },
  });
  return r.treatment.treatmentId;
}

const viewed = (userId: string, treatmentId: string, surface: string, atMs: number) =>
  v1('LogTreatmentInteraction', k.delivery, {
    userId,
    treatmentId,
    treatmentTrackingId: `${treatmentId}_${userId}`,
    surface,
    interactionType: 'VIEWED',
    interactionTimeMicros: String(atMs * 1000),
  });

const logEvent = (userId: string, eventName: string, atMs: number, insertId: string) =>
  v1('LogEvents', k.logEvents, { userId, events: [{ eventName, clientEventTimestamp: iso(atMs), insertId }] });

/** Every queued interaction and event processed. */
async function drained(): Promise<void> {
  const { eventsQueue, interactionsQueue } = s.ctx.ingestion.ingest;
  await waitUntil(
    async () => {
      const counts = await Promise.all([eventsQueue, interactionsQueue].map((q) => q.getJobCounts('waiting', 'active', 'delayed', 'prioritized')));
      return counts.every((c) => c.waiting + c.active + c.delayed + c.prioritized === 0);
    },
    30_000,
    50,
  );
}

async function arm(surface: string, treatmentId: string): Promise<{ views: number; actions: number }> {
  const raw = await s.ctx.redis.hgetall(s.ctx.keys.rankingStats(k.projectId));
  return { views: Number(raw[`v:${surface}:${treatmentId}`] ?? 0), actions: Number(raw[`a:${surface}:${treatmentId}`] ?? 0) };
}

beforeAll(async () => {
  s = await startTestService();
  k = await projectWithKeys(s, 'target-rank');
  for (const name of ['home', 'promo']) await v1('InsertSurface', k.management, { name });
  await v1('InsertTreatmentType', k.management, {
    treatmentTypeName: 'card',
    lastModifiedBy: 'test',
    surfaces: [{ surfaceName: 'home' }, { surfaceName: 'promo' }],
    contentFieldTypes: [{ fieldName: 'title', maximumLengthAllowed: 100, isPerLanguage: true }],
  });
  purchase = (await v1('InsertEventSchema', k.management, { eventName: 'purchase' })).eventSchema.eventId;
  signup = (await v1('InsertEventSchema', k.management, { eventName: 'signup' })).eventSchema.eventId;
}, 120_000);

afterAll(async () => {
  await s?.stop();
});

describe('target-action events as ranking actions', () => {
  it('count once within 7 days after a view; not without a view, after 7 days, or for another event', async () => {
    const id = await treatment('offer', 'home', purchase);
    const now = Date.now();
    await viewed('alice', id, 'home', now - DAY);
    await viewed('carol', id, 'home', now - 9 * DAY);
    await viewed('dave', id, 'home', now - DAY);
    await drained();
    // alice's purchase is sent twice (a client retry): one action
    await logEvent('alice', 'purchase', now, 'a1');
    await logEvent('alice', 'purchase', now, 'a1');
    await logEvent('bob', 'purchase', now, 'b1');
    await logEvent('carol', 'purchase', now, 'c1');
    await logEvent('dave', 'signup', now, 'd1');
    await drained();
    expect(await arm('home', id)).toEqual({ views: 3, actions: 1 });
  }, 60_000);

  it('make the bandit favour the treatment whose target action follows its views', async () => {
    const good = await treatment('good', 'promo', purchase);
    const other = await treatment('other', 'promo', signup);
    const now = Date.now();
    await Promise.all(Array.from({ length: 30 }, (_, u) => [viewed(`r${u}`, good, 'promo', now - 1000), viewed(`r${u}`, other, 'promo', now - 1000)]).flat());
    await drained();
    // half of the viewers purchase (good's target action); nobody signs up (other's)
    await Promise.all(Array.from({ length: 15 }, (_, u) => logEvent(`r${u}`, 'purchase', now, `buy-${u}`)));
    await drained();
    expect(await arm('promo', good)).toEqual({ views: 30, actions: 15 });
    expect(await arm('promo', other)).toEqual({ views: 30, actions: 0 });

    const firstFor = async (userId: string) =>
      (await v1('GetTreatments', k.delivery, { userId, surfaces: [{ surface: 'promo', maximumTreatmentCount: 2 }] })).userTreatments[0].treatmentId as string;
    // delivery's counters are a snapshot refreshed every second: wait until it has the actions
    // (with the old snapshot both arms are equal, and 8 draws in a row favour one only 1 time in 256)
    await waitUntil(async () => (await Promise.all(Array.from({ length: 8 }, (_, i) => firstFor(`probe${i}`)))).every((t) => t === good), 10_000, 200);
    let goodFirst = 0;
    for (let u = 0; u < 40; u++) if ((await firstFor(`new${u}`)) === good) goodFirst++;
    expect(goodFirst).toBeGreaterThanOrEqual(36);
  }, 60_000);
});
