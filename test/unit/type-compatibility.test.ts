import { describe, expect, it } from 'vitest';
import { typeChangeConflicts } from '../../shared/treatments/type-compatibility.js';
import { surfaceDataFieldParams } from '../../shared/catalog/surface-provisioning.js';
import { normalizeDataFieldParams } from '../../shared/aggregation/data-field-params.js';
import type { TreatmentRecord, TreatmentVersionRecord } from '../../shared/treatments/index.js';
import type { TreatmentType } from '../../shared/catalog/index.js';

const NOW = Date.parse('2026-06-01T00:00:00Z');

const type: TreatmentType = {
  treatmentTypeId: '1',
  projectId: 'p',
  treatmentTypeName: 'banner',
  deliveryType: 'IN_APP',
  contentFieldTypes: [
    { fieldName: 'title', maximumLengthAllowed: 50, isPerLanguage: true, dataType: 'STRING' },
    { fieldName: 'link', maximumLengthAllowed: 100, isPerLanguage: false, dataType: 'STRING' },
  ],
  surfaces: ['home', 'inbox'],
  lastModifiedBy: 'a',
  lastModifiedTimestamp: '2026-01-01T00:00:00Z',
  createTime: '2026-01-01T00:00:00Z',
};

function version(n: number, title: string, extra: Partial<TreatmentVersionRecord> = {}): TreatmentVersionRecord {
  return {
    versionNumber: n,
    startTimestamp: '2026-01-01T00:00:00Z',
    tags: [],
    content: {
      contentByLanguage: [{ languageCode: { languageCode: 'en' }, contentFields: [{ fieldName: 'title', stringValue: title }] }],
      languageAgnosticContentFields: [{ fieldName: 'link', stringValue: 'https://x' }],
    },
    eligibilityRules: [],
    removedSurfaces: [],
    createTime: '2026-01-01T00:00:00Z',
    lastModifiedTimestamp: '2026-01-01T00:00:00Z',
    ...extra,
  };
}

function treatment(id: string, versions: TreatmentVersionRecord[], extra: Partial<TreatmentRecord> = {}): TreatmentRecord {
  return {
    treatmentId: id,
    projectId: 'p',
    name: `t${id}`,
    description: '',
    treatmentTypeId: '1',
    paused: false,
    lastModifiedBy: 'a',
    lastModifiedTimestamp: '',
    modificationSource: 'API',
    createTime: '',
    versions,
    ...extra,
  };
}

const published = { publishTime: '2026-01-01T00:00:00Z' };
const archived = { publishTime: '2026-01-01T00:00:00Z', endTimestamp: '2026-02-01T00:00:00Z' };
const withFields = (title: Partial<TreatmentType['contentFieldTypes'][number]>, keepLink = true): TreatmentType => ({
  ...type,
  contentFieldTypes: [{ ...type.contentFieldTypes[0], ...title }, ...(keepLink ? [type.contentFieldTypes[1]] : [])],
});

describe('typeChangeConflicts', () => {
  it('no treatment of the type, or an unchanged type: nothing to report', () => {
    expect(
      typeChangeConflicts(type, withFields({ maximumLengthAllowed: 1 }, false), [treatment('9', [version(1, 'long title')], { treatmentTypeId: '2' })], NOW),
    ).toEqual([]);
    expect(typeChangeConflicts(type, type, [treatment('1', [version(1, 'x'.repeat(50), published)])], NOW)).toEqual([]);
  });

  it('one detail per treatment, field and problem, listing the versions and the longest value', () => {
    const t = treatment('7', [version(1, 'x'.repeat(30), archived), version(2, 'x'.repeat(20), published), version(3, 'x'.repeat(25))]);
    const details = typeChangeConflicts(type, withFields({ maximumLengthAllowed: 10 }), [t], NOW);
    expect(details).toEqual([
      {
        field: 'contentFieldTypes[0].maximumLengthAllowed',
        description: 'treatment 7 ("t7") stores a 30-character value in "title" (versions 1, 2, 3), longer than 10',
      },
    ]);
  });

  it('a removed field and a per-language flip are reported on their own paths', () => {
    const t = treatment('7', [version(1, 'hi', published)]);
    const details = typeChangeConflicts(type, withFields({ isPerLanguage: false }, false), [t], NOW);
    expect(details.map((d) => d.field).sort()).toEqual(['contentFieldTypes', 'contentFieldTypes[0].isPerLanguage']);
    expect(details.find((d) => d.field === 'contentFieldTypes')!.description).toContain('"link"');
  });

  it('archived treatments are ignored; paused and draft ones count', () => {
    const gone = treatment('1', [version(1, 'x'.repeat(60), archived)]);
    const paused = treatment('2', [version(1, 'x'.repeat(60), published)], { paused: true });
    const draft = treatment('3', [version(1, 'x'.repeat(60))]);
    const details = typeChangeConflicts(type, withFields({ maximumLengthAllowed: 10 }), [gone, paused, draft], NOW);
    expect(details.map((d) => d.description.split(' ')[1])).toEqual(['2', '3']);
  });

  it('a removed surface is held by every open version that does not remove it; archived versions do not hold it', () => {
    const after = { ...type, surfaces: ['home'] };
    const holding = treatment('1', [version(1, 'a', { ...archived }), version(2, 'a', published)]);
    const removing = treatment('2', [version(1, 'a', { ...archived }), version(2, 'a', { ...published, removedSurfaces: ['inbox'] })]);
    const details = typeChangeConflicts(type, after, [holding, removing], NOW, 'clearSurfaces');
    expect(details).toEqual([
      {
        field: 'clearSurfaces',
        description: expect.stringMatching(/^surface "inbox" would be removed but treatment 1 \("t1"\) is delivered on it \(version 2\)/),
      },
    ]);
  });
});

describe('surfaceDataFieldParams', () => {
  it('nine entries whose keys equal what GetDataFields makes of the same params', () => {
    const entries = surfaceDataFieldParams('home');
    expect(entries).toHaveLength(9);
    expect(new Set(entries.map((e) => e.key)).size).toBe(9);
    const again = normalizeDataFieldParams(
      {
        treatmentDataFieldParams: {
          surfaceName: 'home',
          treatmentInteractionType: 'CLICKED',
          isDistinctInteraction: false,
          daysSinceLastTimestampAggregation: {},
        },
      },
      'x',
    );
    expect(entries.map((e) => e.key)).toContain(again.key);
  });
});
