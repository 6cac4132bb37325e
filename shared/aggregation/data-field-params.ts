import { int64String } from '../platform/int64.js';
import { canonicalRfc3339 } from '../platform/rfc3339.js';
import { invalidField } from '../platform/errors.js';
import type { DataFieldParams, DataFieldType } from './types.js';
import type { PropertyValue, TreatmentInteractionType } from '../ingestion/index.js';

/**
 * GetDataFields params (spec DataFieldParams): validation, the canonical form
 * that makes resolution idempotent, and the result type of each aggregation. Pure: no I/O.
 */

/** Spec limit for data field names; also applied to user-attribute property names (they register as data fields). */
export const DATA_FIELD_NAME_PATTERN = '^[a-z](?:[a-z0-9_]*[a-z0-9])?$';
export const DATA_FIELD_NAME_MAX = 256;
const DATA_FIELD_NAME_RE = new RegExp(DATA_FIELD_NAME_PATTERN);

export const MAX_WINDOW_DAYS = 365;

export const INTERACTION_TYPES: readonly TreatmentInteractionType[] = [
  'TREATMENT_INTERACTION_TYPE_UNSPECIFIED',
  'SENT',
  'VIEWED',
  'CLICKED',
  'SNOOZED',
  'DISMISSED',
  'CTA_COMPLETED',
  'SWIPE',
];

export const AGGREGATION_KEYS = [
  'dailyCountAggregation',
  'firstTimestampAggregation',
  'latestTimestampAggregation',
  'daysSinceFirstTimestampAggregation',
  'daysSinceLastTimestampAggregation',
] as const;
export type AggregationKey = (typeof AGGREGATION_KEYS)[number];

/** What a client sends (camelCase, after schema validation): int64s may be numbers or strings. */
export interface PropertyValueInput {
  longValue?: number | string;
  doubleValue?: number;
  stringValue?: string;
  booleanValue?: boolean;
  timestampValue?: string;
}

export interface AggregationInput {
  dailyCountAggregation?: { windowName: string };
  firstTimestampAggregation?: object;
  latestTimestampAggregation?: object;
  daysSinceFirstTimestampAggregation?: object;
  daysSinceLastTimestampAggregation?: object;
}

export interface DataFieldParamsInput {
  userAttributeDataFieldParams?: { propertyName: string };
  treatmentDataFieldParams?: AggregationInput & {
    treatmentInteractionType: TreatmentInteractionType;
    treatmentId?: number | string;
    surfaceId?: string;
    surfaceName?: string;
    isDistinctInteraction?: boolean;
  };
  eventDataFieldParams?: AggregationInput & {
    eventSchemaName: string;
    propertyValueByPropertyName?: Record<string, PropertyValueInput>;
  };
}

export type ParamsKind = 'userAttribute' | 'treatment' | 'event';

export interface NormalizedParams {
  kind: ParamsKind;
  /** the input echoed back, with int64 values as decimal strings */
  echo: DataFieldParams;
  /** defaults dropped, int64s and timestamps normalised: what is stored */
  canonical: DataFieldParams;
  /** stable string of `canonical`: equal params, however written, give equal keys */
  key: string;
}

const MEMBERS = ['userAttributeDataFieldParams', 'treatmentDataFieldParams', 'eventDataFieldParams'] as const;

/** `LAST_<n>D`, 1 ≤ n ≤ 365, no leading zeros (so each window has one spelling). */
export function parseWindowDays(windowName: string, field = 'windowName'): number {
  const m = /^LAST_([1-9][0-9]{0,2})D$/.exec(windowName);
  const n = m ? Number(m[1]) : 0;
  if (n < 1 || n > MAX_WINDOW_DAYS)
    throw invalidField(field, `windowName must be LAST_<n>D with n from 1 to ${MAX_WINDOW_DAYS} (e.g. LAST_7D), got "${windowName}"`);
  return n;
}

export function isValidDataFieldName(name: string): boolean {
  return name.length <= DATA_FIELD_NAME_MAX && DATA_FIELD_NAME_RE.test(name);
}

/** JSON with object keys sorted at every level. */
export function stableStringify(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableStringify(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * RFC 3339 → UTC `...Z` keeping every fractional digit given (trailing zeros dropped), so two
 * spellings of one instant compare equal without losing sub-millisecond precision.
 */
export function canonicalTimestamp(field: string, value: string): string {
  const canonical = canonicalRfc3339(value);
  if (canonical === undefined) throw invalidField(field, 'not a valid RFC 3339 timestamp with an offset');
  return canonical;
}

function canonicalPropertyValue(field: string, v: PropertyValueInput): PropertyValue {
  const set = Object.keys(v).filter((k) => (v as Record<string, unknown>)[k] !== undefined);
  if (set.length !== 1) throw invalidField(field, 'exactly one of longValue, doubleValue, stringValue, booleanValue, timestampValue must be set');
  if (v.longValue !== undefined) return { longValue: int64String(`${field}.longValue`, v.longValue) };
  if (v.doubleValue !== undefined) {
    if (typeof v.doubleValue !== 'number' || !Number.isFinite(v.doubleValue)) throw invalidField(`${field}.doubleValue`, 'expected a finite number');
    return { doubleValue: v.doubleValue };
  }
  if (v.stringValue !== undefined) return { stringValue: v.stringValue };
  if (v.booleanValue !== undefined) return { booleanValue: v.booleanValue };
  return { timestampValue: canonicalTimestamp(`${field}.timestampValue`, v.timestampValue as string) };
}

/** Exactly one aggregation; returns it in canonical form. */
function canonicalAggregation(path: string, input: AggregationInput): Record<string, unknown> {
  const set = AGGREGATION_KEYS.filter((k) => input[k] !== undefined);
  if (set.length !== 1) {
    throw invalidField(path, `exactly one aggregation (${AGGREGATION_KEYS.join(', ')}) must be set, got ${set.length === 0 ? 'none' : set.join(' and ')}`);
  }
  const key = set[0];
  if (key === 'dailyCountAggregation') {
    const windowName = input.dailyCountAggregation?.windowName;
    if (typeof windowName !== 'string') throw invalidField(`${path}.dailyCountAggregation.windowName`, 'required field is missing');
    parseWindowDays(windowName, `${path}.dailyCountAggregation.windowName`);
    return { dailyCountAggregation: { windowName } };
  }
  return { [key]: {} };
}

function normalizeUserAttribute(path: string, p: NonNullable<DataFieldParamsInput['userAttributeDataFieldParams']>): DataFieldParams {
  const field = `${path}.propertyName`;
  if (typeof p.propertyName !== 'string' || !isValidDataFieldName(p.propertyName)) {
    throw invalidField(field, `must match ${DATA_FIELD_NAME_PATTERN} and be at most ${DATA_FIELD_NAME_MAX} characters (it names a data field)`);
  }
  return { userAttributeDataFieldParams: { propertyName: p.propertyName } };
}

function normalizeTreatment(path: string, p: NonNullable<DataFieldParamsInput['treatmentDataFieldParams']>): DataFieldParams {
  if (!INTERACTION_TYPES.includes(p.treatmentInteractionType))
    throw invalidField(`${path}.treatmentInteractionType`, `must be one of ${INTERACTION_TYPES.join(', ')}`);
  const scopes = (['treatmentId', 'surfaceId', 'surfaceName'] as const).filter((k) => p[k] !== undefined);
  if (scopes.length > 1) throw invalidField(path, `at most one of treatmentId, surfaceId, surfaceName may be set, got ${scopes.join(' and ')}`);
  const out: Record<string, unknown> = { treatmentInteractionType: p.treatmentInteractionType, ...canonicalAggregation(path, p) };
  if (p.treatmentId !== undefined) out.treatmentId = int64String(`${path}.treatmentId`, p.treatmentId);
  if (p.surfaceId !== undefined) out.surfaceId = p.surfaceId;
  if (p.surfaceName !== undefined) out.surfaceName = p.surfaceName;
  // false and unset mean the same (proto3 default), so only true is part of the identity.
  if (p.isDistinctInteraction === true) out.isDistinctInteraction = true;
  return { treatmentDataFieldParams: out } as DataFieldParams;
}

function normalizeEvent(path: string, p: NonNullable<DataFieldParamsInput['eventDataFieldParams']>): DataFieldParams {
  if (typeof p.eventSchemaName !== 'string' || p.eventSchemaName === '') throw invalidField(`${path}.eventSchemaName`, 'must be a non-empty string');
  const out: Record<string, unknown> = { eventSchemaName: p.eventSchemaName, ...canonicalAggregation(path, p) };
  const props = Object.entries(p.propertyValueByPropertyName ?? {});
  // An empty filter matches every event, the same as no filter.
  if (props.length > 0) {
    out.propertyValueByPropertyName = Object.fromEntries(
      props.map(([name, v]) => [name, canonicalPropertyValue(`${path}.propertyValueByPropertyName.${name}`, v)]),
    );
  }
  return { eventDataFieldParams: out } as DataFieldParams;
}

/** The input as given, except that int64 values are decimal strings. */
function echoOf(input: DataFieldParamsInput): DataFieldParams {
  const echo = structuredClone(input) as DataFieldParamsInput;
  const t = echo.treatmentDataFieldParams;
  if (t?.treatmentId !== undefined) t.treatmentId = String(BigInt(t.treatmentId));
  for (const v of Object.values(echo.eventDataFieldParams?.propertyValueByPropertyName ?? {})) {
    if (v.longValue !== undefined) v.longValue = String(BigInt(v.longValue));
  }
  return echo as DataFieldParams;
}

/**
 * Validates one params entry (`path` is its JSON path, e.g. `dataFieldParams[2]`) and returns its
 * echo, canonical form and idempotency key. Throws 400 INVALID_ARGUMENT naming the field.
 */
export function normalizeDataFieldParams(input: DataFieldParamsInput, path: string): NormalizedParams {
  const set = MEMBERS.filter((m) => input[m] !== undefined);
  if (set.length !== 1) throw invalidField(path, `exactly one of ${MEMBERS.join(', ')} must be set, got ${set.length === 0 ? 'none' : set.join(' and ')}`);
  let kind: ParamsKind;
  let canonical: DataFieldParams;
  if (input.userAttributeDataFieldParams) {
    kind = 'userAttribute';
    canonical = normalizeUserAttribute(`${path}.userAttributeDataFieldParams`, input.userAttributeDataFieldParams);
  } else if (input.treatmentDataFieldParams) {
    kind = 'treatment';
    canonical = normalizeTreatment(`${path}.treatmentDataFieldParams`, input.treatmentDataFieldParams);
  } else {
    kind = 'event';
    canonical = normalizeEvent(`${path}.eventDataFieldParams`, input.eventDataFieldParams as NonNullable<DataFieldParamsInput['eventDataFieldParams']>);
  }
  return { kind, echo: echoOf(input), canonical, key: stableStringify(canonical) };
}

export interface AggregationSpec {
  key: AggregationKey;
  /** set for dailyCountAggregation */
  windowDays?: number;
}

/** The aggregation of a treatment or event params entry; undefined for a user attribute. */
export function aggregationOf(params: DataFieldParams): AggregationSpec | undefined {
  const body =
    'treatmentDataFieldParams' in params ? params.treatmentDataFieldParams : 'eventDataFieldParams' in params ? params.eventDataFieldParams : undefined;
  if (!body) return undefined;
  const key = AGGREGATION_KEYS.find((k) => k in body);
  if (!key) return undefined;
  if (key === 'dailyCountAggregation') {
    const { windowName } = (body as { dailyCountAggregation: { windowName: string } }).dailyCountAggregation;
    return { key, windowDays: parseWindowDays(windowName) };
  }
  return { key };
}

/** The value type an aggregation produces. */
export function aggregationResultType(key: AggregationKey): DataFieldType {
  return key === 'firstTimestampAggregation' || key === 'latestTimestampAggregation' ? 'TIMESTAMP_SECONDS' : 'INTEGER';
}
