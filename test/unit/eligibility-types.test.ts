import { describe, expect, it } from 'vitest';
import { conditionFitsType } from '../../shared/rules/eligibility.js';
import type { DataFieldType } from '../../shared/aggregation/index.js';
import { NOW_MS, HOUR_S, int, dbl, str, bool, ts, ints, dbls, strs, evaluate, type Case, check } from '../helpers/rule-values.js';

/** Each condition on each data type, the timestamp-minus conditions and lists. */
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
