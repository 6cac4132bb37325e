import { describe, expect, it } from 'vitest';
import { servedVersion, treatmentStatus, versionStatus } from '../../shared/treatments/treatment-status.js';
import { applyUpdate, createTreatment, pauseTreatment } from '../../shared/treatments/treatment-versions.js';
import type { Content } from '../../shared/treatments/index.js';
import { T0, HOUR, at, content, input, liveTreatment, update, deepFreeze, version } from '../helpers/treatment-records.js';

/** createTreatment, and updates that change a version (a new draft, or an edit of the draft). */
describe('createTreatment', () => {
  it('creates version 1 as a DRAFT without shouldPublish', () => {
    const t = createTreatment(input(), T0);
    expect(t.versions).toHaveLength(1);
    expect(t.versions[0].versionNumber).toBe(1);
    expect(t.versions[0].publishTime).toBeUndefined();
    expect(treatmentStatus(t, T0)).toBe('DRAFT');
    expect(servedVersion(t, T0)).toBeUndefined();
  });

  it('publishes version 1 at now with shouldPublish: LIVE when the start has been reached', () => {
    const t = createTreatment(input({ shouldPublish: true }), T0);
    expect(t.versions[0].publishTime).toBe(at(T0));
    expect(treatmentStatus(t, T0)).toBe('LIVE');
    expect(servedVersion(t, T0)?.versionNumber).toBe(1);
  });

  it('is SCHEDULED with a future start, LIVE once it is reached, ARCHIVED after the end', () => {
    const i = input({ shouldPublish: true }, T0 + HOUR);
    i.version.endTimestamp = at(T0 + 2 * HOUR);
    const t = createTreatment(i, T0);
    expect(treatmentStatus(t, T0)).toBe('SCHEDULED');
    expect(treatmentStatus(t, T0 + HOUR)).toBe('LIVE');
    expect(treatmentStatus(t, T0 + 2 * HOUR)).toBe('ARCHIVED');
  });

  it('stamps the record and copies the input instead of aliasing it', () => {
    const i = input({ externalTreatmentId: 'ext-1', mutualExclusionGroupId: '9' });
    const t = createTreatment(i, T0);
    i.version.tags.push('later');
    i.version.content.languageAgnosticContentFields.push({ fieldName: 'link', stringValue: 'x' });
    expect(t).toMatchObject({
      treatmentId: '42',
      projectId: 'p1',
      externalTreatmentId: 'ext-1',
      mutualExclusionGroupId: '9',
      paused: false,
      lastModifiedBy: 'alice',
      lastModifiedTimestamp: at(T0),
      createTime: at(T0),
      modificationSource: 'API',
    });
    expect(t.versions[0].tags).toEqual(['promo']);
    expect(t.versions[0].content).toEqual(content('Hi'));
    expect(t.versions[0]).toMatchObject({ createTime: at(T0), lastModifiedTimestamp: at(T0) });
  });

  it('leaves optional fields absent and stores timestamps in UTC ISO form', () => {
    const i = input();
    i.version.startTimestamp = '2025-01-01T01:00:00+01:00';
    const t = createTreatment(i, T0);
    expect('externalTreatmentId' in t).toBe(false);
    expect('mutualExclusionGroupId' in t).toBe(false);
    expect('endTimestamp' in t.versions[0]).toBe(false);
    expect('targetActionEventId' in t.versions[0]).toBe(false);
    expect(t.versions[0].startTimestamp).toBe('2025-01-01T00:00:00.000Z');
  });
});

describe('applyUpdate: version-level changes', () => {
  it('creates a DRAFT version 2 copied from version 1 and keeps serving version 1', () => {
    const t = deepFreeze(liveTreatment());
    const { treatment: next, changed } = applyUpdate(t, update({ content: content('Hello') }), T0);
    expect(changed).toBe(true);
    expect(next.versions).toHaveLength(2);
    const v2 = version(next, 2);
    expect(v2.publishTime).toBeUndefined();
    expect(v2.content).toEqual(content('Hello'));
    expect(v2.tags).toEqual(['promo']);
    expect(v2.eligibilityRules).toEqual(t.versions[0].eligibilityRules);
    expect(v2).toMatchObject({ createTime: at(T0), lastModifiedTimestamp: at(T0) });
    expect(version(next, 1)).toEqual(t.versions[0]);
    expect(treatmentStatus(next, T0)).toBe('LIVE');
    expect(servedVersion(next, T0)?.versionNumber).toBe(1);
  });

  it('leaves a never-published treatment DRAFT', () => {
    const t = createTreatment(input(), T0 - HOUR);
    const { treatment: next } = applyUpdate(t, update({ tags: ['x'] }), T0);
    expect(next.versions.map((v) => v.versionNumber)).toEqual([1, 2]);
    expect(treatmentStatus(next, T0)).toBe('DRAFT');
  });

  it('with shouldPublish supersedes the served version: its end moves to now and it is ARCHIVED', () => {
    const t = deepFreeze(liveTreatment());
    const { treatment: next } = applyUpdate(t, update({ content: content('Hello'), shouldPublish: true }), T0);
    expect(version(next, 2).publishTime).toBe(at(T0));
    expect(version(next, 1).endTimestamp).toBe(at(T0));
    expect(version(next, 1).lastModifiedTimestamp).toBe(at(T0));
    expect(versionStatus(version(next, 1), next, T0)).toBe('ARCHIVED');
    expect(versionStatus(version(next, 2), next, T0)).toBe('LIVE');
    expect(servedVersion(next, T0)?.versionNumber).toBe(2);
    expect(t.versions[0].endTimestamp).toBeUndefined();
  });

  it('publishing a version that starts later leaves nothing served until its start', () => {
    const t = liveTreatment();
    const { treatment: next } = applyUpdate(t, update({ startTimestamp: at(T0 + HOUR), shouldPublish: true }), T0);
    expect(treatmentStatus(next, T0)).toBe('SCHEDULED');
    expect(servedVersion(next, T0)).toBeUndefined();
    expect(treatmentStatus(next, T0 + HOUR)).toBe('LIVE');
    expect(servedVersion(next, T0 + HOUR)?.versionNumber).toBe(2);
  });

  it('publishing also archives a SCHEDULED version but leaves ARCHIVED ones and drafts alone', () => {
    let t = createTreatment(input({ shouldPublish: true }, T0 + 5 * HOUR), T0 - 2 * HOUR);
    t = applyUpdate(t, update({ tags: ['draft'] }), T0 - HOUR).treatment;
    const before = version(t, 2);
    const { treatment: next } = applyUpdate(t, update({ tags: ['now'], shouldPublish: true }), T0);
    expect(version(next, 1).endTimestamp).toBe(at(T0));
    expect(versionStatus(version(next, 1), next, T0 + 6 * HOUR)).toBe('ARCHIVED');
    expect(version(next, 2)).toEqual(before);
    expect(version(next, 3).startTimestamp).toBe(at(T0 + 5 * HOUR));
    expect(servedVersion(next, T0 + 5 * HOUR)?.versionNumber).toBe(3);
  });

  it('keeps an ended version’s end when another version is published', () => {
    const i = input({ shouldPublish: true }, T0 - 3 * HOUR);
    i.version.endTimestamp = at(T0 - HOUR);
    const t = createTreatment(i, T0 - 3 * HOUR);
    const { treatment: next } = applyUpdate(t, update({ endTimestamp: null, shouldPublish: true }), T0);
    expect(version(next, 1).endTimestamp).toBe(at(T0 - HOUR));
    expect('endTimestamp' in version(next, 2)).toBe(false);
    expect(treatmentStatus(next, T0 + 1000 * HOUR)).toBe('LIVE');
  });

  it('copies the new version from the newest version, even when that one is a draft', () => {
    let t = liveTreatment();
    t = applyUpdate(t, update({ tags: ['draft-tag'] }), T0).treatment;
    const { treatment: next } = applyUpdate(t, update({ content: content('Later') }), T0 + HOUR);
    expect(version(next, 3).tags).toEqual(['draft-tag']);
    expect(version(next, 3).content).toEqual(content('Later'));
  });

  it('publishing clears paused', () => {
    const paused = pauseTreatment(liveTreatment(), 'bob', T0);
    const { treatment: next } = applyUpdate(paused, update({ content: content('Back'), shouldPublish: true }), T0 + HOUR);
    expect(next.paused).toBe(false);
    expect(treatmentStatus(next, T0 + HOUR)).toBe('LIVE');
    expect(servedVersion(next, T0 + HOUR)?.versionNumber).toBe(2);
  });

  it('a draft update keeps a paused treatment PAUSED', () => {
    const paused = pauseTreatment(liveTreatment(), 'bob', T0);
    const { treatment: next } = applyUpdate(paused, update({ content: content('Back') }), T0 + HOUR);
    expect(treatmentStatus(next, T0 + HOUR)).toBe('PAUSED');
  });

  it('an empty tags list clears the tags in a new version', () => {
    const { treatment: next, changed } = applyUpdate(liveTreatment(), update({ tags: [] }), T0);
    expect(changed).toBe(true);
    expect(version(next, 2).tags).toEqual([]);
  });

  it('unset eligibilityRules keep the rules; an empty list replaces them', () => {
    const t = liveTreatment();
    const kept = applyUpdate(t, update({ tags: ['x'] }), T0).treatment;
    expect(version(kept, 2).eligibilityRules).toEqual(t.versions[0].eligibilityRules);
    const cleared = applyUpdate(t, update({ eligibilityRules: [] }), T0).treatment;
    expect(version(cleared, 2).eligibilityRules).toEqual([]);
  });

  it('sets and clears the end timestamp and target action', () => {
    const t = liveTreatment();
    const set = applyUpdate(t, update({ endTimestamp: at(T0 + HOUR), targetActionEventId: '77' }), T0).treatment;
    expect(version(set, 2)).toMatchObject({ endTimestamp: at(T0 + HOUR), targetActionEventId: '77' });
    const cleared = applyUpdate(set, update({ endTimestamp: null, targetActionEventId: null }), T0).treatment;
    expect('endTimestamp' in version(cleared, 3)).toBe(false);
    expect('targetActionEventId' in version(cleared, 3)).toBe(false);
  });

  it('sets removedSurfaces on the new version', () => {
    const { treatment: next } = applyUpdate(liveTreatment(), update({ removedSurfaces: ['inbox'] }), T0);
    expect(version(next, 2).removedSurfaces).toEqual(['inbox']);
  });

  it('values equal to the newest version are no change, so a retried update adds no version', () => {
    const t = liveTreatment();
    const u = update({ content: content('Hello'), shouldPublish: true });
    const first = applyUpdate(t, u, T0).treatment;
    const retry = applyUpdate(first, u, T0 + 1000);
    expect(retry.changed).toBe(false);
    expect(retry.treatment).toBe(first);
    const same = applyUpdate(t, update({ tags: ['promo'], startTimestamp: '2024-12-31T23:00:00Z' }), T0);
    expect(same.changed).toBe(false);
  });

  it('compares content regardless of key order', () => {
    const t = liveTreatment();
    const reordered: Content = {
      languageAgnosticContentFields: [],
      contentByLanguage: [{ contentFields: [{ stringValue: 'Hi', fieldName: 'title' }], languageCode: { languageCode: 'en' } }],
    };
    expect(applyUpdate(t, update({ content: reordered }), T0).changed).toBe(false);
  });
});
