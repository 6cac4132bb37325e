import { expect } from 'vitest';
import { evaluateRule, type RuleOutcome } from '../../shared/rules/eligibility.js';
import { type RuleValue } from '../../shared/rules/rule-values.js';
import type { Condition, DataMissingBehaviour, EligibilityRule } from '../../shared/treatments/index.js';

/** Rule values and a rule evaluated at a fixed now, for the eligibility tests. */
export const NOW_MS = Date.parse('2024-06-15T12:00:00Z');
export const HOUR_S = 3600;

export const int = (value: bigint): RuleValue => ({ kind: 'integer', value });
export const dbl = (value: number): RuleValue => ({ kind: 'double', value });
export const str = (value: string): RuleValue => ({ kind: 'string', value });
export const bool = (value: boolean): RuleValue => ({ kind: 'boolean', value });
export const ts = (iso: string): RuleValue => ({ kind: 'timestamp', valueMs: Date.parse(iso) });
export const ints = (...value: bigint[]): RuleValue => ({ kind: 'integer_list', value });
export const dbls = (...value: number[]): RuleValue => ({ kind: 'double_list', value });
export const strs = (...value: string[]): RuleValue => ({ kind: 'string_list', value });

export function rule(condition: Condition, rhsValue: string, dataMissingBehaviour: DataMissingBehaviour = 'EVALUATE_TO_INELIGIBLE'): EligibilityRule {
  return { dataFieldId: '1', condition, rhsValue, dataMissingBehaviour };
}

export function evaluate(value: RuleValue | undefined, condition: Condition, rhs: string, nowMs = NOW_MS): RuleOutcome {
  return evaluateRule(rule(condition, rhs), value, nowMs);
}

export type Case = [value: RuleValue, condition: Condition, rhs: string, expected: boolean | RuleOutcome['reason']];

export function check([value, condition, rhs, expected]: Case): void {
  const outcome = evaluate(value, condition, rhs);
  if (typeof expected === 'boolean') {
    expect(outcome).toEqual({ result: expected, reason: expected ? 'MATCHED' : 'NOT_MATCHED' });
  } else {
    expect(outcome).toEqual({ result: expected === 'MATCHED' || expected === 'MISSING_ELIGIBLE', reason: expected });
  }
}
