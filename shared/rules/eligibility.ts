/**
 * Eligibility rule evaluation (spec EligibilityRule; rules are ANDed). Pure: the caller resolves the
 * rule's value (contextual attribute first, then the stored profile) and passes the clock.
 *
 * One table (`FITTING_CONDITIONS`) decides which conditions apply to which data field type, and
 * one compiler (`compileCondition`) parses rhs values. InsertTreatment validation
 * (`conditionFitsType`, `validateRhs`) and evaluation (`evaluateRule`) both go through them, so
 * a rule accepted on insert never evaluates to TYPE_MISMATCH or BAD_RHS for a value of its type.
 */
import type { Condition, DataFieldType, DataMissingBehaviour, EligibilityRule } from './types.js';
import { containsAnyMatcher } from './substring-search.js';
import { TYPE_OF_KIND, type RuleValue } from './rule-values.js';
import { INTEGER_TEXT, parseBooleanText, parseNumber, parseTimestampText, tryParseJson } from './rule-text.js';

export type RuleReason = 'MATCHED' | 'NOT_MATCHED' | 'MISSING_ELIGIBLE' | 'MISSING_INELIGIBLE' | 'TYPE_MISMATCH' | 'BAD_RHS' | 'UNSPECIFIED_CONDITION';

export interface RuleOutcome {
  result: boolean;
  reason: RuleReason;
}

// ---------------------------------------------------------------------------------------------
// Which conditions fit which type

const ORDERING: Condition[] = ['LESS_THAN', 'LESS_THAN_OR_EQUALS', 'GREATER_THAN', 'GREATER_THAN_OR_EQUALS'];
const EQUALITY: Condition[] = ['EQUALS', 'NOT_EQUALS'];
const RELATIVE_TIME: Condition[] = ['IS_AFTER_CURRENT_TIMESTAMP_MINUS', 'IS_BEFORE_CURRENT_TIMESTAMP_MINUS'];
const MEMBERSHIP: Condition[] = ['CONTAINS', 'DOES_NOT_CONTAIN'];
const ONE_OF: Condition[] = ['ANY_OF', 'NOT_ANY_OF'];
const OVERLAP: Condition[] = ['CONTAINS_ANY_OF', 'DOES_NOT_CONTAIN_ANY_OF'];

const FITTING_CONDITIONS: Record<DataFieldType, ReadonlySet<Condition>> = {
  UNSPECIFIED_DATA_FIELD_TYPE: new Set(),
  // integers are epoch seconds for the relative-time conditions
  INTEGER: new Set([...ORDERING, ...EQUALITY, ...RELATIVE_TIME, ...ONE_OF]),
  DOUBLE: new Set([...ORDERING, ...EQUALITY, ...ONE_OF]),
  STRING: new Set([...ORDERING, ...EQUALITY, ...MEMBERSHIP, ...ONE_OF, ...OVERLAP]),
  BOOLEAN: new Set(EQUALITY),
  TIMESTAMP_SECONDS: new Set([...ORDERING, ...EQUALITY, ...RELATIVE_TIME]),
  INTEGER_LIST: new Set([...MEMBERSHIP, ...OVERLAP]),
  DOUBLE_LIST: new Set([...MEMBERSHIP, ...OVERLAP]),
  STRING_LIST: new Set([...MEMBERSHIP, ...OVERLAP]),
};

export function conditionFitsType(condition: Condition, type: DataFieldType): boolean {
  return FITTING_CONDITIONS[type]?.has(condition) ?? false;
}

/** The conditions that apply to a data field type, in the table's order (the console offers them so). */
export function conditionsFor(type: DataFieldType): Condition[] {
  return [...(FITTING_CONDITIONS[type] ?? [])];
}

/** Null when `rhsValue` is usable for the condition on that type, else why not (for a 400). */
export function validateRhs(condition: Condition, type: DataFieldType, rhsValue: string): string | null {
  if (!conditionFitsType(condition, type)) return `condition ${condition} does not apply to a ${type} data field`;
  const problem = rhsProblem(condition, type, rhsValue);
  return problem === null ? null : `rhsValue of ${condition} on a ${type} data field ${problem}`;
}

/** What is wrong with `rhsValue` for a condition that fits the type, e.g. "must be a number"; null when nothing is. */
export function rhsProblem(condition: Condition, type: DataFieldType, rhsValue: string): string | null {
  const compiled = compileCondition(condition, type, rhsValue);
  return compiled.ok ? null : compiled.error;
}

/**
 * Pass `fieldType` (the rule's data field type) whenever the value may not have been converted
 * to it, i.e. for contextual attributes: the rhs was validated for that type, so a value of
 * another kind is a TYPE_MISMATCH even where its own kind would compare (a `stringValue: "9"`
 * for an INTEGER field must not be compared with "18" as text).
 */
export function evaluateRule(
  rule: EligibilityRule,
  value: RuleValue | undefined,
  nowMs: number,
  fieldType?: DataFieldType,
  holder?: CompiledRuleHolder,
): RuleOutcome {
  if (rule.condition === 'UNSPECIFIED_CONDITION') return OUTCOME.UNSPECIFIED_CONDITION;
  if (value === undefined) return missingOutcome(rule.dataMissingBehaviour);
  const type = TYPE_OF_KIND[value.kind];
  if (fieldType !== undefined && fieldType !== type) return OUTCOME.TYPE_MISMATCH;
  const compiled = compiledFor(rule, type, holder);
  if (compiled === undefined) return OUTCOME.TYPE_MISMATCH;
  if (!compiled.ok) return OUTCOME.BAD_RHS;
  return compiled.matches(value, nowMs) ? OUTCOME.MATCHED : OUTCOME.NOT_MATCHED;
}

/** The outcomes are shared constants: evaluation allocates nothing per rule. */
const OUTCOME: Readonly<Record<RuleReason, RuleOutcome>> = Object.freeze({
  MATCHED: Object.freeze({ result: true, reason: 'MATCHED' }),
  NOT_MATCHED: Object.freeze({ result: false, reason: 'NOT_MATCHED' }),
  MISSING_ELIGIBLE: Object.freeze({ result: true, reason: 'MISSING_ELIGIBLE' }),
  MISSING_INELIGIBLE: Object.freeze({ result: false, reason: 'MISSING_INELIGIBLE' }),
  TYPE_MISMATCH: Object.freeze({ result: false, reason: 'TYPE_MISMATCH' }),
  BAD_RHS: Object.freeze({ result: false, reason: 'BAD_RHS' }),
  UNSPECIFIED_CONDITION: Object.freeze({ result: false, reason: 'UNSPECIFIED_CONDITION' }),
});

/**
 * Rules of a compiled catalogue are the same objects request after request: their parsed rhs is
 * kept beside them (and collected with them), so the hot path never re-parses `rhsValue`. Kept
 * here for callers that pass no `CompiledRuleHolder` (previews, tests); delivery passes one.
 */
const compiledRules = new WeakMap<EligibilityRule, CompiledByType>();

/**
 * Where a caller that keeps `rule` in an object of its own (a compiled catalogue's planned rule)
 * lets evaluation keep the rule's compiled condition: read back from there, with no WeakMap
 * lookup on the request path. Its `compiledRule` must start undefined and belong to that one rule.
 */
export interface CompiledRuleHolder {
  compiledRule: CompiledByType | undefined;
}

/** A rule's compiled condition per value type; null: the condition does not fit that type. */
export interface CompiledByType {
  /** the type of the last lookup and its answer: a rule is nearly always read with one type */
  lastType: DataFieldType | undefined;
  last: Compiled | null;
  byType: Map<DataFieldType, Compiled | null>;
}

function compiledFor(rule: EligibilityRule, type: DataFieldType, holder: CompiledRuleHolder | undefined): Compiled | undefined {
  let entry = holder !== undefined ? holder.compiledRule : compiledRules.get(rule);
  if (entry === undefined) {
    entry = { lastType: undefined, last: null, byType: new Map() };
    if (holder !== undefined) holder.compiledRule = entry;
    else compiledRules.set(rule, entry);
  }
  if (entry.lastType !== type) {
    let compiled = entry.byType.get(type);
    if (compiled === undefined) {
      compiled = conditionFitsType(rule.condition, type) ? compileCondition(rule.condition, type, rule.rhsValue) : null;
      entry.byType.set(type, compiled);
    }
    entry.lastType = type;
    entry.last = compiled;
  }
  return entry.last ?? undefined;
}

function missingOutcome(behaviour: DataMissingBehaviour | undefined): RuleOutcome {
  // unset and UNSPECIFIED both mean the spec's default, EVALUATE_TO_INELIGIBLE
  return behaviour === 'EVALUATE_TO_ELIGIBLE' ? OUTCOME.MISSING_ELIGIBLE : OUTCOME.MISSING_INELIGIBLE;
}

// ---------------------------------------------------------------------------------------------
// Scalar domains: how one rhs item is parsed and compared with a value (or list element)

interface Domain<V, R> {
  /** completes "rhsValue ... must be ..." */
  readonly expected: string;
  /** names a list of items: "numbers", "strings", ... */
  readonly items: string;
  parse(text: string): R | undefined;
  /** <0, 0, >0; NaN when the two are not ordered (booleans) */
  compare(value: V, rhs: R): number;
}
type AnyDomain = Domain<unknown, unknown>;

/** Integral rhs stays exact as bigint; `3.5` stays a double and is compared exactly too. */
function parseIntegerOrNumber(text: string): bigint | number | undefined {
  const trimmed = text.trim();
  if (INTEGER_TEXT.test(trimmed)) return BigInt(trimmed);
  const n = parseNumber(trimmed);
  if (n === undefined) return undefined;
  return Number.isInteger(n) ? BigInt(n) : n;
}

function compareBigint(a: bigint, b: bigint | number): number {
  if (typeof b === 'bigint') return a < b ? -1 : a > b ? 1 : 0;
  // b is not integral here: a is on one side of it, never equal
  return a <= BigInt(Math.floor(b)) ? -1 : 1;
}

function compareOrdered<T extends number | string>(a: T, b: T): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

const integerDomain: Domain<bigint, bigint | number> = {
  expected: 'must be a number',
  items: 'numbers',
  parse: parseIntegerOrNumber,
  compare: compareBigint,
};

const doubleDomain: Domain<number, number> = {
  expected: 'must be a number',
  items: 'numbers',
  parse: parseNumber,
  compare: compareOrdered,
};

// exact text: strings are compared as given (code-unit order for the ordering conditions)
const stringDomain: Domain<string, string> = {
  expected: 'must be a string',
  items: 'strings',
  parse: (text) => text,
  compare: compareOrdered,
};

const booleanDomain: Domain<boolean, boolean> = {
  expected: 'must be true or false',
  items: 'true/false values',
  parse: parseBooleanText,
  compare: (a, b) => (a === b ? 0 : NaN),
};

const timestampDomain: Domain<number, number> = {
  expected: 'must be an RFC 3339 timestamp or a number of epoch seconds',
  items: 'RFC 3339 timestamps or epoch seconds',
  parse: parseTimestampText,
  compare: compareOrdered,
};

const DOMAIN_OF_TYPE: Record<DataFieldType, AnyDomain | undefined> = {
  UNSPECIFIED_DATA_FIELD_TYPE: undefined,
  INTEGER: integerDomain as AnyDomain,
  DOUBLE: doubleDomain as AnyDomain,
  STRING: stringDomain as AnyDomain,
  BOOLEAN: booleanDomain as AnyDomain,
  TIMESTAMP_SECONDS: timestampDomain as AnyDomain,
  INTEGER_LIST: integerDomain as AnyDomain,
  DOUBLE_LIST: doubleDomain as AnyDomain,
  STRING_LIST: stringDomain as AnyDomain,
};

// ---------------------------------------------------------------------------------------------
// Compiling a condition + rhs into a matcher

type Matcher = (value: RuleValue, nowMs: number) => boolean;
type Compiled = { ok: true; matches: Matcher } | { ok: false; error: string };

const NEGATED = new Set<Condition>(['NOT_EQUALS', 'DOES_NOT_CONTAIN', 'NOT_ANY_OF', 'DOES_NOT_CONTAIN_ANY_OF']);

/** Assumes `conditionFitsType(condition, type)`; the value passed to the matcher has that type. */
function compileCondition(condition: Condition, type: DataFieldType, rhs: string): Compiled {
  const domain = DOMAIN_OF_TYPE[type];
  if (domain === undefined) return { ok: false, error: 'has no comparable type' };
  const compiled = compilePositive(condition, type, domain, rhs);
  if (!compiled.ok || !NEGATED.has(condition)) return compiled;
  const positive = compiled.matches;
  return { ok: true, matches: (value, nowMs) => !positive(value, nowMs) };
}

function compilePositive(condition: Condition, type: DataFieldType, domain: AnyDomain, rhs: string): Compiled {
  if (ORDERING.includes(condition) || EQUALITY.includes(condition)) return compileComparison(condition, domain, rhs);
  if (RELATIVE_TIME.includes(condition)) return compileRelativeTime(condition, rhs);
  if (MEMBERSHIP.includes(condition)) return compileMembership(type, domain, rhs);
  if (ONE_OF.includes(condition)) return compileOneOf(domain, rhs);
  if (OVERLAP.includes(condition)) return compileOverlap(type, domain, rhs);
  return { ok: false, error: 'has no condition' };
}

const COMPARISON_OPS: Partial<Record<Condition, (c: number) => boolean>> = {
  LESS_THAN: (c) => c < 0,
  LESS_THAN_OR_EQUALS: (c) => c <= 0,
  GREATER_THAN: (c) => c > 0,
  GREATER_THAN_OR_EQUALS: (c) => c >= 0,
  EQUALS: (c) => c === 0,
  NOT_EQUALS: (c) => c === 0, // negated by the caller
};

function compileComparison(condition: Condition, domain: AnyDomain, rhs: string): Compiled {
  const parsed = domain.parse(rhs);
  if (parsed === undefined) return { ok: false, error: domain.expected };
  const op = COMPARISON_OPS[condition]!;
  return { ok: true, matches: (value) => op(domain.compare(scalarOf(value), parsed)) };
}

function compileRelativeTime(condition: Condition, rhs: string): Compiled {
  const seconds = parseSeconds(rhs);
  if (seconds === undefined || seconds < 0) return { ok: false, error: 'must be a non-negative number of seconds' };
  const after = condition === 'IS_AFTER_CURRENT_TIMESTAMP_MINUS';
  return {
    ok: true,
    matches: (value, nowMs) => {
      const valueMs = value.kind === 'timestamp' ? value.valueMs : Number(scalarOf(value)) * 1000;
      const thresholdMs = nowMs - seconds * 1000;
      return after ? valueMs > thresholdMs : valueMs < thresholdMs;
    },
  };
}

/** A number of seconds; a trailing `s` (protobuf Duration JSON, `3600s`) is accepted too. */
function parseSeconds(rhs: string): number | undefined {
  const trimmed = rhs.trim();
  return parseNumber(trimmed.endsWith('s') ? trimmed.slice(0, -1) : trimmed);
}

function compileMembership(type: DataFieldType, domain: AnyDomain, rhs: string): Compiled {
  if (type === 'STRING') {
    const contains = containsAnyMatcher([rhs]);
    return { ok: true, matches: (value) => contains(scalarOf(value) as string) };
  }
  const parsed = domain.parse(rhs);
  if (parsed === undefined) return { ok: false, error: domain.expected };
  return { ok: true, matches: (value) => listOf(value).some((element) => domain.compare(element, parsed) === 0) };
}

function compileOneOf(domain: AnyDomain, rhs: string): Compiled {
  const items = parseRhsItems(domain, rhs);
  if (!items.ok) return items;
  const wanted = items.items;
  return { ok: true, matches: (value) => wanted.some((item) => domain.compare(scalarOf(value), item) === 0) };
}

function compileOverlap(type: DataFieldType, domain: AnyDomain, rhs: string): Compiled {
  const items = parseRhsItems(domain, rhs);
  if (!items.ok) return items;
  const wanted = items.items;
  if (type === 'STRING') {
    const containsAny = containsAnyMatcher(wanted as string[]);
    return { ok: true, matches: (value) => containsAny(scalarOf(value) as string) };
  }
  return {
    ok: true,
    matches: (value) => listOf(value).some((element) => wanted.some((item) => domain.compare(element, item) === 0)),
  };
}

function parseRhsItems(domain: AnyDomain, rhs: string): { ok: true; items: unknown[] } | { ok: false; error: string } {
  const texts = splitRhsList(rhs);
  const expected = `must be a non-empty list of ${domain.items} (a JSON array or comma-separated)`;
  if (texts === undefined || texts.length === 0) return { ok: false, error: expected };
  const items = texts.map((text) => domain.parse(text));
  return items.some((item) => item === undefined) ? { ok: false, error: expected } : { ok: true, items };
}

/**
 * The items of a list rhs: a JSON array (`["a","b"]`, `[1,2]`), else a comma-separated
 * list with items trimmed and empty items dropped. A JSON string (`"a,b"`) is one item, and a
 * bracketed list that is not JSON (`[a, b]`) is read without its brackets. Undefined when a JSON
 * array holds something other than strings, numbers and booleans.
 */
function splitRhsList(rhs: string): string[] | undefined {
  const trimmed = rhs.trim();
  if (trimmed.startsWith('[') || trimmed.startsWith('"')) {
    const parsed = tryParseJson(trimmed);
    if (Array.isArray(parsed)) return jsonArrayItems(parsed, trimmed);
    if (typeof parsed === 'string') return [parsed];
    if (trimmed.startsWith('[') && trimmed.endsWith(']')) return splitCommaList(trimmed.slice(1, -1));
  }
  return splitCommaList(trimmed);
}

function splitCommaList(text: string): string[] {
  return text
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
}

const JSON_NUMBER_TOKEN = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/g;

function jsonArrayItems(array: unknown[], source: string): string[] | undefined {
  // JSON.parse rounds integers beyond 2^53; an all-number array is re-read from its source text
  if (array.length > 0 && array.every((item) => typeof item === 'number')) {
    const tokens = source.match(JSON_NUMBER_TOKEN) ?? [];
    if (tokens.length === array.length) return tokens;
  }
  const items: string[] = [];
  for (const item of array) {
    if (typeof item === 'string') items.push(item);
    else if (typeof item === 'number' || typeof item === 'boolean') items.push(String(item));
    else return undefined;
  }
  return items;
}

function scalarOf(value: RuleValue): unknown {
  return value.kind === 'timestamp' ? value.valueMs : value.value;
}

function listOf(value: RuleValue): unknown[] {
  return Array.isArray((value as { value?: unknown }).value) ? (value as { value: unknown[] }).value : [];
}
