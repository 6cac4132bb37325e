/**
 * Rule values: a stored profile value or a GetTreatments contextual attribute read as the typed
 * value an eligibility rule compares (pure; the caller passes the field's type).
 */
import { parseRfc3339Exact } from '../platform/rfc3339.js';
import type { AttributeSlots, DataFieldType } from './types.js';
import { INTEGER_TEXT, parseBooleanText, parseNumber, parseTimestampText, tryParseJson } from './rule-text.js';

export type RuleValue =
  | { kind: 'integer'; value: bigint }
  | { kind: 'double'; value: number }
  | { kind: 'string'; value: string }
  | { kind: 'boolean'; value: boolean }
  | { kind: 'timestamp'; valueMs: number }
  | { kind: 'integer_list'; value: bigint[] }
  | { kind: 'double_list'; value: number[] }
  | { kind: 'string_list'; value: string[] };

/** The data field type each kind of value belongs to. */
export const TYPE_OF_KIND: Record<RuleValue['kind'], DataFieldType> = {
  integer: 'INTEGER',
  double: 'DOUBLE',
  string: 'STRING',
  boolean: 'BOOLEAN',
  timestamp: 'TIMESTAMP_SECONDS',
  integer_list: 'INTEGER_LIST',
  double_list: 'DOUBLE_LIST',
  string_list: 'STRING_LIST',
};

/**
 * A stored profile value as a RuleValue of the field's type, or undefined when it does not fit.
 * Profiles hold JSON: integers as decimal strings or numbers, timestamps as RFC 3339 strings or
 * epoch-seconds numbers, lists as arrays (or a string holding a JSON array). A PropertyValue
 * wrapper (`{longValue: "5"}`, ...) is unwrapped first.
 */
export function ruleValueFromJson(type: DataFieldType, raw: unknown): RuleValue | undefined {
  const value = unwrapPropertyValue(raw);
  if (value === null || value === undefined) return undefined;
  switch (type) {
    case 'INTEGER': {
      const n = toBigint(value);
      return n === undefined ? undefined : { kind: 'integer', value: n };
    }
    case 'DOUBLE': {
      const n = toDouble(value);
      return n === undefined ? undefined : { kind: 'double', value: n };
    }
    case 'STRING': {
      const s = toText(value);
      return s === undefined ? undefined : { kind: 'string', value: s };
    }
    case 'BOOLEAN': {
      const b = toBoolean(value);
      return b === undefined ? undefined : { kind: 'boolean', value: b };
    }
    case 'TIMESTAMP_SECONDS': {
      const ms = toTimestampMs(value);
      return ms === undefined ? undefined : { kind: 'timestamp', valueMs: ms };
    }
    case 'INTEGER_LIST': {
      const list = toList(value, toBigint);
      return list === undefined ? undefined : { kind: 'integer_list', value: list };
    }
    case 'DOUBLE_LIST': {
      const list = toList(value, toDouble);
      return list === undefined ? undefined : { kind: 'double_list', value: list };
    }
    case 'STRING_LIST': {
      const list = toList(value, toText);
      return list === undefined ? undefined : { kind: 'string_list', value: list };
    }
    default:
      return undefined;
  }
}

const PROPERTY_VALUE_KEYS = ['longValue', 'doubleValue', 'stringValue', 'booleanValue', 'timestampValue'];

function unwrapPropertyValue(raw: unknown): unknown {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return raw;
  const keys = Object.keys(raw);
  return keys.length === 1 && PROPERTY_VALUE_KEYS.includes(keys[0]) ? (raw as Record<string, unknown>)[keys[0]] : raw;
}

function toBigint(raw: unknown): bigint | undefined {
  if (typeof raw === 'bigint') return raw;
  if (typeof raw === 'number') return Number.isInteger(raw) ? BigInt(raw) : undefined;
  if (typeof raw === 'string' && INTEGER_TEXT.test(raw.trim())) return BigInt(raw.trim());
  return undefined;
}

function toDouble(raw: unknown): number | undefined {
  if (typeof raw === 'number') return Number.isFinite(raw) ? raw : undefined;
  if (typeof raw === 'bigint') return Number(raw);
  if (typeof raw === 'string') return parseNumber(raw);
  return undefined;
}

/** Numbers and booleans read as text: an unregistered property defaults to STRING. */
function toText(raw: unknown): string | undefined {
  if (typeof raw === 'string') return raw;
  if (typeof raw === 'number' || typeof raw === 'boolean' || typeof raw === 'bigint') return String(raw);
  return undefined;
}

/** Clients send booleans as 0/1 too. */
function toBoolean(raw: unknown): boolean | undefined {
  if (typeof raw === 'boolean') return raw;
  if (raw === 0 || raw === 1) return raw === 1;
  if (typeof raw === 'string') return parseBooleanText(raw);
  return undefined;
}

function toTimestampMs(raw: unknown): number | undefined {
  if (typeof raw === 'number') return Number.isFinite(raw) ? raw * 1000 : undefined;
  if (typeof raw === 'bigint') return Number(raw) * 1000;
  if (typeof raw === 'string') return parseTimestampText(raw);
  return undefined;
}

function toList<T>(raw: unknown, convert: (item: unknown) => T | undefined): T[] | undefined {
  const array = typeof raw === 'string' && raw.trim().startsWith('[') ? tryParseJson(raw) : raw;
  if (!Array.isArray(array)) return undefined;
  const items = array.map(convert);
  return items.some((item) => item === undefined) ? undefined : (items as T[]);
}

/**
 * The RuleValue of a contextual attribute. With the field's type known, a value sent in
 * another slot is coerced when it reads naturally as that type (`integerValue` for a
 * TIMESTAMP_SECONDS field = epoch seconds, `stringValue: "42"` for an INTEGER field); otherwise
 * the attribute's own kind is returned, and `evaluateRule(..., fieldType)` reports TYPE_MISMATCH.
 */
export function ruleValueFromContextualAttribute(attr: AttributeSlots, fieldType?: DataFieldType): RuleValue | undefined {
  const natural = naturalRuleValue(attr);
  if (natural === undefined || fieldType === undefined || TYPE_OF_KIND[natural.kind] === fieldType) return natural;
  // timestamps do not read as anything else without a guess about units
  if (natural.kind === 'timestamp') return natural;
  return ruleValueFromJson(fieldType, attributeRaw(attr)) ?? natural;
}

function attributeRaw(attr: AttributeSlots): unknown {
  return attr.stringValue ?? attr.integerValue ?? attr.doubleValue ?? attr.boolValue ?? attr.booleanValue;
}

function naturalRuleValue(attr: AttributeSlots): RuleValue | undefined {
  if (attr.stringValue !== undefined) return { kind: 'string', value: attr.stringValue };
  if (attr.integerValue !== undefined) {
    const n = toBigint(attr.integerValue);
    if (n !== undefined) return { kind: 'integer', value: n };
    const d = toDouble(attr.integerValue);
    return d === undefined ? undefined : { kind: 'double', value: d };
  }
  if (attr.doubleValue !== undefined) {
    const d = toDouble(attr.doubleValue);
    return d === undefined ? undefined : { kind: 'double', value: d };
  }
  const bool = attr.boolValue ?? attr.booleanValue;
  if (bool !== undefined) {
    // a bool slot sent as a number: any non-zero number is true
    return typeof bool === 'number' ? { kind: 'boolean', value: bool !== 0 } : { kind: 'boolean', value: bool === true };
  }
  if (attr.timestampValue !== undefined) {
    const ms = parseRfc3339Exact(attr.timestampValue);
    return ms === undefined ? undefined : { kind: 'timestamp', valueMs: ms };
  }
  if (attr.timestampMicrosValue !== undefined) return microsToTimestamp(attr.timestampMicrosValue);
  return undefined;
}

function microsToTimestamp(micros: number | string): RuleValue | undefined {
  const exact = toBigint(micros);
  if (exact === undefined) return undefined;
  // split before converting so large microsecond counts keep their sub-millisecond part
  return { kind: 'timestamp', valueMs: Number(exact / 1000n) + Number(exact % 1000n) / 1000 };
}
