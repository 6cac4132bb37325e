import { describe, expect, it } from 'vitest';
import { conditionFitsType, evaluateRule, validateRhs } from '../../shared/rules/eligibility.js';
import { type RuleValue } from '../../shared/rules/rule-values.js';
import type { Condition, EligibilityRule } from '../../shared/treatments/index.js';
import type { DataFieldType } from '../../shared/aggregation/index.js';
import { NOW_MS, int, dbl, str, bool, ts, ints, dbls, strs, rule, evaluate } from '../helpers/rule-values.js';

/** Which conditions fit which data types, evaluateRule with the field type, and missing data. */
// Written out independently of the implementation's table, so a change there is caught here.
const ALL_CONDITIONS: Condition[] = [
  'UNSPECIFIED_CONDITION',
  'LESS_THAN',
  'LESS_THAN_OR_EQUALS',
  'GREATER_THAN',
  'GREATER_THAN_OR_EQUALS',
  'EQUALS',
  'NOT_EQUALS',
  'IS_AFTER_CURRENT_TIMESTAMP_MINUS',
  'IS_BEFORE_CURRENT_TIMESTAMP_MINUS',
  'CONTAINS',
  'ANY_OF',
  'DOES_NOT_CONTAIN',
  'NOT_ANY_OF',
  'CONTAINS_ANY_OF',
  'DOES_NOT_CONTAIN_ANY_OF',
];
const CMP = ['LESS_THAN', 'LESS_THAN_OR_EQUALS', 'GREATER_THAN', 'GREATER_THAN_OR_EQUALS', 'EQUALS', 'NOT_EQUALS'];
const REL = ['IS_AFTER_CURRENT_TIMESTAMP_MINUS', 'IS_BEFORE_CURRENT_TIMESTAMP_MINUS'];
const LIST_CONDS = ['CONTAINS', 'DOES_NOT_CONTAIN', 'CONTAINS_ANY_OF', 'DOES_NOT_CONTAIN_ANY_OF'];
const FITS: Record<DataFieldType, string[]> = {
  UNSPECIFIED_DATA_FIELD_TYPE: [],
  INTEGER: [...CMP, ...REL, 'ANY_OF', 'NOT_ANY_OF'],
  DOUBLE: [...CMP, 'ANY_OF', 'NOT_ANY_OF'],
  STRING: [...CMP, ...LIST_CONDS, 'ANY_OF', 'NOT_ANY_OF'],
  BOOLEAN: ['EQUALS', 'NOT_EQUALS'],
  TIMESTAMP_SECONDS: [...CMP, ...REL],
  INTEGER_LIST: LIST_CONDS,
  DOUBLE_LIST: LIST_CONDS,
  STRING_LIST: LIST_CONDS,
};

/** A value of each type, and an rhs that is valid for every condition that fits the type. */
const SAMPLES: Record<Exclude<DataFieldType, 'UNSPECIFIED_DATA_FIELD_TYPE'>, [RuleValue, Record<string, string>]> = {
  INTEGER: [int(5n), { default: '5', list: '[1,5]', rel: '60' }],
  DOUBLE: [dbl(2.5), { default: '2.5', list: '[2.5]' }],
  STRING: [str('gold'), { default: 'gold', list: 'gold,silver' }],
  BOOLEAN: [bool(true), { default: 'true' }],
  TIMESTAMP_SECONDS: [ts('2024-06-15T11:00:00Z'), { default: '2024-06-15T11:00:00Z', rel: '7200' }],
  INTEGER_LIST: [ints(1n, 2n), { default: '2', list: '[2,3]' }],
  DOUBLE_LIST: [dbls(0.5), { default: '0.5', list: '[0.5]' }],
  STRING_LIST: [strs('a', 'b'), { default: 'a', list: '["a"]' }],
};

function sampleRhs(condition: Condition, rhs: Record<string, string>): string {
  if (REL.includes(condition)) return rhs.rel ?? rhs.default;
  if (condition.includes('ANY_OF')) return rhs.list ?? rhs.default;
  return rhs.default;
}

describe('every condition against every data type', () => {
  for (const [type, [value, rhs]] of Object.entries(SAMPLES) as [DataFieldType, [RuleValue, Record<string, string>]][]) {
    for (const condition of ALL_CONDITIONS) {
      const fits = FITS[type].includes(condition);
      it(`${condition} on ${type} ${fits ? 'fits' : 'is a type mismatch'}`, () => {
        expect(conditionFitsType(condition, type)).toBe(fits);
        const rhsValue = sampleRhs(condition, rhs);
        const outcome = evaluate(value, condition, rhsValue);
        if (condition === 'UNSPECIFIED_CONDITION') {
          expect(outcome).toEqual({ result: false, reason: 'UNSPECIFIED_CONDITION' });
        } else if (fits) {
          expect(validateRhs(condition, type, rhsValue)).toBeNull();
          expect(['MATCHED', 'NOT_MATCHED']).toContain(outcome.reason);
        } else {
          expect(outcome).toEqual({ result: false, reason: 'TYPE_MISMATCH' });
          expect(validateRhs(condition, type, rhsValue)).toMatch(/does not apply/);
        }
      });
    }
  }

  it('nothing fits an UNSPECIFIED_DATA_FIELD_TYPE', () => {
    for (const condition of ALL_CONDITIONS) expect(conditionFitsType(condition, 'UNSPECIFIED_DATA_FIELD_TYPE')).toBe(false);
  });
});

describe('evaluateRule with the field type', () => {
  it('is a TYPE_MISMATCH when the value is not of the field type, even if its own kind would compare', () => {
    expect(evaluateRule(rule('EQUALS', '5'), str('5'), NOW_MS, 'INTEGER')).toEqual({ result: false, reason: 'TYPE_MISMATCH' });
    expect(evaluateRule(rule('EQUALS', '5'), int(5n), NOW_MS, 'STRING')).toEqual({ result: false, reason: 'TYPE_MISMATCH' });
  });

  it('evaluates normally when the value has the field type', () => {
    expect(evaluateRule(rule('EQUALS', '5'), int(5n), NOW_MS, 'INTEGER')).toEqual({ result: true, reason: 'MATCHED' });
  });

  it('still applies the missing-data behaviour', () => {
    const eligible = rule('EQUALS', '5', 'EVALUATE_TO_ELIGIBLE');
    expect(evaluateRule(eligible, undefined, NOW_MS, 'INTEGER')).toEqual({ result: true, reason: 'MISSING_ELIGIBLE' });
  });
});

describe('missing data', () => {
  it.each([
    ['EVALUATE_TO_ELIGIBLE', { result: true, reason: 'MISSING_ELIGIBLE' }],
    ['EVALUATE_TO_INELIGIBLE', { result: false, reason: 'MISSING_INELIGIBLE' }],
    ['ELIGIBILITY_RULE_DATA_MISSING_BEHAVIOUR_UNSPECIFIED', { result: false, reason: 'MISSING_INELIGIBLE' }],
  ] as const)('%s', (behaviour, outcome) => {
    expect(evaluateRule(rule('EQUALS', '1', behaviour), undefined, NOW_MS)).toEqual(outcome);
    // negated conditions are not "true" for missing data either
    expect(evaluateRule(rule('NOT_ANY_OF', '1,2', behaviour), undefined, NOW_MS)).toEqual(outcome);
  });

  it('treats a behaviour absent from a stored record as ineligible', () => {
    const stored = { dataFieldId: '1', condition: 'EQUALS', rhsValue: '1' } as EligibilityRule;
    expect(evaluateRule(stored, undefined, NOW_MS)).toEqual({ result: false, reason: 'MISSING_INELIGIBLE' });
  });

  it('reports an unspecified condition even when data is missing', () => {
    expect(evaluateRule(rule('UNSPECIFIED_CONDITION', '1', 'EVALUATE_TO_ELIGIBLE'), undefined, NOW_MS)).toEqual({
      result: false,
      reason: 'UNSPECIFIED_CONDITION',
    });
  });
});
