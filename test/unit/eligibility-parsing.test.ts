import { describe, expect, it } from 'vitest';
import { evaluateRule, validateRhs } from '../../shared/rules/eligibility.js';
import { ruleValueFromContextualAttribute, ruleValueFromJson, type RuleValue } from '../../shared/rules/rule-values.js';
import type { Condition } from '../../shared/treatments/index.js';
import type { DataFieldType } from '../../shared/aggregation/index.js';
import { NOW_MS, int, dbl, str, bool, ts, ints, dbls, strs, rule } from '../helpers/rule-values.js';

/** Right-hand sides and values read from JSON and contextual attributes. */
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
    [
      { key: 'k', timestampMicrosValue: '1718449200000500' },
      { kind: 'timestamp', valueMs: 1718449200000.5 },
    ],
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
