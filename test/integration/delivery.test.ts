import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Command } from 'ioredis';
import { CatalogCache } from '../../shared/delivery/catalog.cache.js';
import type { InvalidationBus } from '../../shared/platform/redis/invalidation-bus.js';
import { queueConnection } from '../../shared/platform/redis/redis.js';
import type { InteractionJob } from '../../shared/ingestion/jobs.js';
import { RankingCounterStore } from '../../shared/delivery/ranking-counter.store.js';
import { rankingOps, type RankingDelta } from '../../shared/delivery/ranking-ops.js';
import { RankingStatsStore } from '../../shared/delivery/ranking-stats.store.js';
import { admin, call, callOk, createProjectWithKeys, createTestApp, waitUntil, type ProjectKeys, type TestApp } from '../helpers/context.js';

const MINUTE = 60_000;
const iso = (ms: number): string => new Date(ms).toISOString();

let t: TestApp;
let seq = 0;

beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t?.close();
});

const ok = (operation: string, key: string, body: unknown) => callOk(t, operation, key, body);

interface Catalog extends ProjectKeys {
  ageFieldId: string;
}

/** Surfaces home/inbox, a `card` type on both (title per language, link agnostic), data field `age`. */
async function setupCatalog(deliveryEndpoint: 'BASE' | 'ALT' = 'BASE'): Promise<Catalog> {
  const p = await createProjectWithKeys(t, undefined, deliveryEndpoint);
  for (const name of ['home', 'inbox']) await ok('InsertSurface', p.management, { projectId: p.projectId, name });
  await ok('InsertTreatmentType', p.management, {
    projectId: p.projectId,
    treatmentTypeName: 'card',
    lastModifiedBy: 'setup',
    surfaces: [{ surfaceName: 'home' }, { surfaceName: 'inbox' }],
    contentFieldTypes: [
      { fieldName: 'title', maximumLengthAllowed: 100, isPerLanguage: true },
      { fieldName: 'link', maximumLengthAllowed: 200 },
    ],
  });
  const age = await ok('InsertDataField', p.management, { projectId: p.projectId, name: 'age', userProperty: { dataType: 'INTEGER' } });
  await ok('InsertDataField', p.management, { projectId: p.projectId, name: 'first_name', userProperty: { dataType: 'STRING' } });
  return { ...p, ageFieldId: age.dataField.dataFieldId };
}

async function insertTreatment(p: ProjectKeys, overrides: Record<string, unknown> = {}): Promise<string> {
  const body = {
    projectId: p.projectId,
    name: `treatment ${++seq}`,
    description: 'd',
    treatmentTypeName: 'card',
    lastModifiedBy: 'alice',
    startTimestamp: iso(Date.now() - MINUTE),
    shouldPublish: true,
    content: {
      contentByLanguage: [{ languageCode: { languageCode: 'en' }, contentFields: [{ fieldName: 'title', stringValue: 'Hi {{first_name|there}}' }] }],
      languageAgnosticContentFields: [{ fieldName: 'link', stringValue: 'https://example.com' }],
    },
    ...overrides,
  };
  return (await ok('InsertTreatment', p.management, body)).treatment.treatmentId;
}

async function seedProfile(projectId: string, userId: string, userProperties: Record<string, unknown>): Promise<void> {
  await t.ctx.profiles.profiles.applyEvents(projectId, userId, `seed-${++seq}`, [{ ts: Date.now(), userProperties: userProperties as never }]);
}

function getTreatments(p: ProjectKeys, body: Record<string, unknown>, app = t.app) {
  return call(t, 'GetTreatments', p.delivery, { projectId: p.projectId, userId: 'u1', surfaces: [{ surface: 'home' }], ...body }, app);
}

describe('GetTreatments over HTTP', () => {
  let p: Catalog;
  let adultsOnly: string;
  let everyone: string;

  beforeAll(async () => {
    p = await setupCatalog();
    everyone = await insertTreatment(p);
    adultsOnly = await insertTreatment(p, {
      eligibilityRules: { rules: [{ dataFieldId: p.ageFieldId, condition: 'GREATER_THAN_OR_EQUALS', rhsValue: '18' }] },
    });
    await seedProfile(p.projectId, 'adult', { age: { longValue: '30' }, first_name: { stringValue: 'Ada' } });
  });

  it('returns ranked, rendered treatments with tracking ids, personalised from the stored profile', async () => {
    const r = await getTreatments(p, { userId: 'adult', surfaces: [{ surface: 'home', maximumTreatmentCount: 5 }] });
    expect(r.status).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(['responseId', 'userTreatments']);
    const { responseId, userTreatments } = r.body;
    expect(userTreatments.map((u: any) => u.treatmentId).sort()).toEqual([everyone, adultsOnly].sort());
    expect(userTreatments.map((u: any) => u.rank)).toEqual(['1', '2']);
    for (const u of userTreatments) {
      expect(u).toEqual({
        treatmentId: u.treatmentId,
        treatmentTrackingId: `${u.treatmentId}_${responseId}`,
        surface: 'home',
        rank: u.rank,
        treatmentType: 'card',
        treatmentContent: JSON.stringify({ link: 'https://example.com', title: 'Hi Ada' }),
        contentLanguageCode: 'en',
      });
    }
    const again = await getTreatments(p, { userId: 'adult' });
    expect(again.body.responseId).not.toBe(responseId);
  });

  it('applies rules, with contextual attributes overriding the profile', async () => {
    const ids = async (body: Record<string, unknown>) =>
      ((await getTreatments(p, { surfaces: [{ surface: 'home', maximumTreatmentCount: 5 }], ...body })).body.userTreatments ?? []).map(
        (u: any) => u.treatmentId,
      );
    expect(await ids({ userId: 'nobody' })).toEqual([everyone]);
    expect((await ids({ userId: 'nobody', contextualAttributes: [{ key: 'age', integerValue: 21 }] })).sort()).toEqual([everyone, adultsOnly].sort());
    expect(await ids({ userId: 'adult', contextual_attributes: [{ key: 'age', integer_value: '12' }] })).toEqual([everyone]);
  });

  it('answers only {responseId} when nothing qualifies', async () => {
    const r = await getTreatments(p, { languageCode: 'fr' });
    expect(r.status).toBe(200);
    expect(Object.keys(r.body)).toEqual(['responseId']);
  });

  it('accepts the key as the api_key query parameter', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: `/v1/GetTreatments?api_key=${encodeURIComponent(p.delivery)}`,
      payload: { projectId: p.projectId, userId: 'u1', surfaces: [{ surface: 'home' }] },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().userTreatments).toHaveLength(1);
  });

  it('needs a DELIVERY key: 401 without one, 403 for a management key', async () => {
    expect((await call(t, 'GetTreatments', undefined, { projectId: p.projectId, userId: 'u', surfaces: [{ surface: 'home' }] })).status).toBe(401);
    const r = await call(t, 'GetTreatments', p.management, { projectId: p.projectId, userId: 'u', surfaces: [{ surface: 'home' }] });
    expect(r.status).toBe(403);
    expect(r.body.error.status).toBe('PERMISSION_DENIED');
  });

  it('answers 400 INVALID_ARGUMENT naming the field for bad requests', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [
        {
          contextualAttributes: [
            { key: 'a', stringValue: 'x' },
            { key: 'a', stringValue: 'y' },
          ],
        },
        'contextualAttributes[1].key',
      ],
      [{ contextualAttributes: [{ key: 'a' }] }, 'contextualAttributes[0]'],
      [{ contextualAttributes: [{ key: 'a', stringValue: 'x', integerValue: 3 }] }, 'contextualAttributes[0]'],
      [{ surfaces: [] }, 'surfaces'],
      [{ surfaces: [{ surface: 'unknown' }] }, 'surfaces[0].surface'],
      [{ languageCode: 'no such tag' }, 'languageCode'],
      [{ colour: 'red' }, 'colour'],
    ];
    for (const [body, field] of cases) {
      const r = await getTreatments(p, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error.status).toBe('INVALID_ARGUMENT');
      expect(r.body.error.details.map((d: any) => d.field)).toContain(field);
    }
  });

  it('costs one Redis command per request (the profile) once the plan and counters are in memory, plus one decision-log add per flush interval', async () => {
    await getTreatments(p, { userId: 'adult' });
    await new Promise((r) => setTimeout(r, 50));
    const sent: string[] = [];
    // the request path's connection, and the one its BullMQ queues use (the decision log's)
    const connections = [t.ctx.redis, queueConnection(t.ctx.redis)] as unknown as { sendCommand(c: Command): unknown }[];
    const originals = connections.map((redis) => redis.sendCommand);
    connections.forEach((redis, i) => {
      redis.sendCommand = function (this: unknown, c: Command) {
        sent.push(`${c.name} ${String(c.args[0])}`);
        return originals[i].call(this, c);
      };
    });
    let spanMs = 0;
    try {
      const started = performance.now();
      const answers = await Promise.all(Array.from({ length: 10 }, () => getTreatments(p, { userId: 'adult' })));
      spanMs = performance.now() - started;
      expect(answers.every((a) => a.status === 200)).toBe(true);
      // the decision log gathers for DECISION_LOG_FLUSH_MS (100 ms) before it sends
      await new Promise((r) => setTimeout(r, 250));
    } finally {
      connections.forEach((redis, i) => (redis.sendCommand = originals[i]));
    }
    // the decisions of the responses of one flush interval go to the queue together: one job (a
    // script call) per 100 ms the ten answers spanned (one for all ten when they come within one
    // interval; test/unit/decision-log-producer.test.ts), and a read of the queue's backlog once a
    // second; never a command per response
    const profileReads = sent.filter((c) => c === `hgetall ${t.ctx.keys.profile(p.projectId, 'adult')}`);
    expect(profileReads).toHaveLength(10);
    const others = sent.filter((c) => !profileReads.includes(c));
    const flushes = Math.ceil(spanMs / 100) + 1;
    const backlogReads = Math.ceil((spanMs + 300) / 1000) + 1;
    expect(others.length).toBeGreaterThanOrEqual(1);
    expect(others.length, `${others.length} commands over ${spanMs.toFixed(0)} ms`).toBeLessThanOrEqual(Math.min(flushes + backlogReads, 9));
    for (const c of others) expect(c).toMatch(/^evalsha /);
  });
});

describe('the alternate address', () => {
  it('serves an ALT project on the alternate listener only; the base one answers 401 naming the address', async () => {
    const p = await setupCatalog('ALT');
    await insertTreatment(p);
    const onAlt = await getTreatments(p, {}, t.alt);
    expect(onAlt.status).toBe(200);
    expect(onAlt.body.userTreatments).toHaveLength(1);
    const onBase = await getTreatments(p, {}, t.app);
    expect(onBase.status).toBe(401);
    expect(onBase.body.error.message).toMatch(/alternate delivery address/);
  });

  it('rejects a BASE project on the alternate listener', async () => {
    const p = await setupCatalog();
    await insertTreatment(p);
    const r = await getTreatments(p, {}, t.alt);
    expect(r.status).toBe(401);
    expect(r.body.error.message).toMatch(/base address/);
  });
});

// The service promises a second; on a shared machine the tests wait for the change itself, with
// a generous timeout, and so check that it arrives without a request having to refresh anything.
describe('management changes reach delivery', () => {
  const PROMPTLY_MS = 15_000;
  const arrives = (cond: () => Promise<boolean>) => waitUntil(cond, PROMPTLY_MS, 10);

  it('a paused treatment stops being served, a new one starts being served', async () => {
    const p = await setupCatalog();
    const first = await insertTreatment(p);
    expect((await getTreatments(p, {})).body.userTreatments[0].treatmentId).toBe(first);
    await ok('UpdateTreatment', p.management, { projectId: p.projectId, treatmentId: first, lastModifiedBy: 'bob', shouldPause: true });
    await arrives(async () => (await getTreatments(p, {})).body.userTreatments === undefined);
    const second = await insertTreatment(p);
    await arrives(async () => (await getTreatments(p, {})).body.userTreatments?.[0]?.treatmentId === second);
  });

  it('a single request once the change is announced sees it, with no traffic in between', async () => {
    const p = await setupCatalog();
    const id = await insertTreatment(p);
    expect((await getTreatments(p, {})).body.userTreatments).toHaveLength(1);
    const announced = new Promise<void>((resolve) => {
      const off = t.ctx.bus.on((m) => {
        if (m.kind !== 'catalog' || m.projectId !== p.projectId) return;
        off();
        resolve();
      });
    });
    await ok('UpdateTreatment', p.management, { projectId: p.projectId, treatmentId: id, lastModifiedBy: 'bob', shouldDelete: true });
    await announced;
    expect((await getTreatments(p, {})).body.userTreatments).toBeUndefined();
  });

  it('a newly registered surface can be requested at once', async () => {
    const p = await setupCatalog();
    expect((await getTreatments(p, { surfaces: [{ surface: 'late' }] })).status).toBe(400);
    await ok('InsertSurface', p.management, { projectId: p.projectId, name: 'late' });
    await arrives(async () => (await getTreatments(p, { surfaces: [{ surface: 'late' }] })).status === 200);
  });

  it('without the invalidation bus, the catalogue version is checked instead', async () => {
    const p = await setupCatalog();
    const id = await insertTreatment(p);
    const deafBus = { isListening: false, on: () => () => undefined } as unknown as InvalidationBus;
    const { redis, keys, log, projects, catalog, treatments, aggregation } = t.ctx;
    const cache = new CatalogCache({ redis, keys, log, bus: deafBus, projects: projects.projects, ...catalog, ...treatments, ...aggregation });
    try {
      const servable = async () => (await cache.plan(p.projectId)).bySurface.get('home')?.some((x) => x.treatmentId === id) ?? false;
      expect(await servable()).toBe(true);
      await ok('UpdateTreatment', p.management, { projectId: p.projectId, treatmentId: id, lastModifiedBy: 'bob', shouldPause: true });
      await arrives(async () => !(await servable()));
    } finally {
      await cache.close();
    }
  });
});

describe('ExplainTreatments', () => {
  it('says per surface and treatment whether it is returned and, if not, why', async () => {
    const p = await setupCatalog();
    const ruled = await insertTreatment(p, {
      eligibilityRules: { rules: [{ dataFieldId: p.ageFieldId, condition: 'GREATER_THAN_OR_EQUALS', rhsValue: '18' }] },
    });
    const removed = await insertTreatment(p, { removedSurfaces: { surfaces: [{ name: 'home' }] } });
    const draft = await insertTreatment(p, { shouldPublish: false });
    await seedProfile(p.projectId, 'kid', { age: { longValue: '9' } });
    const r = await admin(t, 'ExplainTreatments', {
      projectId: p.projectId,
      userId: 'kid',
      surfaces: [{ surface: 'home', maximumTreatmentCount: 3 }, { surface: 'inbox' }],
    });
    expect(r.status).toBe(200);
    const [home, inbox] = r.body.explanation.surfaces;
    const on = (s: any, id: string) => s.treatments.find((x: any) => x.treatmentId === id);
    expect(on(home, ruled)).toMatchObject({
      returned: false,
      status: 'LIVE',
      reasons: ['RULE_NOT_MET'],
      rules: [{ dataFieldId: p.ageFieldId, dataFieldName: 'age', value: '9', source: 'profile', outcome: { result: false, reason: 'NOT_MATCHED' } }],
    });
    expect(on(home, removed)).toMatchObject({ returned: false, reasons: ['SURFACE_REMOVED'] });
    expect(on(home, draft)).toMatchObject({ returned: false, status: 'DRAFT', reasons: ['NOT_LIVE'] });
    expect(on(inbox, removed)).toMatchObject({ returned: true, rank: '1' });
    expect(r.body.response.userTreatments.map((u: any) => `${u.surface}:${u.treatmentId}`)).toEqual([`inbox:${removed}`]);
    expect(r.body.explanation.rankingPolicy).toBe('greedy');
  });

  it('needs the admin token', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/admin/v1/ExplainTreatments',
      payload: { projectId: 'x', userId: 'u', surfaces: [{ surface: 'home' }] },
    });
    expect(res.statusCode).toBe(401);
  });
});

describe('ranking', () => {
  function interaction(p: ProjectKeys, treatmentId: string, interactionType: string): InteractionJob {
    return {
      kind: 'interaction',
      projectId: p.projectId,
      userId: 'x',
      treatmentId,
      treatmentTrackingId: `${treatmentId}_r`,
      surface: 'home',
      interactionType,
      interactionTimeMicros: '0',
      receivedAt: 0,
    };
  }

  /** The counters as the interactions worker writes them: `rankingOps` applied by the ranking counter script. */
  async function seedInteractions(p: ProjectKeys, treatmentId: string, views: number, clicks: number, completions: number): Promise<void> {
    const deltas: RankingDelta[] = [];
    const add = (type: string, n: number) => {
      for (let i = 0; i < n; i++) deltas.push(...rankingOps(interaction(p, treatmentId, type)));
    };
    add('VIEWED', views);
    add('CLICKED', clicks);
    add('CTA_COMPLETED', completions);
    add('DISMISSED', 5);
    await new RankingCounterStore(t.ctx.redis, t.ctx.keys).apply(p.projectId, `rank-${++seq}`, deltas);
  }

  it('counts VIEWED as views and CLICKED + CTA_COMPLETED as actions, per surface and treatment', async () => {
    const p = await setupCatalog();
    await seedInteractions(p, '77', 10, 2, 1);
    const stats = await new RankingStatsStore(t.ctx.redis, t.ctx.keys).read(p.projectId);
    expect(stats.get('home', '77')).toEqual({ views: 10, actions: 3 });
    expect(stats.get('inbox', '77')).toEqual({ views: 0, actions: 0 });
  });

  it('ranks a clearly better treatment first for most users', async () => {
    const p = await setupCatalog();
    const weak = await insertTreatment(p);
    const strong = await insertTreatment(p);
    await seedInteractions(p, weak, 200, 4, 1);
    await seedInteractions(p, strong, 200, 50, 10);
    let strongFirst = 0;
    const users = 40;
    for (let i = 0; i < users; i++) {
      const r = await getTreatments(p, { userId: `user-${i}`, surfaces: [{ surface: 'home', maximumTreatmentCount: 2 }] });
      expect(r.body.userTreatments).toHaveLength(2);
      if (r.body.userTreatments[0].treatmentId === strong) strongFirst++;
    }
    expect(strongFirst).toBeGreaterThanOrEqual(users * 0.9);
  });

  it('picks up new counters within about a second without a request waiting for them', async () => {
    const p = await setupCatalog();
    const a = await insertTreatment(p);
    const b = await insertTreatment(p);
    const store = new RankingStatsStore(t.ctx.redis, t.ctx.keys, { refreshMs: 200 });
    expect((await store.view(p.projectId)).get('home', a)).toEqual({ views: 0, actions: 0 });
    await seedInteractions(p, a, 30, 3, 0);
    await seedInteractions(p, b, 1, 0, 0);
    await waitUntil(async () => (await store.view(p.projectId)).get('home', a).views === 30, 1000);
    expect((await store.view(p.projectId)).get('home', b)).toEqual({ views: 1, actions: 0 });
  });
});
