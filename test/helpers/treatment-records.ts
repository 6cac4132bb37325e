import { createTreatment, type NewTreatment, type TreatmentUpdate } from '../../shared/treatments/treatment-versions.js';
import type { Content, TreatmentRecord } from '../../shared/treatments/index.js';

/** Treatment records created and updated at a fixed T0, for the treatment version tests. */
export const T0 = Date.parse('2025-01-01T00:00:00.000Z');
export const HOUR = 3_600_000;
export const at = (ms: number): string => new Date(ms).toISOString();

export const content = (title: string): Content => ({
  contentByLanguage: [{ languageCode: { languageCode: 'en' }, contentFields: [{ fieldName: 'title', stringValue: title }] }],
  languageAgnosticContentFields: [],
});

export function input(overrides: Partial<NewTreatment> = {}, start = T0 - HOUR): NewTreatment {
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
export const liveTreatment = (): TreatmentRecord => createTreatment(input({ shouldPublish: true }), T0 - HOUR);
export const update = (u: Partial<TreatmentUpdate>): TreatmentUpdate => ({ lastModifiedBy: 'bob', ...u });

export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') {
    Object.values(value).forEach(deepFreeze);
    Object.freeze(value);
  }
  return value;
}

export function version(t: TreatmentRecord, n: number) {
  const v = t.versions.find((x) => x.versionNumber === n);
  if (v === undefined) throw new Error(`no version ${n}`);
  return v;
}
