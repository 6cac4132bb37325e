import { describe, expect, it } from 'vitest';
import { checkRhs, CONDITIONS_BY_TYPE } from '../../api/console/src/catalogue.js';
import { conditionFitsType, validateRhs } from '../../shared/rules/eligibility.js';
import { CONDITIONS } from '../../shared/treatments/treatment.schemas.js';
import type { Condition } from '../../shared/treatments/index.js';
import type { DataFieldType } from '../../shared/aggregation/index.js';

// The console checks a rule's value as it is typed: it must agree with the service,
// which has the last word, on which conditions fit a type and which values are accepted.
const TYPES = Object.keys(CONDITIONS_BY_TYPE) as DataFieldType[];
const VALUES = [
  '',
  ' ',
  '3',
  '-7',
  '+2',
  '3.5',
  '1e3',
  'abc',
  'true',
  'FALSE',
  '86400',
  '86400s',
  '1,2,3',
  '[1,2]',
  '["a","b"]',
  'a, b',
  '[]',
  ',',
  'gold',
  '[1,"x"]',
  '2.5,3',
  '.5',
  '5.',
  '-1',
  '1s',
  'Infinity',
  '2026-01-01T00:00:00Z',
  '2026-02-30T00:00:00Z',
  '2026-01-01',
  '[true,false]',
  '"a,b"',
  '[a, b]',
  '[{"a":1}]',
];

describe('the console rule builder', () => {
  it('offers exactly the conditions the service allows for each data field type', () => {
    for (const type of TYPES) {
      const service = CONDITIONS.filter((c) => c !== 'UNSPECIFIED_CONDITION' && conditionFitsType(c as Condition, type));
      expect(new Set(CONDITIONS_BY_TYPE[type]), type).toEqual(new Set(service));
    }
  });

  it('accepts a value as it is typed exactly when the service would', () => {
    const disagreements: string[] = [];
    for (const type of TYPES) {
      for (const condition of CONDITIONS_BY_TYPE[type]) {
        for (const value of VALUES) {
          const console_ = checkRhs(type, condition, value) === null;
          const service = validateRhs(condition as Condition, type, value) === null;
          if (console_ !== service) disagreements.push(`${type} ${condition} ${JSON.stringify(value)}: console ${console_}, service ${service}`);
        }
      }
    }
    expect(disagreements).toEqual([]);
  });
});
