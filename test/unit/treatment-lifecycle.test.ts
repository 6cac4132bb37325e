import { describe, expect, it } from 'vitest';
import { FailedPreconditionError } from '../../shared/platform/errors.js';
import { servedVersion, treatmentStatus } from '../../shared/treatments/treatment-status.js';
import { applyUpdate, createTreatment, deleteTreatment, DomainRuleError, pauseTreatment } from '../../shared/treatments/treatment-versions.js';
import type { TreatmentRecord } from '../../shared/treatments/index.js';
import { T0, HOUR, at, content, input, liveTreatment, update, deepFreeze, version } from '../helpers/treatment-records.js';

/** Publishing without a version change, treatment-level fields, pausing and deleting. */
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
