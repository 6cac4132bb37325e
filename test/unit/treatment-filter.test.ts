import { describe, expect, it } from 'vitest';
import { filterTreatments, type TreatmentListFilter } from '../../shared/treatments/treatment-filter.js';
import type { TreatmentRecord, TreatmentVersionRecord } from '../../shared/treatments/index.js';
import type { TreatmentType } from '../../shared/catalog/index.js';

const T0 = Date.parse('2025-01-01T00:00:00.000Z');
const HOUR = 3_600_000;
const at = (ms: number): string => new Date(ms).toISOString();

function type(id: string, name: string, surfaces: string[]): TreatmentType {
  return {
    treatmentTypeId: id,
    projectId: 'p',
    treatmentTypeName: name,
    deliveryType: 'IN_APP',
    contentFieldTypes: [],
    surfaces,
    lastModifiedBy: 'me',
    lastModifiedTimestamp: at(T0),
    createTime: at(T0),
  };
}

const types = new Map([
  ['1', type('1', 'banner', ['home', 'inbox'])],
  ['2', type('2', 'email', ['mail'])],
]);

type VersionSpec = Partial<TreatmentVersionRecord> & { n: number; state?: 'live' | 'draft' | 'archived' | 'scheduled' };

function version({ n, state = 'draft', ...fields }: VersionSpec): TreatmentVersionRecord {
  const times = {
    live: { publishTime: at(T0 - 10 * HOUR), startTimestamp: at(T0 - 10 * HOUR) },
    draft: { startTimestamp: at(T0 - 10 * HOUR) },
    archived: { publishTime: at(T0 - 20 * HOUR), startTimestamp: at(T0 - 20 * HOUR), endTimestamp: at(T0 - 10 * HOUR) },
    scheduled: { publishTime: at(T0 - 10 * HOUR), startTimestamp: at(T0 + 10 * HOUR) },
  }[state];
  return {
    versionNumber: n,
    ...times,
    tags: [],
    content: { contentByLanguage: [], languageAgnosticContentFields: [] },
    eligibilityRules: [],
    removedSurfaces: [],
    createTime: at(T0 - 30 * HOUR),
    lastModifiedTimestamp: at(T0 - 30 * HOUR + n * HOUR),
    ...fields,
  };
}

function treatment(id: string, typeId: string, versions: TreatmentVersionRecord[]): TreatmentRecord {
  return {
    treatmentId: id,
    projectId: 'p',
    name: `t${id}`,
    description: '',
    treatmentTypeId: typeId,
    paused: false,
    lastModifiedBy: 'me',
    lastModifiedTimestamp: at(T0),
    modificationSource: 'API',
    createTime: at(T0),
    versions,
  };
}

const run = (ts: TreatmentRecord[], req: TreatmentListFilter = {}) =>
  filterTreatments(ts, types, req, T0).map((l) => ({ id: l.treatment.treatmentId, versions: l.versions.map((v) => v.versionNumber) }));

describe('filterTreatments: treatments', () => {
  it('lists treatments in ascending numeric id order, not string order', () => {
    const ts = ['10', '9', '100', '2'].map((id) => treatment(id, '1', [version({ n: 1 })]));
    expect(run(ts).map((r) => r.id)).toEqual(['2', '9', '10', '100']);
  });

  it('orders ids beyond the precision of Number correctly', () => {
    const ts = ['9007199254740993', '9007199254740992'].map((id) => treatment(id, '1', [version({ n: 1 })]));
    expect(run(ts).map((r) => r.id)).toEqual(['9007199254740992', '9007199254740993']);
  });

  it('filters by treatment type name', () => {
    const ts = [treatment('1', '1', [version({ n: 1 })]), treatment('2', '2', [version({ n: 1 })]), treatment('3', 'gone', [version({ n: 1 })])];
    expect(run(ts, { treatmentTypeName: 'email' }).map((r) => r.id)).toEqual(['2']);
    expect(run(ts, { treatmentTypeName: 'nope' })).toEqual([]);
    expect(run(ts).map((r) => r.id)).toEqual(['1', '2', '3']);
  });

  it('does not reorder or mutate the input list', () => {
    const ts = [treatment('2', '1', [version({ n: 1 })]), treatment('1', '1', [version({ n: 1 })])];
    run(ts);
    expect(ts.map((t) => t.treatmentId)).toEqual(['2', '1']);
  });
});

describe('filterTreatments: version filters', () => {
  const t = treatment('1', '1', [
    version({ n: 1, tags: ['a'] }),
    version({ n: 2, tags: ['b'], removedSurfaces: ['home'] }),
    version({ n: 3, tags: ['a', 'c'], removedSurfaces: ['home', 'inbox'] }),
  ]);

  it('surface filter keeps versions shown on any named surface of the type (OR)', () => {
    expect(run([t], { surfaceNames: ['home'] })[0].versions).toEqual([1]);
    expect(run([t], { surfaceNames: ['inbox'] })[0].versions).toEqual([2, 1]);
    expect(run([t], { surfaceNames: ['home', 'inbox'] })[0].versions).toEqual([2, 1]);
  });

  it('surface filter ignores surfaces that the type does not list', () => {
    expect(run([t], { surfaceNames: ['mail'] })).toEqual([]);
  });

  it('tag filter keeps versions having any of the tags (OR)', () => {
    expect(run([t], { tags: ['a'] })[0].versions).toEqual([3, 1]);
    expect(run([t], { tags: ['b', 'c'] })[0].versions).toEqual([3, 2]);
  });

  it('surface and tag filters must both hold (AND)', () => {
    expect(run([t], { surfaceNames: ['inbox'], tags: ['a'] })[0].versions).toEqual([1]);
    expect(run([t], { surfaceNames: ['inbox'], tags: ['c'] })).toEqual([]);
  });

  it('treats empty filter lists as no filter', () => {
    expect(run([t], { surfaceNames: [], tags: [] })[0].versions).toEqual([3, 2, 1]);
  });

  it('omits a treatment with no version left', () => {
    const other = treatment('2', '1', [version({ n: 1, tags: ['z'] })]);
    expect(run([t, other], { tags: ['z'] }).map((r) => r.id)).toEqual(['2']);
  });
});

describe('filterTreatments: maxNonLiveVersions', () => {
  // Modification order differs from version order: v2 was touched last, v1 before v3.
  const t = treatment('1', '1', [
    version({ n: 1, state: 'archived', lastModifiedTimestamp: at(T0 - 2 * HOUR) }),
    version({ n: 2, state: 'archived', lastModifiedTimestamp: at(T0 - HOUR) }),
    version({ n: 3, state: 'live', lastModifiedTimestamp: at(T0 - 5 * HOUR) }),
    version({ n: 4, state: 'draft', lastModifiedTimestamp: at(T0 - 3 * HOUR), tags: ['d'] }),
  ]);

  it('unset returns every version, newest first', () => {
    expect(run([t])[0].versions).toEqual([4, 3, 2, 1]);
  });

  it('0 returns only LIVE versions', () => {
    expect(run([t], { maxNonLiveVersions: 0 })[0].versions).toEqual([3]);
  });

  it('0 omits a treatment without a LIVE version', () => {
    const drafts = treatment('2', '1', [version({ n: 1 }), version({ n: 2, state: 'scheduled' })]);
    expect(run([t, drafts], { maxNonLiveVersions: 0 }).map((r) => r.id)).toEqual(['1']);
  });

  it('1 adds the most recently modified non-live version', () => {
    expect(run([t], { maxNonLiveVersions: 1 })[0].versions).toEqual([3, 2]);
  });

  it('N adds up to N non-live versions by modification time', () => {
    expect(run([t], { maxNonLiveVersions: 2 })[0].versions).toEqual([3, 2, 1]);
    expect(run([t], { maxNonLiveVersions: 10 })[0].versions).toEqual([4, 3, 2, 1]);
  });

  it('counts only versions that pass the version filters', () => {
    expect(run([t], { maxNonLiveVersions: 1, tags: ['d'] })[0].versions).toEqual([4]);
  });

  it('judges LIVE at the injected time: an ended version no longer counts', () => {
    const later = filterTreatments([t], types, { maxNonLiveVersions: 0 }, T0 + 1000 * HOUR);
    expect(later[0].versions.map((v) => v.versionNumber)).toEqual([3]);
    const ended = treatment('3', '1', [version({ n: 1, state: 'live', endTimestamp: at(T0 + HOUR) })]);
    expect(filterTreatments([ended], types, { maxNonLiveVersions: 0 }, T0 + HOUR)).toEqual([]);
  });
});
