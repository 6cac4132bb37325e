import { describe, expect, it } from 'vitest';
import { listChanges } from '../../shared/projects/change-log.store.js';
import { T0, MINUTE, HOUR, iso, content, insertBody, statuses, expectInvalid, useTreatmentApp } from '../helpers/treatment-catalog.js';

/** UpdateTreatment (versions, publishing, pausing, deleting), external ids and mutual exclusion groups. */
const { app, send, setupCatalog, insert, update, get, getAll } = useTreatmentApp();

describe('UpdateTreatment', () => {
  it('changes name and description in place, and a content change adds a DRAFT version while the LIVE one keeps serving', async () => {
    const p = await setupCatalog();
    const tr = await insert(p, { shouldPublish: true });
    app().clock.set(T0 + MINUTE);
    const renamed = await update(p, { treatmentId: tr.treatmentId, name: 'Renamed', description: 'new' });
    expect(renamed).toMatchObject({
      name: 'Renamed',
      description: 'new',
      lastModifiedBy: 'bob',
      lastModifiedTimestamp: iso(T0 + MINUTE),
      modificationSource: 'API',
    });
    expect(renamed.versions).toHaveLength(1);

    const edited = await update(p, { treatmentId: tr.treatmentId, content: content('Hello') });
    expect(edited.status).toBe('LIVE');
    expect(statuses(edited)).toEqual([
      [2, 'DRAFT'],
      [1, 'LIVE'],
    ]);
    expect(edited.versions[0].content.contentByLanguage[0].contentFields[0].stringValue).toBe('Hello');
    // copied from the newest version: fields not in the request are kept
    expect(edited.versions[0].content.languageAgnosticContentFields).toEqual(content().languageAgnosticContentFields);
    expect(edited.versions[1].content.contentByLanguage[0].contentFields[0].stringValue).toBe('Hi');

    // a retried identical update changes nothing
    const again = await update(p, { treatmentId: tr.treatmentId, content: content('Hello') });
    expect(again.versions).toHaveLength(2);
    expect(again.lastModifiedTimestamp).toBe(iso(T0 + MINUTE));
  });

  it('publishing supersedes the served version, which becomes ARCHIVED with its end moved to the publish time', async () => {
    const p = await setupCatalog();
    const tr = await insert(p, { shouldPublish: true });
    app().clock.set(T0 + MINUTE);
    await update(p, { treatmentId: tr.treatmentId, content: content('Draft') });
    app().clock.set(T0 + 2 * MINUTE);
    // shouldPublish alone publishes the newest draft
    const published = await update(p, { treatmentId: tr.treatmentId, shouldPublish: true });
    expect(statuses(published)).toEqual([
      [2, 'LIVE'],
      [1, 'ARCHIVED'],
    ]);
    expect(published.versions[1].endTimestamp).toBe(iso(T0 + 2 * MINUTE));
    expect(published.versions[0].publishTime).toBe(iso(T0 + 2 * MINUTE));

    app().clock.set(T0 + 3 * MINUTE);
    const direct = await update(p, { treatmentId: tr.treatmentId, tags: [{ name: 'x' }], shouldPublish: true });
    expect(statuses(direct)).toEqual([
      [3, 'LIVE'],
      [2, 'ARCHIVED'],
      [1, 'ARCHIVED'],
    ]);
  });

  it('tags [] clears, eligibilityRules unset keeps and set replaces, each as a new version', async () => {
    const p = await setupCatalog();
    const rule = { dataFieldId: p.dataFields.age, condition: 'LESS_THAN', rhsValue: '30' };
    const tr = await insert(p, { tags: [{ name: 'a' }, { name: 'b' }], eligibilityRules: { rules: [rule] } });
    const cleared = await update(p, { treatmentId: tr.treatmentId, tags: [] });
    expect(cleared.versions[0]).toMatchObject({ versionNumber: 2, tags: [] });
    expect(cleared.versions[0].eligibilityRules.rules).toHaveLength(1);
    const replaced = await update(p, { treatmentId: tr.treatmentId, eligibilityRules: { rules: [{ ...rule, rhsValue: '40' }] } });
    expect(replaced.versions[0].eligibilityRules.rules.map((r: any) => r.rhsValue)).toEqual(['40']);
    const emptied = await update(p, { treatmentId: tr.treatmentId, eligibilityRules: { rules: [] } });
    expect(emptied.versions[0]).toMatchObject({ versionNumber: 4, eligibilityRules: { rules: [] } });
  });

  it('pauses a LIVE treatment; pausing a PAUSED or DRAFT one is FAILED_PRECONDITION; shouldPublish resumes', async () => {
    const p = await setupCatalog();
    const tr = await insert(p, { shouldPublish: true });
    const paused = await update(p, { treatmentId: tr.treatmentId, shouldPause: true });
    expect(paused.status).toBe('PAUSED');
    const draft = await insert(p);
    for (const id of [tr.treatmentId, draft.treatmentId]) {
      const res = await send('UpdateTreatment', p.management, { projectId: p.projectId, treatmentId: id, lastModifiedBy: 'bob', shouldPause: true });
      expect(res.status).toBe(400);
      expect(res.body.error.status).toBe('FAILED_PRECONDITION');
    }
    expect((await get(p, draft.treatmentId)).status).toBe('DRAFT');
    const resumed = await update(p, { treatmentId: tr.treatmentId, shouldPublish: true });
    expect(resumed.status).toBe('LIVE');
    expect(resumed.versions).toHaveLength(1);
  });

  it('delete ends every version now: ARCHIVED, still readable by GetTreatment and GetAllTreatments', async () => {
    const p = await setupCatalog();
    const tr = await insert(p, { shouldPublish: true });
    await update(p, { treatmentId: tr.treatmentId, content: content('Draft') });
    app().clock.set(T0 + MINUTE);
    const deleted = await update(p, { treatmentId: tr.treatmentId, shouldDelete: true });
    expect(deleted.status).toBe('ARCHIVED');
    expect(statuses(deleted)).toEqual([
      [2, 'ARCHIVED'],
      [1, 'ARCHIVED'],
    ]);
    for (const v of deleted.versions) expect(v.endTimestamp).toBe(iso(T0 + MINUTE));
    expect((await get(p, tr.treatmentId)).status).toBe('ARCHIVED');
    expect((await getAll(p)).map((x) => x.treatmentId)).toEqual([tr.treatmentId]);
  });

  it('rejects an end before the start also against the copied version', async () => {
    const p = await setupCatalog();
    const tr = await insert(p, { startTimestamp: iso(T0 + HOUR) });
    expectInvalid(
      await send('UpdateTreatment', p.management, { projectId: p.projectId, treatmentId: tr.treatmentId, lastModifiedBy: 'bob', endTimestamp: iso(T0) }),
      'endTimestamp',
    );
    const moved = await update(p, { treatmentId: tr.treatmentId, endTimestamp: iso(T0 + 2 * HOUR) });
    expect(moved.versions[0]).toMatchObject({ startTimestamp: iso(T0 + HOUR), endTimestamp: iso(T0 + 2 * HOUR) });
  });

  it('ten concurrent updates of one treatment all succeed and none is lost', async () => {
    const p = await setupCatalog();
    const tr = await insert(p, { shouldPublish: true });
    const n = 10;
    const results = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        send('UpdateTreatment', p.management, { projectId: p.projectId, treatmentId: tr.treatmentId, lastModifiedBy: `user${i}`, tags: [{ name: `tag${i}` }] }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(Array(n).fill(200));
    const final = await get(p, tr.treatmentId);
    expect(final.versions.map((v: any) => v.versionNumber)).toEqual(Array.from({ length: n + 1 }, (_, i) => n + 1 - i));
    const tags = final.versions
      .slice(0, n)
      .map((v: any) => v.tags[0].name)
      .sort();
    expect(tags).toEqual(Array.from({ length: n }, (_, i) => `tag${i}`).sort());
    const { changes } = await listChanges(app().ctx.redis, app().ctx.keys, p.projectId, 100);
    expect(changes.filter((c) => c.operation === 'UpdateTreatment' && c.resourceId === tr.treatmentId)).toHaveLength(n);

    const renames = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        send('UpdateTreatment', p.management, {
          projectId: p.projectId,
          treatmentId: tr.treatmentId,
          lastModifiedBy: 'x',
          description: `d${i}`,
          content: content(`c${i}`),
        }),
      ),
    );
    expect(renames.map((r) => r.status)).toEqual(Array(n).fill(200));
    expect((await get(p, tr.treatmentId)).versions).toHaveLength(2 * n + 1);
  });
});

describe('externalTreatmentId', () => {
  it('is unique per project (409), identifies the treatment on update, and can be assigned later', async () => {
    const p = await setupCatalog();
    const a = await insert(p, { externalTreatmentId: 'crm-1' });
    const dup = await send('InsertTreatment', p.management, insertBody(p, { externalTreatmentId: 'crm-1' }));
    expect(dup.status).toBe(409);
    expect(dup.body.error.status).toBe('ALREADY_EXISTS');

    const byExt = await update(p, { externalTreatmentId: 'crm-1', name: 'by ext' });
    expect(byExt).toMatchObject({ treatmentId: a.treatmentId, name: 'by ext' });
    const both = await update(p, { treatmentId: a.treatmentId, externalTreatmentId: 'crm-1', description: 'both' });
    expect(both.description).toBe('both');

    const missing = await send('UpdateTreatment', p.management, { projectId: p.projectId, externalTreatmentId: 'crm-404', lastModifiedBy: 'bob', name: 'x' });
    expect(missing.status).toBe(404);

    const b = await insert(p);
    expectInvalid(
      await send('UpdateTreatment', p.management, { projectId: p.projectId, treatmentId: b.treatmentId, externalTreatmentId: 'crm-1', lastModifiedBy: 'bob' }),
      'externalTreatmentId',
    );
    const assigned = await update(p, { treatmentId: b.treatmentId, externalTreatmentId: 'crm-2' });
    expect(assigned.externalTreatmentId).toBe('crm-2');
    expect((await update(p, { externalTreatmentId: 'crm-2', shouldDelete: true })).status).toBe('ARCHIVED');
    expectInvalid(
      await send('UpdateTreatment', p.management, { projectId: p.projectId, treatmentId: a.treatmentId, externalTreatmentId: 'crm-2', lastModifiedBy: 'bob' }),
      'externalTreatmentId',
    );

    // another project may use the same external id
    const q = await setupCatalog();
    expect((await insert(q, { externalTreatmentId: 'crm-1' })).externalTreatmentId).toBe('crm-1');
  });
});

describe('mutual exclusion groups', () => {
  it('are created on first use, reused by name, and cleared by an empty string', async () => {
    const p = await setupCatalog();
    const a = await insert(p, { mutualExclusionGroup: 'hero' });
    expect(a.mutualExclusionGroup).toEqual({ projectId: p.projectId, mutualExclusionGroupId: expect.stringMatching(/^[1-9][0-9]*$/), name: 'hero' });
    const b = await insert(p, { mutualExclusionGroup: 'hero' });
    expect(b.mutualExclusionGroup).toEqual(a.mutualExclusionGroup);
    const c = await update(p, { treatmentId: b.treatmentId, mutualExclusionGroup: 'footer' });
    expect(c.mutualExclusionGroup.name).toBe('footer');
    expect(c.mutualExclusionGroup.mutualExclusionGroupId).not.toBe(a.mutualExclusionGroup.mutualExclusionGroupId);
    expect(c.versions).toHaveLength(1);
    const cleared = await update(p, { treatmentId: a.treatmentId, mutualExclusionGroup: '' });
    expect(cleared.mutualExclusionGroup).toBeUndefined();
    const listed = await getAll(p);
    expect(listed.map((x) => x.mutualExclusionGroup?.name)).toEqual([undefined, 'footer']);
    expect((await insert(p, { mutualExclusionGroup: 'hero' })).mutualExclusionGroup).toEqual(a.mutualExclusionGroup);
  });
});
