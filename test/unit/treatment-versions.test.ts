import { describe, expect, it } from 'vitest';
import { FailedPreconditionError } from '../../shared/platform/errors.js';
import { servedVersion, treatmentStatus, versionStatus } from '../../shared/treatments/treatment-status.js';
import {
  applyUpdate,
  createTreatment,
  deleteTreatment,
  DomainRuleError,
  pauseTreatment,
  type NewTreatment,
  type TreatmentUpdate,
} from '../../shared/treatments/treatment-versions.js';
import type { Content, TreatmentRecord } from '../../shared/treatments/index.js';

const T0 = Date.parse('2025-01-01T00:00:00.000Z');
const HOUR = 3_600_000;
const at = (ms: number): string => new Date(ms).toISOString();

const content = (title: string): Content => ({
  contentByLanguage: [{ languageCode: { languageCode: 'en' }, contentFields: [{ fieldName: 'title', stringValue: title }] }],
  languageAgnosticContentFields: [],
});

function input(overrides: Partial<NewTreatment> = {}, start = T0 - HOUR): NewTreatment {
  return {
    treatmentId: '42',
    projectId: 'p1',
    name: 'Welcome',
    description: 'first screen',
    treatmentTypeId: '7',
    lastModifiedBy: 'alice',
    version: {
      startTimestamp: at(start),
      tags: ['promo'],
      content: content('Hi'),
      eligibilityRules: [{ dataFieldId: '5', condition: 'EQUALS', rhsValue: 'x', dataMissingBehaviour: 'EVALUATE_TO_INELIGIBLE' }],
      removedSurfaces: [],
    },
    ...overrides,
  };
}

/** A LIVE treatment created an hour before T0. */
const liveTreatment = (): TreatmentRecord => createTreatment(input({ shouldPublish: true }), T0 - HOUR);
const update = (u: Partial<TreatmentUpdate>): TreatmentUpdate => ({ lastModifiedBy: 'bob', ...u });

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') {
    Object.values(value).forEach(deepFreeze);
    Object.freeze(value);
  }
  return value;
}

function version(t: TreatmentRecord, n: number) {
  const v = t.versions.find((x) => x.versionNumber === n);
  if (v === undefined) throw new Error(`no version ${n}`);
  return v;
}

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

describe('applyUpdate: shouldPublish without version-level change', () => {
  it('publishes the newest draft, archiving the served version', () => {
    const t = applyUpdate(liveTreatment(), update({ content: content('Hello') }), T0 - HOUR / 2).treatment;
    const { treatment: next, changed } = applyUpdate(t, update({ shouldPublish: true }), T0);
    expect(changed).toBe(true);
    expect(next.versions).toHaveLength(2);
    expect(version(next, 2).publishTime).toBe(at(T0));
    expect(version(next, 1).endTimestamp).toBe(at(T0));
    expect(servedVersion(next, T0)?.versionNumber).toBe(2);
  });

  it('publishes a never-published treatment', () => {
    const t = createTreatment(input(), T0 - HOUR);
    const { treatment: next } = applyUpdate(t, update({ shouldPublish: true }), T0);
    expect(treatmentStatus(next, T0)).toBe('LIVE');
  });

  it('resumes a PAUSED treatment', () => {
    const paused = pauseTreatment(liveTreatment(), 'bob', T0);
    const { treatment: next, changed } = applyUpdate(paused, update({ shouldPublish: true }), T0 + HOUR);
    expect(changed).toBe(true);
    expect(next.paused).toBe(false);
    expect(next.versions).toEqual(paused.versions);
    expect(treatmentStatus(next, T0 + HOUR)).toBe('LIVE');
    expect(servedVersion(next, T0 + HOUR)?.versionNumber).toBe(1);
  });

  it('publishes the newest draft of a PAUSED treatment and resumes it', () => {
    let t = pauseTreatment(liveTreatment(), 'bob', T0);
    t = applyUpdate(t, update({ tags: ['x'] }), T0).treatment;
    const { treatment: next } = applyUpdate(t, update({ shouldPublish: true }), T0 + HOUR);
    expect(next.paused).toBe(false);
    expect(servedVersion(next, T0 + HOUR)?.versionNumber).toBe(2);
  });

  it('is a no-op on a LIVE treatment with nothing to publish', () => {
    const t = liveTreatment();
    const result = applyUpdate(t, update({ shouldPublish: true }), T0);
    expect(result.changed).toBe(false);
    expect(result.treatment).toBe(t);
  });

  it('never publishes a stale draft below a newer published version', () => {
    let t = applyUpdate(liveTreatment(), update({ tags: ['draft'] }), T0).treatment;
    t = applyUpdate(t, update({ content: content('v3'), shouldPublish: true }), T0 + HOUR).treatment;
    const result = applyUpdate(t, update({ shouldPublish: true }), T0 + 2 * HOUR);
    expect(result.changed).toBe(false);
    expect(version(result.treatment, 2).publishTime).toBeUndefined();
  });
});

describe('applyUpdate: treatment-level fields', () => {
  it('change in place without a new version and stamp the modification', () => {
    const t = deepFreeze(liveTreatment());
    const { treatment: next, changed } = applyUpdate(
      t,
      update({ name: 'New', description: 'Desc', externalTreatmentId: 'ext', mutualExclusionGroupId: '3' }),
      T0,
    );
    expect(changed).toBe(true);
    expect(next.versions).toEqual(t.versions);
    expect(next).toMatchObject({
      name: 'New',
      description: 'Desc',
      externalTreatmentId: 'ext',
      mutualExclusionGroupId: '3',
      lastModifiedBy: 'bob',
      lastModifiedTimestamp: at(T0),
      modificationSource: 'API',
      createTime: t.createTime,
    });
    expect(t.name).toBe('Welcome');
  });

  it('null clears the mutual exclusion group', () => {
    const t = createTreatment(input({ mutualExclusionGroupId: '3' }), T0 - HOUR);
    const { treatment: next, changed } = applyUpdate(t, update({ mutualExclusionGroupId: null }), T0);
    expect(changed).toBe(true);
    expect('mutualExclusionGroupId' in next).toBe(false);
  });

  it('unchanged values leave the record and its modification stamp untouched', () => {
    const t = liveTreatment();
    const result = applyUpdate(t, update({ name: 'Welcome', mutualExclusionGroupId: null }), T0);
    expect(result.changed).toBe(false);
    expect(result.treatment).toBe(t);
    expect(result.treatment.lastModifiedBy).toBe('alice');
  });
});

describe('pauseTreatment', () => {
  it('pauses a LIVE treatment, which is then not served', () => {
    const t = deepFreeze(liveTreatment());
    const paused = pauseTreatment(t, 'bob', T0);
    expect(paused.paused).toBe(true);
    expect(paused).toMatchObject({ lastModifiedBy: 'bob', lastModifiedTimestamp: at(T0), modificationSource: 'API' });
    expect(treatmentStatus(paused, T0)).toBe('PAUSED');
    expect(servedVersion(paused, T0)).toBeUndefined();
    expect(t.paused).toBe(false);
  });

  const notLive: [string, () => TreatmentRecord][] = [
    ['DRAFT', () => createTreatment(input(), T0 - HOUR)],
    ['SCHEDULED', () => createTreatment(input({ shouldPublish: true }, T0 + HOUR), T0 - HOUR)],
    ['ARCHIVED', () => deleteTreatment(liveTreatment(), 'bob', T0 - 1)],
    ['PAUSED', () => pauseTreatment(liveTreatment(), 'bob', T0 - 1)],
  ];
  it.each(notLive)('refuses a %s treatment with FAILED_PRECONDITION', (status, make) => {
    const t = make();
    expect(treatmentStatus(t, T0)).toBe(status);
    let caught: unknown;
    try {
      pauseTreatment(t, 'bob', T0);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(DomainRuleError);
    expect(caught).toBeInstanceOf(FailedPreconditionError);
    expect(caught).toMatchObject({ code: 'FAILED_PRECONDITION', httpStatus: 400 });
    expect((caught as Error).message).toContain(status);
  });
});

describe('deleteTreatment', () => {
  const fromEveryStatus: [string, () => TreatmentRecord][] = [
    ['LIVE', liveTreatment],
    ['DRAFT', () => createTreatment(input(), T0 - HOUR)],
    ['SCHEDULED', () => createTreatment(input({ shouldPublish: true }, T0 + HOUR), T0 - HOUR)],
    ['PAUSED', () => pauseTreatment(liveTreatment(), 'bob', T0 - 1)],
    ['ARCHIVED', () => deleteTreatment(liveTreatment(), 'bob', T0 - 1)],
    ['LIVE with a draft', () => applyUpdate(liveTreatment(), update({ tags: ['d'] }), T0 - 1).treatment],
  ];
  it.each(fromEveryStatus)('archives a %s treatment for good', (_label, make) => {
    const t = deepFreeze(make());
    const deleted = deleteTreatment(t, 'carol', T0);
    expect(deleted.paused).toBe(false);
    expect(deleted).toMatchObject({ lastModifiedBy: 'carol', lastModifiedTimestamp: at(T0), modificationSource: 'API' });
    for (const later of [T0, T0 + HOUR, T0 + 1000 * HOUR]) {
      expect(treatmentStatus(deleted, later)).toBe('ARCHIVED');
      expect(servedVersion(deleted, later)).toBeUndefined();
    }
    for (const v of deleted.versions) expect(Date.parse(v.endTimestamp!)).toBeLessThanOrEqual(T0);
    expect(deleted.versions.map((v) => v.versionNumber)).toEqual(t.versions.map((v) => v.versionNumber));
  });

  it('moves open ends to now, keeps past ends, and marks drafts published now', () => {
    const i = input({ shouldPublish: true }, T0 - 3 * HOUR);
    i.version.endTimestamp = at(T0 - 2 * HOUR);
    let t = createTreatment(i, T0 - 3 * HOUR);
    t = applyUpdate(t, update({ endTimestamp: null, shouldPublish: true }), T0 - HOUR).treatment;
    t = applyUpdate(t, update({ tags: ['draft'] }), T0 - HOUR).treatment;
    const deleted = deleteTreatment(t, 'carol', T0);
    expect(version(deleted, 1)).toEqual(version(t, 1));
    expect(version(deleted, 2)).toMatchObject({ endTimestamp: at(T0), publishTime: at(T0 - HOUR), lastModifiedTimestamp: at(T0) });
    expect(version(deleted, 3)).toMatchObject({ endTimestamp: at(T0), publishTime: at(T0) });
  });

  it('cannot be undone by shouldPublish alone', () => {
    const deleted = deleteTreatment(applyUpdate(liveTreatment(), update({ tags: ['d'] }), T0).treatment, 'carol', T0);
    const result = applyUpdate(deleted, update({ shouldPublish: true }), T0 + HOUR);
    expect(result.changed).toBe(false);
    expect(treatmentStatus(result.treatment, T0 + HOUR)).toBe('ARCHIVED');
  });
});
