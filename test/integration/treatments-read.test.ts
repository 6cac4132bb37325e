import { beforeAll, describe, expect, it } from 'vitest';
import { createProjectWithKeys } from '../helpers/context.js';
import { T0, MINUTE, content, insertBody, statuses, expectInvalid, useTreatmentApp, type Catalog } from '../helpers/treatment-catalog.js';

/** GetAllTreatments filters and GetTreatment, its 404s and permissions. */
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
    c = await insert(p, { treatmentTypeName: 'email', tags: [{ name: 'promo' }], content: { contentByLanguage: [{ languageCode: { languageCode: 'en' }, contentFields: [{ fieldName: 'subject', stringValue: 'S' }] }] }, shouldPublish: true });
    // d: card draft only
    d = await insert(p);
    app().clock.set(T0);
  });

  const ids = (ts: any[]) => ts.map((x) => x.treatmentId);

  it('lists every treatment in ascending id order with every version, newest first', async () => {
    const all = await getAll(p);
    expect(ids(all)).toEqual([a.treatmentId, b.treatmentId, c.treatmentId, d.treatmentId]);
    app().clock.set(T0 + 3 * MINUTE);
    expect(statuses((await getAll(p))[0])).toEqual([[3, 'DRAFT'], [2, 'DRAFT'], [1, 'LIVE']]);
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
    expect((await send('UpdateTreatment', p.management, { projectId: p.projectId, treatmentId: '987654321987', lastModifiedBy: 'bob', shouldDelete: true })).status).toBe(404);
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
    expect(viaHeader.body.treatment).toEqual(altTr);
    const viaParam = await app().alt.inject({ method: 'POST', url: `/v1/GetTreatment?api_key=${encodeURIComponent(alt.delivery)}`, payload: { projectId: alt.projectId, treatmentId: altTr.treatmentId } });
    expect(viaParam.statusCode).toBe(200);
    expect((await send('GetTreatment', alt.delivery, { projectId: alt.projectId, treatmentId: altTr.treatmentId })).status).toBe(401);
    expect((await send('GetTreatment', p.delivery, { projectId: p.projectId, treatmentId: tr.treatmentId }, app().alt)).status).toBe(401);
    expect((await send('InsertTreatment', alt.management, insertBody(alt), app().alt)).status).toBe(404);
  });
});
