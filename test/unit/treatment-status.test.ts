import { describe, expect, it } from 'vitest';
import { servedVersion, treatmentStatus, versionStatus } from '../../shared/treatments/treatment-status.js';
import type { TreatmentRecord, TreatmentVersionRecord } from '../../shared/treatments/index.js';

const T0 = Date.parse('2025-01-01T00:00:00.000Z');
const HOUR = 3_600_000;
const at = (ms: number): string => new Date(ms).toISOString();

function version(n: number, fields: Partial<TreatmentVersionRecord> = {}): TreatmentVersionRecord {
  return {
    versionNumber: n,
    startTimestamp: at(T0),
    tags: [],
    content: { contentByLanguage: [], languageAgnosticContentFields: [] },
    eligibilityRules: [],
    removedSurfaces: [],
    createTime: at(T0 - 10 * HOUR),
    lastModifiedTimestamp: at(T0 - 10 * HOUR),
    ...fields,
  };
}

function treatment(versions: TreatmentVersionRecord[], paused = false): TreatmentRecord {
  return {
    treatmentId: '1',
    projectId: 'p',
    name: 'n',
    description: 'd',
    treatmentTypeId: '7',
    paused,
    lastModifiedBy: 'me',
    lastModifiedTimestamp: at(T0),
    modificationSource: 'API',
    createTime: at(T0),
    versions,
  };
}

describe('versionStatus', () => {
  const published = at(T0 - 5 * HOUR);

  it('is DRAFT while unpublished, whatever its times', () => {
    const v = version(1, { startTimestamp: at(T0 - HOUR), endTimestamp: at(T0 + HOUR) });
    expect(versionStatus(v, treatment([v]), T0)).toBe('DRAFT');
  });

  it('moves SCHEDULED → LIVE → ARCHIVED as time passes, with start inclusive and end exclusive', () => {
    const v = version(1, { publishTime: published, startTimestamp: at(T0), endTimestamp: at(T0 + HOUR) });
    const t = treatment([v]);
    expect(versionStatus(v, t, T0 - 1)).toBe('SCHEDULED');
    expect(versionStatus(v, t, T0)).toBe('LIVE');
    expect(versionStatus(v, t, T0 + HOUR - 1)).toBe('LIVE');
    expect(versionStatus(v, t, T0 + HOUR)).toBe('ARCHIVED');
  });

  it('stays LIVE for ever without an end', () => {
    const v = version(1, { publishTime: published });
    expect(versionStatus(v, treatment([v]), T0 + 10_000 * 24 * HOUR)).toBe('LIVE');
  });

  it('is ARCHIVED, not SCHEDULED, when its end was moved before its start (superseded while scheduled)', () => {
    const v = version(1, { publishTime: published, startTimestamp: at(T0 + 2 * HOUR), endTimestamp: at(T0 - HOUR) });
    expect(versionStatus(v, treatment([v]), T0)).toBe('ARCHIVED');
  });
});

describe('treatmentStatus', () => {
  const live = version(2, { publishTime: at(T0 - HOUR), startTimestamp: at(T0 - HOUR) });
  const scheduled = version(3, { publishTime: at(T0 - HOUR), startTimestamp: at(T0 + HOUR) });
  const archived = version(1, { publishTime: at(T0 - 3 * HOUR), startTimestamp: at(T0 - 3 * HOUR), endTimestamp: at(T0 - HOUR) });
  const draft = version(4);

  it('is PAUSED when paused, even with a LIVE version', () => {
    expect(treatmentStatus(treatment([live], true), T0)).toBe('PAUSED');
  });

  it('is LIVE when any version is LIVE', () => {
    expect(treatmentStatus(treatment([archived, live, scheduled, draft]), T0)).toBe('LIVE');
  });

  it('is SCHEDULED when no version is LIVE but one is SCHEDULED', () => {
    expect(treatmentStatus(treatment([archived, scheduled, draft]), T0)).toBe('SCHEDULED');
  });

  it('is DRAFT when no version was ever published', () => {
    expect(treatmentStatus(treatment([version(1), version(2)]), T0)).toBe('DRAFT');
  });

  it('is ARCHIVED when a version was published but none is LIVE or SCHEDULED, even with a newer draft', () => {
    expect(treatmentStatus(treatment([archived, draft]), T0)).toBe('ARCHIVED');
  });

  it('follows the clock: SCHEDULED before the start, LIVE during, ARCHIVED after the end', () => {
    const t = treatment([version(1, { publishTime: at(T0), startTimestamp: at(T0 + HOUR), endTimestamp: at(T0 + 2 * HOUR) })]);
    expect(treatmentStatus(t, T0)).toBe('SCHEDULED');
    expect(treatmentStatus(t, T0 + HOUR)).toBe('LIVE');
    expect(treatmentStatus(t, T0 + 2 * HOUR)).toBe('ARCHIVED');
  });
});

describe('servedVersion', () => {
  it('is the LIVE version', () => {
    const live = version(1, { publishTime: at(T0 - HOUR) });
    const t = treatment([live, version(2)]);
    expect(servedVersion(t, T0)?.versionNumber).toBe(1);
  });

  it('is undefined while paused', () => {
    const t = treatment([version(1, { publishTime: at(T0 - HOUR) })], true);
    expect(servedVersion(t, T0)).toBeUndefined();
  });

  it('is undefined when nothing is LIVE (drafts and scheduled versions are never served)', () => {
    const t = treatment([version(1), version(2, { publishTime: at(T0), startTimestamp: at(T0 + HOUR) })]);
    expect(servedVersion(t, T0)).toBeUndefined();
    expect(servedVersion(t, T0 + HOUR)?.versionNumber).toBe(2);
  });

  it('picks the most recently published of several LIVE versions, not the highest number', () => {
    const t = treatment([version(1, { publishTime: at(T0 - HOUR) }), version(2, { publishTime: at(T0 - 3 * HOUR) })]);
    expect(servedVersion(t, T0)?.versionNumber).toBe(1);
  });
});
