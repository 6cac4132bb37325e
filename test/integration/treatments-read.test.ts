import Fastify from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import { admin, createProjectWithKeys } from '../helpers/context.js';
import { T0, MINUTE, HOUR, iso, content, insertBody, statuses, expectInvalid, useTreatmentApp, type Catalog } from '../helpers/treatment-catalog.js';
import { GetTreatmentResponse } from '../../shared/treatments/index.js';

/** GetAllTreatments filters and GetTreatment, its 404s, permissions and what a public key reads. */
const { app, send, setupCatalog, insert, update, get, getAll } = useTreatmentApp();

describe('GetAllTreatments', () => {
  let p: Catalog;
  let a: any;
  let b: any;
  let c: any;
  let d: any;

  beforeAll(async () => {
    app().clock.set(T0);
    p = await setupCatalog();
    // a: card, LIVE v1 + drafts v2 (T0+1m) and v3 (T0+2m); tags promo
    a = await insert(p, { tags: [{ name: 'promo' }], shouldPublish: true });
    app().clock.set(T0 + MINUTE);
    await update(p, { treatmentId: a.treatmentId, content: content('v2') });
    app().clock.set(T0 + 2 * MINUTE);
    await update(p, { treatmentId: a.treatmentId, content: content('v3') });
    // b: card, only on inbox, tags news
    b = await insert(p, { tags: [{ name: 'news' }], removedSurfaces: { surfaces: [{ name: 'home' }] }, shouldPublish: true });
    // c: email on banner, tags promo
    c = await insert(p, {
      treatmentTypeName: 'email',
      tags: [{ name: 'promo' }],
      content: { contentByLanguage: [{ languageCode: { languageCode: 'en' }, contentFields: [{ fieldName: 'subject', stringValue: 'S' }] }] },
      shouldPublish: true,
    });
    // d: card draft only
    d = await insert(p);
    app().clock.set(T0);
  });

  const ids = (ts: any[]) => ts.map((x) => x.treatmentId);

  it('lists every treatment in ascending id order with every version, newest first', async () => {
    const all = await getAll(p);
    expect(ids(all)).toEqual([a.treatmentId, b.treatmentId, c.treatmentId, d.treatmentId]);
    app().clock.set(T0 + 3 * MINUTE);
    expect(statuses((await getAll(p))[0])).toEqual([
      [3, 'DRAFT'],
      [2, 'DRAFT'],
      [1, 'LIVE'],
    ]);
  });

  it('filters by treatment type name', async () => {
    expect(ids(await getAll(p, { treatmentFilter: { treatmentTypeName: 'email' } }))).toEqual([c.treatmentId]);
    expect(await getAll(p, { treatmentFilter: { treatmentTypeName: 'nope' } })).toEqual([]);
    expect(ids(await getAll(p, { treatmentFilter: { treatmentTypeName: '' } }))).toHaveLength(4);
  });

  it('filters versions by surface (OR), by tag (OR), and by both (AND)', async () => {
    const f = (surfaceNames?: string[], tags?: string[]) =>
      getAll(p, { treatmentVersionFilter: { ...(surfaceNames ? { surface: { surfaceNames } } : {}), ...(tags ? { tag: { tags } } : {}) } });
    expect(ids(await f(['home']))).toEqual([a.treatmentId, d.treatmentId]);
    expect(ids(await f(['home', 'banner']))).toEqual([a.treatmentId, c.treatmentId, d.treatmentId]);
    expect(ids(await f(undefined, ['promo']))).toEqual([a.treatmentId, c.treatmentId]);
    expect(ids(await f(undefined, ['promo', 'news']))).toEqual([a.treatmentId, b.treatmentId, c.treatmentId]);
    expect(ids(await f(['inbox'], ['news']))).toEqual([b.treatmentId]);
    expect(ids(await f(['banner'], ['news']))).toEqual([]);
  });

  it('maxNonLiveVersions: unset all, 0 live only (treatments without one omitted), N live plus N newest others', async () => {
    const versionsOf = async (max?: number) => {
      const listed = await getAll(p, max === undefined ? {} : { maxNonLiveVersions: max });
      return Object.fromEntries(listed.map((x) => [x.treatmentId, x.versions.map((v: any) => v.versionNumber)]));
    };
    expect((await versionsOf())[a.treatmentId]).toEqual([3, 2, 1]);
    const zero = await versionsOf(0);
    expect(zero[a.treatmentId]).toEqual([1]);
    expect(zero[d.treatmentId]).toBeUndefined();
    expect((await versionsOf(1))[a.treatmentId]).toEqual([3, 1]);
    expect((await versionsOf(1))[d.treatmentId]).toEqual([1]);
    expect((await versionsOf(5))[a.treatmentId]).toEqual([3, 2, 1]);
    expectInvalid(await send('GetAllTreatments', p.management, { projectId: p.projectId, maxNonLiveVersions: -1 }), 'maxNonLiveVersions');
  });

  it('answers {treatments: []} for a project without treatments', async () => {
    const q = await createProjectWithKeys(app());
    const res = await send('GetAllTreatments', q.management, { projectId: q.projectId });
    expect(res).toEqual({ status: 200, body: { treatments: [] } });
  });
});

describe('GetTreatment, 404s and permissions', () => {
  let p: Catalog;
  let q: Catalog;
  let tr: any;
  beforeAll(async () => {
    p = await setupCatalog();
    q = await setupCatalog();
    tr = await insert(p, { shouldPublish: true });
  });

  it('answers 404 for an unknown id and for an id of another project (get and update)', async () => {
    const unknown = await send('GetTreatment', p.management, { projectId: p.projectId, treatmentId: '987654321987' });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.status).toBe('NOT_FOUND');
    expect((await send('GetTreatment', q.management, { projectId: q.projectId, treatmentId: tr.treatmentId })).status).toBe(404);
    const upd = await send('UpdateTreatment', q.management, { projectId: q.projectId, treatmentId: tr.treatmentId, lastModifiedBy: 'eve', name: 'pwned' });
    expect(upd.status).toBe(404);
    expect(
      (await send('UpdateTreatment', p.management, { projectId: p.projectId, treatmentId: '987654321987', lastModifiedBy: 'bob', shouldDelete: true })).status,
    ).toBe(404);
    expect((await get(p, tr.treatmentId)).name).toBe('Welcome');
  });

  it('lets a DELIVERY key read but not write or list; LOG_EVENTS keys get 403; another project’s key 401', async () => {
    expect((await send('GetTreatment', p.delivery, { projectId: p.projectId, treatmentId: tr.treatmentId })).status).toBe(200);
    for (const [op, body] of [
      ['InsertTreatment', insertBody(p)],
      ['UpdateTreatment', { projectId: p.projectId, treatmentId: tr.treatmentId, lastModifiedBy: 'x', name: 'y' }],
      ['GetAllTreatments', { projectId: p.projectId }],
    ] as const) {
      const res = await send(op, p.delivery, body);
      expect(res.status, op).toBe(403);
      expect(res.body.error.status).toBe('PERMISSION_DENIED');
    }
    expect((await send('GetTreatment', p.logEvents, { projectId: p.projectId, treatmentId: tr.treatmentId })).status).toBe(403);
    expect((await send('InsertTreatment', p.logEvents, insertBody(p))).status).toBe(403);
    expect((await send('GetTreatment', q.management, { projectId: p.projectId, treatmentId: tr.treatmentId })).status).toBe(401);
    expect((await send('InsertTreatment', q.management, insertBody(p))).status).toBe(401);
    expect((await send('InsertTreatment', undefined, insertBody(p))).status).toBe(401);
  });

  it('serves GetTreatment on the alternate listener for ALT projects only (header or api_key parameter)', async () => {
    const alt = await setupCatalog('ALT');
    const altTr = await insert(alt);
    const viaHeader = await send('GetTreatment', alt.delivery, { projectId: alt.projectId, treatmentId: altTr.treatmentId }, app().alt);
    expect(viaHeader.status).toBe(200);
    // a draft: a DELIVERY key reads no version of it
    expect(viaHeader.body.treatment).toEqual({
      projectId: alt.projectId,
      treatmentId: altTr.treatmentId,
      treatmentType: altTr.treatmentType,
      name: altTr.name,
      status: 'DRAFT',
      versions: [],
    });
    const viaParam = await app().alt.inject({
      method: 'POST',
      url: `/v1/GetTreatment?api_key=${encodeURIComponent(alt.delivery)}`,
      payload: { projectId: alt.projectId, treatmentId: altTr.treatmentId },
    });
    expect(viaParam.statusCode).toBe(200);
    expect((await send('GetTreatment', alt.delivery, { projectId: alt.projectId, treatmentId: altTr.treatmentId })).status).toBe(401);
    expect((await send('GetTreatment', p.delivery, { projectId: p.projectId, treatmentId: tr.treatmentId }, app().alt)).status).toBe(401);
    expect((await send('InsertTreatment', alt.management, insertBody(alt), app().alt)).status).toBe(404);
  });
});

describe('GetTreatment with a DELIVERY key (a public key shipped in apps)', () => {
  let p: Catalog;
  let tr: any;
  const SECRET = 'unreleased-secret';
  const QA = 'qa-user-4711';
  const rules = (p: Catalog) => ({ rules: [{ dataFieldId: p.dataFields.age, condition: 'GREATER_THAN', rhsValue: '17' }] });

  beforeAll(async () => {
    app().clock.set(T0);
    p = await setupCatalog();
    // v1 LIVE, then v2 published to start in an hour (v1 ends: ARCHIVED; v2 SCHEDULED), then a draft v3
    const group = 'promos';
    const created = await insert(p, {
      externalTreatmentId: 'ext-1',
      shouldPublish: true,
      eligibilityRules: rules(p),
      qaUserIds: [QA],
      holdoutPercentage: 10,
      isFallback: false,
      frequencyCap: { maxCount: 3, windowName: 'LAST_7D', countOf: 'VIEWED' },
      mutualExclusionGroup: group,
      targetAction: { eventId: p.purchaseEventId },
    });
    await update(p, {
      treatmentId: created.treatmentId,
      content: content('v2'),
      startTimestamp: iso(T0 + HOUR),
      shouldPublish: true,
      lastModifiedBy: 'operator-bob',
    });
    tr = await update(p, { treatmentId: created.treatmentId, content: content(SECRET), lastModifiedBy: 'operator-bob' });
    expect(statuses(tr)).toEqual([
      [3, 'DRAFT'],
      [2, 'SCHEDULED'],
      [1, 'ARCHIVED'],
    ]);
  });

  const read = async (key: string, at = T0) => {
    app().clock.set(at);
    const r = await send('GetTreatment', key, { projectId: p.projectId, treatmentId: tr.treatmentId });
    expect(r.status).toBe(200);
    return r.body.treatment;
  };

  it('reads ids, name, type, status and the published versions without rules; nothing else', async () => {
    const pub = await read(p.delivery);
    expect(Object.keys(pub).sort()).toEqual(['externalTreatmentId', 'name', 'projectId', 'status', 'treatmentId', 'treatmentType', 'versions']);
    expect(pub).toMatchObject({
      projectId: p.projectId,
      treatmentId: tr.treatmentId,
      externalTreatmentId: 'ext-1',
      name: 'Welcome',
      status: 'SCHEDULED',
      treatmentType: tr.treatmentType,
    });
    expect(pub.versions).toHaveLength(1);
    expect(pub.versions[0]).toMatchObject({ versionNumber: 2, status: 'SCHEDULED', content: content('v2'), targetAction: { eventId: p.purchaseEventId } });
    expect(pub.versions[0]).not.toHaveProperty('eligibilityRules');
    const text = JSON.stringify(pub);
    for (const hidden of [
      SECRET,
      QA,
      'operator-bob',
      'alice',
      'qaUserIds',
      'holdoutPercentage',
      'frequencyCap',
      'isFallback',
      'mutualExclusionGroup',
      'eligibilityRules',
      'lastModified',
      'description',
      'first screen',
    ]) {
      expect(text, hidden).not.toContain(hidden);
    }
    // once the scheduled version starts it is the LIVE one; the ended and the draft versions stay hidden
    const later = await read(p.delivery, T0 + 2 * HOUR);
    expect(later.status).toBe('LIVE');
    expect(later.versions.map((v: any) => [v.versionNumber, v.status])).toEqual([[2, 'LIVE']]);
  });

  it('a management key, alone or with DELIVERY, reads the whole record', async () => {
    const both = (await admin(app(), 'CreateApiKey', { projectId: p.projectId, permissions: ['DELIVERY', 'TREATMENT_MANAGEMENT'] })).body.key as string;
    for (const key of [p.management, both]) {
      const full = await read(key);
      expect(full).toEqual(tr);
      expect(full).toMatchObject({ qaUserIds: [QA], holdoutPercentage: 10, lastModifiedBy: 'operator-bob', description: 'first screen' });
      expect(full.versions[0].content).toEqual(content(SECRET));
      expect(full.versions[2].eligibilityRules.rules).toHaveLength(1);
    }
  });

  it('the answer schema serialises a public answer as the public form only, whatever the handler puts in it', async () => {
    const pub = await read(p.delivery);
    const leaky = {
      ...pub,
      qaUserIds: [QA],
      lastModifiedBy: 'operator-bob',
      description: 'first screen',
      versions: pub.versions.map((v: any) => ({ ...v, eligibilityRules: rules(p) })),
    };
    const probe = Fastify();
    probe.get('/', { schema: { response: { 200: GetTreatmentResponse } } }, async () => ({ treatment: leaky }));
    const res = await probe.inject({ method: 'GET', url: '/' });
    await probe.close();
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ treatment: pub });
  });

  it('is described in the API document: both forms of the answer', async () => {
    const doc = (await app().app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const schema = doc.paths['/v1/GetTreatment'].post.responses['200'].content['application/json'].schema;
    const forms = schema.properties.treatment.anyOf;
    expect(forms.map((f: any) => f.title)).toEqual(['Treatment', 'PublicTreatment']);
    expect(forms[0].required).toEqual(expect.arrayContaining(['qaUserIds', 'lastModifiedBy', 'versions']));
    expect(Object.keys(forms[1].properties)).not.toContain('qaUserIds');
    expect(Object.keys(forms[1].properties.versions.items.properties)).not.toContain('eligibilityRules');
  });
});
