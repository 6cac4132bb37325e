import { describe, expect, it } from 'vitest';
import {
  conditionFitsType,
  evaluateRule,
  ruleValueFromContextualAttribute,
  ruleValueFromJson,
  validateRhs,
  type RuleOutcome,
  type RuleValue,
} from '../../shared/delivery/eligibility.js';
import type { Condition, DataMissingBehaviour, EligibilityRule } from '../../shared/treatments/index.js';
import type { DataFieldType } from '../../shared/aggregation/index.js';

const NOW_MS = Date.parse('2024-06-15T12:00:00Z');
const HOUR_S = 3600;

const int = (value: bigint): RuleValue => ({ kind: 'integer', value });
const dbl = (value: number): RuleValue => ({ kind: 'double', value });
const str = (value: string): RuleValue => ({ kind: 'string', value });
const bool = (value: boolean): RuleValue => ({ kind: 'boolean', value });
const ts = (iso: string): RuleValue => ({ kind: 'timestamp', valueMs: Date.parse(iso) });
const ints = (...value: bigint[]): RuleValue => ({ kind: 'integer_list', value });
const dbls = (...value: number[]): RuleValue => ({ kind: 'double_list', value });
const strs = (...value: string[]): RuleValue => ({ kind: 'string_list', value });

function rule(
  condition: Condition,
  rhsValue: string,
  dataMissingBehaviour: DataMissingBehaviour = 'EVALUATE_TO_INELIGIBLE',
): EligibilityRule {
  return { dataFieldId: '1', condition, rhsValue, dataMissingBehaviour };
}

function evaluate(value: RuleValue | undefined, condition: Condition, rhs: string, nowMs = NOW_MS): RuleOutcome {
  return evaluateRule(rule(condition, rhs), value, nowMs);
}

type Case = [value: RuleValue, condition: Condition, rhs: string, expected: boolean | RuleOutcome['reason']];

function check([value, condition, rhs, expected]: Case): void {
  const outcome = evaluate(value, condition, rhs);
  if (typeof expected === 'boolean') {
    expect(outcome).toEqual({ result: expected, reason: expected ? 'MATCHED' : 'NOT_MATCHED' });
  } else {
    expect(outcome).toEqual({ result: expected === 'MATCHED' || expected === 'MISSING_ELIGIBLE', reason: expected });
  }
}

// Written out independently of the implementation's table, so a change there is caught here.
const ALL_CONDITIONS: Condition[] = [
  'UNSPECIFIED_CONDITION', 'LESS_THAN', 'LESS_THAN_OR_EQUALS', 'GREATER_THAN', 'GREATER_THAN_OR_EQUALS', 'EQUALS',
  'NOT_EQUALS', 'IS_AFTER_CURRENT_TIMESTAMP_MINUS', 'IS_BEFORE_CURRENT_TIMESTAMP_MINUS', 'CONTAINS', 'ANY_OF',
  'DOES_NOT_CONTAIN', 'NOT_ANY_OF', 'CONTAINS_ANY_OF', 'DOES_NOT_CONTAIN_ANY_OF',
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

describe('INTEGER', () => {
  it.each<Case>([
    [int(5n), 'LESS_THAN', '6', true],
    [int(5n), 'LESS_THAN', '5', false],
    [int(5n), 'LESS_THAN_OR_EQUALS', '5', true],
    [int(5n), 'LESS_THAN_OR_EQUALS', '4', false],
    [int(5n), 'GREATER_THAN', '4', true],
    [int(5n), 'GREATER_THAN', '5', false],
    [int(5n), 'GREATER_THAN_OR_EQUALS', '5', true],
    [int(5n), 'GREATER_THAN_OR_EQUALS', '6', false],
    [int(5n), 'EQUALS', '5', true],
    [int(5n), 'EQUALS', ' +5 ', true],
    [int(5n), 'EQUALS', '6', false],
    [int(5n), 'NOT_EQUALS', '6', true],
    [int(5n), 'NOT_EQUALS', '5', false],
    [int(-3n), 'LESS_THAN', '-2', true],
  ])('%o %s %j → %s', (...c) => check(c));

  it('compares beyond 2^53 exactly', () => {
    check([int(9007199254740993n), 'GREATER_THAN', '9007199254740992', true]);
    check([int(9007199254740993n), 'EQUALS', '9007199254740993', true]);
    check([int(9007199254740993n), 'EQUALS', '9007199254740992', false]);
  });

  it('compares a fractional rhs numerically', () => {
    check([int(3n), 'LESS_THAN', '3.5', true]);
    check([int(4n), 'LESS_THAN', '3.5', false]);
    check([int(4n), 'GREATER_THAN', '3.5', true]);
    check([int(3n), 'GREATER_THAN', '3.5', false]);
    check([int(3n), 'EQUALS', '3.5', false]);
    check([int(3n), 'NOT_EQUALS', '3.5', true]);
    check([int(-4n), 'LESS_THAN', '-3.5', true]);
    check([int(-3n), 'LESS_THAN', '-3.5', false]);
    check([int(3n), 'EQUALS', '3.0', true]);
    check([int(1000n), 'EQUALS', '1e3', true]);
  });

  it.each<Case>([
    [int(2n), 'ANY_OF', '[1,2,3]', true],
    [int(4n), 'ANY_OF', '[1,2,3]', false],
    [int(2n), 'ANY_OF', '1, 2 ,3', true],
    [int(2n), 'ANY_OF', '["1","2"]', true],
    [int(2n), 'NOT_ANY_OF', '[1,3]', true],
    [int(2n), 'NOT_ANY_OF', '1,2', false],
    [int(9007199254740993n), 'ANY_OF', '[9007199254740993]', true],
    [int(9007199254740993n), 'ANY_OF', '[9007199254740992]', false],
  ])('%o %s %j → %s', (...c) => check(c));

  it.each<Case>([
    [int(5n), 'LESS_THAN', 'abc', 'BAD_RHS'],
    [int(5n), 'EQUALS', '', 'BAD_RHS'],
    [int(5n), 'EQUALS', '0x10', 'BAD_RHS'],
    [int(5n), 'GREATER_THAN', '2024-01-01T00:00:00Z', 'BAD_RHS'],
    [int(5n), 'ANY_OF', '[1,"x"]', 'BAD_RHS'],
    [int(5n), 'ANY_OF', '', 'BAD_RHS'],
    [int(5n), 'ANY_OF', '[]', 'BAD_RHS'],
    [int(5n), 'NOT_ANY_OF', 'a,b', 'BAD_RHS'],
  ])('%o %s %j → %s', (...c) => check(c));
});

describe('DOUBLE', () => {
  it.each<Case>([
    [dbl(2.5), 'LESS_THAN', '3', true],
    [dbl(2.5), 'LESS_THAN', '2.5', false],
    [dbl(2.5), 'LESS_THAN_OR_EQUALS', '2.5', true],
    [dbl(2.5), 'GREATER_THAN', '2.49', true],
    [dbl(2.5), 'GREATER_THAN', '2.5', false],
    [dbl(2.5), 'GREATER_THAN_OR_EQUALS', '2.5', true],
    [dbl(2.5), 'GREATER_THAN_OR_EQUALS', '2.6', false],
    [dbl(2.5), 'EQUALS', '2.50', true],
    [dbl(2), 'EQUALS', '2', true],
    [dbl(2.5), 'NOT_EQUALS', '2.5', false],
    [dbl(2.5), 'NOT_EQUALS', '-2.5', true],
    [dbl(0.001), 'EQUALS', '1e-3', true],
    [dbl(2.5), 'ANY_OF', '[1, 2.5]', true],
    [dbl(2.5), 'ANY_OF', '1,2', false],
    [dbl(2.5), 'NOT_ANY_OF', '1,2', true],
    [dbl(2.5), 'LESS_THAN', 'NaN', 'BAD_RHS'],
    [dbl(2.5), 'LESS_THAN', 'Infinity', 'BAD_RHS'],
    [dbl(2.5), 'EQUALS', '1e999', 'BAD_RHS'],
    [dbl(2.5), 'ANY_OF', '[true]', 'BAD_RHS'],
  ])('%o %s %j → %s', (...c) => check(c));
});

describe('STRING', () => {
  it.each<Case>([
    [str('gold'), 'EQUALS', 'gold', true],
    [str('gold'), 'EQUALS', 'Gold', false],
    [str('gold'), 'EQUALS', ' gold', false],
    [str('gold'), 'NOT_EQUALS', 'silver', true],
    [str('gold'), 'NOT_EQUALS', 'gold', false],
    [str(''), 'EQUALS', '', true],
    // lexicographic by code unit, not numeric
    [str('10'), 'LESS_THAN', '9', true],
    [str('b'), 'GREATER_THAN', 'abc', true],
    [str('B'), 'LESS_THAN', 'a', true],
    [str('abc'), 'LESS_THAN_OR_EQUALS', 'abc', true],
    [str('abc'), 'GREATER_THAN_OR_EQUALS', 'abd', false],
    [str('golden'), 'CONTAINS', 'old', true],
    [str('golden'), 'CONTAINS', 'OLD', false],
    [str('golden'), 'DOES_NOT_CONTAIN', 'silver', true],
    [str('golden'), 'DOES_NOT_CONTAIN', 'gold', false],
    [str('a,b'), 'CONTAINS', 'a,b', true],
    [str('gold'), 'ANY_OF', '["gold","silver"]', true],
    [str('gold'), 'ANY_OF', 'silver, gold', true],
    [str('go'), 'ANY_OF', 'gold,silver', false],
    [str('gold'), 'NOT_ANY_OF', 'silver,bronze', true],
    [str('gold'), 'NOT_ANY_OF', '[gold, silver]', false],
    [str('a,b'), 'ANY_OF', '"a,b"', true],
    [str('a,b'), 'ANY_OF', '["a,b","c"]', true],
    [str('[x'), 'ANY_OF', '[x', true],
    [str('premium user'), 'CONTAINS_ANY_OF', '["basic","premium"]', true],
    [str('premium user'), 'CONTAINS_ANY_OF', 'basic,free', false],
    [str('premium user'), 'DOES_NOT_CONTAIN_ANY_OF', 'basic,free', true],
    [str('premium user'), 'DOES_NOT_CONTAIN_ANY_OF', 'free, user', false],
    [str('gold'), 'ANY_OF', ' , ', 'BAD_RHS'],
    [str('gold'), 'ANY_OF', '[{"a":1}]', 'BAD_RHS'],
    [str('gold'), 'CONTAINS_ANY_OF', '[null]', 'BAD_RHS'],
  ])('%o %s %j → %s', (...c) => check(c));
});

describe('BOOLEAN', () => {
  it.each<Case>([
    [bool(true), 'EQUALS', 'true', true],
    [bool(true), 'EQUALS', 'TRUE', true],
    [bool(true), 'EQUALS', ' True ', true],
    [bool(true), 'EQUALS', 'false', false],
    [bool(false), 'EQUALS', 'false', true],
    [bool(false), 'NOT_EQUALS', 'true', true],
    [bool(false), 'NOT_EQUALS', 'False', false],
    [bool(true), 'EQUALS', 'yes', 'BAD_RHS'],
    [bool(true), 'EQUALS', '1', 'BAD_RHS'],
    [bool(true), 'NOT_EQUALS', '', 'BAD_RHS'],
    [bool(true), 'LESS_THAN', 'true', 'TYPE_MISMATCH'],
    [bool(true), 'CONTAINS', 'true', 'TYPE_MISMATCH'],
  ])('%o %s %j → %s', (...c) => check(c));
});

describe('TIMESTAMP_SECONDS', () => {
  const t = ts('2024-06-15T11:00:00Z');
  const epoch = String(Date.parse('2024-06-15T11:00:00Z') / 1000);

  it.each<Case>([
    [t, 'LESS_THAN', '2024-06-15T11:00:01Z', true],
    [t, 'LESS_THAN', '2024-06-15T11:00:00Z', false],
    [t, 'LESS_THAN_OR_EQUALS', '2024-06-15T11:00:00Z', true],
    [t, 'GREATER_THAN', '2024-06-15T10:59:59.999Z', true],
    [t, 'GREATER_THAN_OR_EQUALS', '2024-06-15T11:00:00.001Z', false],
    [t, 'EQUALS', '2024-06-15T11:00:00Z', true],
    [t, 'EQUALS', '2024-06-15T13:00:00+02:00', true],
    [t, 'EQUALS', '2024-06-15t06:30:00-04:30', true],
    [t, 'EQUALS', '2024-06-15 11:00:00.000000z', true],
    [t, 'NOT_EQUALS', '2024-06-15T11:00:00Z', false],
    [t, 'EQUALS', epoch, true],
    [t, 'GREATER_THAN', String(Number(epoch) - 1), true],
    [t, 'LESS_THAN', `${epoch}.5`, true],
    [t, 'EQUALS', '2024-06-15', 'BAD_RHS'],
    [t, 'EQUALS', '2024-02-30T00:00:00Z', 'BAD_RHS'],
    [t, 'EQUALS', '2024-06-15T24:00:00Z', 'BAD_RHS'],
    [t, 'EQUALS', '2024-06-15T11:00:00', 'BAD_RHS'],
    [t, 'ANY_OF', epoch, 'TYPE_MISMATCH'],
  ])('%o %s %j → %s', (...c) => check(c));
});

describe('timestamp-minus conditions (injected clock)', () => {
  // now = 12:00; rhs 3600 → threshold 11:00
  it.each<Case>([
    [ts('2024-06-15T11:30:00Z'), 'IS_AFTER_CURRENT_TIMESTAMP_MINUS', String(HOUR_S), true],
    [ts('2024-06-15T11:00:00Z'), 'IS_AFTER_CURRENT_TIMESTAMP_MINUS', String(HOUR_S), false],
    [ts('2024-06-15T10:30:00Z'), 'IS_AFTER_CURRENT_TIMESTAMP_MINUS', String(HOUR_S), false],
    [ts('2024-06-15T10:30:00Z'), 'IS_BEFORE_CURRENT_TIMESTAMP_MINUS', String(HOUR_S), true],
    [ts('2024-06-15T11:00:00Z'), 'IS_BEFORE_CURRENT_TIMESTAMP_MINUS', String(HOUR_S), false],
    [ts('2024-06-15T11:30:00Z'), 'IS_BEFORE_CURRENT_TIMESTAMP_MINUS', String(HOUR_S), false],
    [ts('2024-06-15T11:59:59Z'), 'IS_AFTER_CURRENT_TIMESTAMP_MINUS', '0', false],
    [ts('2024-06-15T12:00:01Z'), 'IS_AFTER_CURRENT_TIMESTAMP_MINUS', '0', true],
    [ts('2024-06-15T11:30:00Z'), 'IS_AFTER_CURRENT_TIMESTAMP_MINUS', '3600s', true],
    // fractional seconds: thresholds 11:29:59.5 and 11:30:00.5
    [ts('2024-06-15T11:30:00Z'), 'IS_AFTER_CURRENT_TIMESTAMP_MINUS', '1800.5', true],
    [ts('2024-06-15T11:30:00Z'), 'IS_AFTER_CURRENT_TIMESTAMP_MINUS', '1799.5', false],
    [ts('2024-06-15T11:30:00Z'), 'IS_AFTER_CURRENT_TIMESTAMP_MINUS', '-60', 'BAD_RHS'],
    [ts('2024-06-15T11:30:00Z'), 'IS_BEFORE_CURRENT_TIMESTAMP_MINUS', 'an hour', 'BAD_RHS'],
    [ts('2024-06-15T11:30:00Z'), 'IS_BEFORE_CURRENT_TIMESTAMP_MINUS', '2024-06-15T00:00:00Z', 'BAD_RHS'],
  ])('%o %s %j → %s', (...c) => check(c));

  it('treats integer values as epoch seconds', () => {
    const seconds = BigInt(Date.parse('2024-06-15T11:30:00Z') / 1000);
    check([int(seconds), 'IS_AFTER_CURRENT_TIMESTAMP_MINUS', String(HOUR_S), true]);
    check([int(seconds), 'IS_BEFORE_CURRENT_TIMESTAMP_MINUS', String(HOUR_S), false]);
    check([int(seconds), 'IS_BEFORE_CURRENT_TIMESTAMP_MINUS', '60', true]);
  });

  it('moves with the clock', () => {
    const value = ts('2024-06-15T11:30:00Z');
    const rhs = String(HOUR_S);
    expect(evaluate(value, 'IS_AFTER_CURRENT_TIMESTAMP_MINUS', rhs, NOW_MS).result).toBe(true);
    expect(evaluate(value, 'IS_AFTER_CURRENT_TIMESTAMP_MINUS', rhs, NOW_MS + HOUR_S * 1000).result).toBe(false);
    expect(evaluate(value, 'IS_BEFORE_CURRENT_TIMESTAMP_MINUS', rhs, NOW_MS + HOUR_S * 1000).result).toBe(true);
  });

  it.each(['DOUBLE', 'STRING', 'BOOLEAN', 'STRING_LIST'] as DataFieldType[])('does not fit %s', (type) => {
    expect(conditionFitsType('IS_AFTER_CURRENT_TIMESTAMP_MINUS', type)).toBe(false);
    expect(conditionFitsType('IS_BEFORE_CURRENT_TIMESTAMP_MINUS', type)).toBe(false);
  });
});

describe('lists', () => {
  it.each<Case>([
    [ints(1n, 2n, 3n), 'CONTAINS', '2', true],
    [ints(1n, 2n, 3n), 'CONTAINS', '2.0', true],
    [ints(1n, 2n, 3n), 'CONTAINS', '2.5', false],
    [ints(1n, 2n, 3n), 'CONTAINS', '4', false],
    [ints(1n, 2n, 3n), 'DOES_NOT_CONTAIN', '4', true],
    [ints(1n, 2n, 3n), 'DOES_NOT_CONTAIN', '3', false],
    [ints(1n, 2n), 'CONTAINS_ANY_OF', '[5,2]', true],
    [ints(1n, 2n), 'CONTAINS_ANY_OF', '5, 6', false],
    [ints(1n, 2n), 'DOES_NOT_CONTAIN_ANY_OF', '5,6', true],
    [ints(1n, 2n), 'DOES_NOT_CONTAIN_ANY_OF', '[6,1]', false],
    [ints(), 'CONTAINS', '1', false],
    [ints(), 'DOES_NOT_CONTAIN', '1', true],
    [ints(9007199254740993n), 'CONTAINS_ANY_OF', '[9007199254740992]', false],
    [ints(9007199254740993n), 'CONTAINS_ANY_OF', '[9007199254740993]', true],
    [ints(1n), 'CONTAINS', 'one', 'BAD_RHS'],
    [dbls(0.5, 1.5), 'CONTAINS', '1.5', true],
    [dbls(0.5, 1.5), 'CONTAINS', '1', false],
    [dbls(1), 'CONTAINS', '1', true],
    [dbls(0.5, 1.5), 'DOES_NOT_CONTAIN', '2', true],
    [dbls(0.5, 1.5), 'CONTAINS_ANY_OF', '[2, 0.5]', true],
    [dbls(0.5, 1.5), 'DOES_NOT_CONTAIN_ANY_OF', '2,3', true],
    [dbls(0.5), 'CONTAINS_ANY_OF', '["x"]', 'BAD_RHS'],
    [strs('red', 'blue'), 'CONTAINS', 'red', true],
    [strs('red', 'blue'), 'CONTAINS', 're', false],
    [strs('red', 'blue'), 'CONTAINS', 'Red', false],
    [strs('red', 'blue'), 'DOES_NOT_CONTAIN', 'green', true],
    [strs('red', 'blue'), 'CONTAINS_ANY_OF', '["green","blue"]', true],
    [strs('red', 'blue'), 'CONTAINS_ANY_OF', 'green, blue', true],
    [strs('red', 'blue'), 'CONTAINS_ANY_OF', 'green,yellow', false],
    [strs('red', 'blue'), 'DOES_NOT_CONTAIN_ANY_OF', 'green,yellow', true],
    [strs('red', 'blue'), 'DOES_NOT_CONTAIN_ANY_OF', '["red"]', false],
    [strs(' padded '), 'CONTAINS_ANY_OF', '[" padded "]', true],
    [strs(' padded '), 'CONTAINS_ANY_OF', ' padded ,x', false],
    [strs('1', '2'), 'CONTAINS_ANY_OF', '[2, 3]', true],
    [strs('red'), 'CONTAINS_ANY_OF', '', 'BAD_RHS'],
    [strs('red'), 'EQUALS', 'red', 'TYPE_MISMATCH'],
    [ints(1n), 'LESS_THAN', '2', 'TYPE_MISMATCH'],
    [dbls(1), 'ANY_OF', '1', 'TYPE_MISMATCH'],
  ])('%o %s %j → %s', (...c) => check(c));
});

describe('validateRhs', () => {
  it.each<[Condition, DataFieldType, string]>([
    ['LESS_THAN', 'INTEGER', '10'],
    ['LESS_THAN', 'INTEGER', '10.5'],
    ['EQUALS', 'STRING', ''],
    ['EQUALS', 'BOOLEAN', 'False'],
    ['GREATER_THAN', 'TIMESTAMP_SECONDS', '2024-01-01T00:00:00Z'],
    ['GREATER_THAN', 'TIMESTAMP_SECONDS', '1704067200'],
    ['IS_AFTER_CURRENT_TIMESTAMP_MINUS', 'TIMESTAMP_SECONDS', '86400'],
    ['IS_BEFORE_CURRENT_TIMESTAMP_MINUS', 'INTEGER', '0'],
    ['ANY_OF', 'STRING', 'a,b'],
    ['CONTAINS_ANY_OF', 'INTEGER_LIST', '[1,2]'],
  ])('accepts %s on %s with %j', (condition, type, rhs) => {
    expect(validateRhs(condition, type, rhs)).toBeNull();
  });

  it.each<[Condition, DataFieldType, string, RegExp]>([
    ['LESS_THAN', 'BOOLEAN', 'true', /does not apply/],
    ['UNSPECIFIED_CONDITION', 'INTEGER', '1', /does not apply/],
    ['CONTAINS', 'INTEGER', '1', /does not apply/],
    ['LESS_THAN', 'INTEGER', 'ten', /must be a number/],
    ['EQUALS', 'BOOLEAN', 'yes', /true or false/],
    ['GREATER_THAN', 'TIMESTAMP_SECONDS', 'yesterday', /RFC 3339/],
    ['IS_AFTER_CURRENT_TIMESTAMP_MINUS', 'TIMESTAMP_SECONDS', '-1', /non-negative number of seconds/],
    ['IS_AFTER_CURRENT_TIMESTAMP_MINUS', 'INTEGER', 'soon', /non-negative number of seconds/],
    ['ANY_OF', 'INTEGER', '1,x', /non-empty list of numbers/],
    ['NOT_ANY_OF', 'STRING', ',', /non-empty list of strings/],
    ['CONTAINS', 'DOUBLE_LIST', 'x', /must be a number/],
  ])('rejects %s on %s with %j', (condition, type, rhs, message) => {
    expect(validateRhs(condition, type, rhs)).toMatch(message);
  });

  it('names the condition and type in its message', () => {
    expect(validateRhs('LESS_THAN', 'INTEGER', 'ten')).toBe('rhsValue of LESS_THAN on a INTEGER data field must be a number');
  });
});

describe('ruleValueFromJson', () => {
  it.each<[DataFieldType, unknown, RuleValue | undefined]>([
    ['INTEGER', 42, int(42n)],
    ['INTEGER', '42', int(42n)],
    ['INTEGER', '-9007199254740993', int(-9007199254740993n)],
    ['INTEGER', { longValue: '7' }, int(7n)],
    ['INTEGER', 4.5, undefined],
    ['INTEGER', '4.5', undefined],
    ['INTEGER', true, undefined],
    ['DOUBLE', 4.5, dbl(4.5)],
    ['DOUBLE', '4.5', dbl(4.5)],
    ['DOUBLE', 3, dbl(3)],
    ['DOUBLE', 'x', undefined],
    ['STRING', 'gold', str('gold')],
    ['STRING', 30, str('30')],
    ['STRING', false, str('false')],
    ['STRING', { stringValue: 'x' }, str('x')],
    ['STRING', { a: 1 }, undefined],
    ['STRING', ['a'], undefined],
    ['BOOLEAN', true, bool(true)],
    ['BOOLEAN', 'FALSE', bool(false)],
    ['BOOLEAN', 1, bool(true)],
    ['BOOLEAN', 0, bool(false)],
    ['BOOLEAN', 2, undefined],
    ['BOOLEAN', 'yes', undefined],
    ['TIMESTAMP_SECONDS', '2024-06-15T11:00:00Z', ts('2024-06-15T11:00:00Z')],
    ['TIMESTAMP_SECONDS', 1718449200, ts('2024-06-15T11:00:00Z')],
    ['TIMESTAMP_SECONDS', '1718449200', ts('2024-06-15T11:00:00Z')],
    ['TIMESTAMP_SECONDS', 'June', undefined],
    ['INTEGER_LIST', [1, '2'], ints(1n, 2n)],
    ['INTEGER_LIST', '[1,2]', ints(1n, 2n)],
    ['INTEGER_LIST', [1, 2.5], undefined],
    ['INTEGER_LIST', 1, undefined],
    ['DOUBLE_LIST', [1.5, '2'], dbls(1.5, 2)],
    ['DOUBLE_LIST', [], dbls()],
    ['STRING_LIST', ['a', 'b'], strs('a', 'b')],
    ['STRING_LIST', ['a', null], undefined],
    ['STRING_LIST', 'a', undefined],
    ['INTEGER', null, undefined],
    ['INTEGER', undefined, undefined],
    ['UNSPECIFIED_DATA_FIELD_TYPE', 'x', undefined],
  ])('%s from %j', (type, raw, expected) => {
    expect(ruleValueFromJson(type, raw)).toEqual(expected);
  });
});

describe('ruleValueFromContextualAttribute', () => {
  it.each<[object, RuleValue | undefined]>([
    [{ key: 'k', stringValue: 'gold' }, str('gold')],
    [{ key: 'k', integerValue: 42 }, int(42n)],
    [{ key: 'k', integerValue: '9007199254740993' }, int(9007199254740993n)],
    [{ key: 'k', doubleValue: 1.5 }, dbl(1.5)],
    [{ key: 'k', boolValue: true }, bool(true)],
    [{ key: 'k', boolValue: 1 }, bool(true)],
    [{ key: 'k', boolValue: 0 }, bool(false)],
    [{ key: 'k', booleanValue: false }, bool(false)],
    [{ key: 'k', timestampValue: '2024-06-15T11:00:00Z' }, ts('2024-06-15T11:00:00Z')],
    [{ key: 'k', timestampValue: 'noon' }, undefined],
    [{ key: 'k', timestampMicrosValue: 1718449200000000 }, ts('2024-06-15T11:00:00Z')],
    [{ key: 'k', timestampMicrosValue: '1718449200000500' }, { kind: 'timestamp', valueMs: 1718449200000.5 }],
    [{ key: 'k' }, undefined],
  ])('natural kind of %j', (attr, expected) => {
    expect(ruleValueFromContextualAttribute(attr as { key: string })).toEqual(expected);
  });

  it.each<[object, DataFieldType, RuleValue | undefined]>([
    [{ key: 'k', integerValue: 1718449200 }, 'TIMESTAMP_SECONDS', ts('2024-06-15T11:00:00Z')],
    [{ key: 'k', stringValue: '2024-06-15T11:00:00Z' }, 'TIMESTAMP_SECONDS', ts('2024-06-15T11:00:00Z')],
    [{ key: 'k', stringValue: '42' }, 'INTEGER', int(42n)],
    [{ key: 'k', doubleValue: 3 }, 'INTEGER', int(3n)],
    [{ key: 'k', integerValue: 3 }, 'DOUBLE', dbl(3)],
    [{ key: 'k', integerValue: 42 }, 'STRING', str('42')],
    [{ key: 'k', integerValue: 1 }, 'BOOLEAN', bool(true)],
    [{ key: 'k', stringValue: 'true' }, 'BOOLEAN', bool(true)],
    [{ key: 'k', stringValue: '["a","b"]' }, 'STRING_LIST', strs('a', 'b')],
    [{ key: 'k', integerValue: 42 }, 'INTEGER', int(42n)],
    // not coercible: the attribute's own kind, so evaluation reports TYPE_MISMATCH
    [{ key: 'k', stringValue: 'abc' }, 'INTEGER', str('abc')],
    [{ key: 'k', integerValue: 2 }, 'BOOLEAN', int(2n)],
    [{ key: 'k', timestampValue: '2024-06-15T11:00:00Z' }, 'INTEGER', ts('2024-06-15T11:00:00Z')],
  ])('%j for a %s field', (attr, type, expected) => {
    expect(ruleValueFromContextualAttribute(attr as { key: string }, type)).toEqual(expected);
  });

  it('feeds evaluation end to end, with an uncoercible value reported as TYPE_MISMATCH', () => {
    const adult = rule('GREATER_THAN_OR_EQUALS', '18');
    const age = ruleValueFromContextualAttribute({ key: 'age', stringValue: '42' }, 'INTEGER');
    expect(evaluateRule(adult, age, NOW_MS, 'INTEGER')).toEqual({ result: true, reason: 'MATCHED' });
    // "9" >= "18" as text would match; against the INTEGER field it must not be compared at all
    const bad = ruleValueFromContextualAttribute({ key: 'age', stringValue: '9 years' }, 'INTEGER');
    expect(evaluateRule(adult, bad, NOW_MS, 'INTEGER')).toEqual({ result: false, reason: 'TYPE_MISMATCH' });
  });

});
