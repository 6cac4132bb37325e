// Shapes of the catalogue as the API returns them (the client's wire types, generated from the
// service's own schemas), and how the console names them.
import type { GetAllDataFieldsResponse, GetAllSurfacesResponse, GetAllTreatmentTypesResponse, GetEventSchemasResponse, GetMutualExclusionGroupsResponse } from '../../../client/src/wire.generated.js';

export type Surface = GetAllSurfacesResponse['surfaces'][number];
export type TreatmentType = GetAllTreatmentTypesResponse['treatmentTypes'][number];
export type ContentFieldType = TreatmentType['contentFieldTypes'][number];
export type EventSchema = GetEventSchemasResponse['eventSchemas'][number];
/** `backfillStatus`: how far the fill of an aggregation from history got; NOT_APPLICABLE for user properties */
export type DataField = GetAllDataFieldsResponse['dataFields'][number];
export type MutualExclusionGroup = GetMutualExclusionGroupsResponse['mutualExclusionGroups'][number];

export function fieldType(f: DataField): string {
  return f.dataFieldType ?? f.userProperty?.dataType ?? 'UNSPECIFIED_DATA_FIELD_TYPE';
}

/** "user property plan", "VIEWED on home · daily count LAST_7D", ... */
export function describeField(f: DataField): string {
  if (f.userProperty) return `user property ${f.name}`;
  const params = f.dataFieldParams ?? {};
  const { treatmentDataFieldParams: t, eventDataFieldParams: e, userAttributeDataFieldParams: u } = params;
  const p: Record<string, unknown> = t ?? e ?? u ?? {};
  const agg = Object.entries(p).find(([k]) => k.endsWith('Aggregation'));
  const window = agg ? (agg[1] as { windowName?: string }).windowName : undefined;
  const aggText = agg ? agg[0].replace(/Aggregation$/, '').replace(/([A-Z])/g, ' $1').toLowerCase() + (window ? ` ${window}` : '') : '';
  let what: string;
  if (t) {
    what = `${t.treatmentInteractionType}${t.surfaceName ? ` on ${t.surfaceName}` : ''}${t.treatmentId ? ` of treatment ${t.treatmentId}` : ''}${t.isDistinctInteraction ? ' (distinct)' : ''}`;
  } else if (e) {
    const props = e.propertyValueByPropertyName ? ` where ${JSON.stringify(e.propertyValueByPropertyName)}` : '';
    what = `event ${e.eventSchemaName}${props}`;
  } else if (u) {
    what = `user property ${u.propertyName}`;
  } else {
    what = Object.keys(params)[0] || 'data field';
  }
  return aggText ? `${what} · ${aggText}` : what;
}

const ORDERING = ['LESS_THAN', 'LESS_THAN_OR_EQUALS', 'GREATER_THAN', 'GREATER_THAN_OR_EQUALS'];
const EQUALITY = ['EQUALS', 'NOT_EQUALS'];
const RELATIVE_TIME = ['IS_AFTER_CURRENT_TIMESTAMP_MINUS', 'IS_BEFORE_CURRENT_TIMESTAMP_MINUS'];
const MEMBERSHIP = ['CONTAINS', 'DOES_NOT_CONTAIN'];
const ONE_OF = ['ANY_OF', 'NOT_ANY_OF'];
const OVERLAP = ['CONTAINS_ANY_OF', 'DOES_NOT_CONTAIN_ANY_OF'];

/** The conditions each data field type allows (the service's own table). */
export const CONDITIONS_BY_TYPE: Record<string, string[]> = {
  INTEGER: [...ORDERING, ...EQUALITY, ...RELATIVE_TIME, ...ONE_OF],
  DOUBLE: [...ORDERING, ...EQUALITY, ...ONE_OF],
  STRING: [...ORDERING, ...EQUALITY, ...MEMBERSHIP, ...ONE_OF, ...OVERLAP],
  BOOLEAN: EQUALITY,
  TIMESTAMP_SECONDS: [...ORDERING, ...EQUALITY, ...RELATIVE_TIME],
  INTEGER_LIST: [...MEMBERSHIP, ...OVERLAP],
  DOUBLE_LIST: [...MEMBERSHIP, ...OVERLAP],
  STRING_LIST: [...MEMBERSHIP, ...OVERLAP],
};

export const CONDITION_LABELS: Record<string, string> = {
  LESS_THAN: '<',
  LESS_THAN_OR_EQUALS: '≤',
  GREATER_THAN: '>',
  GREATER_THAN_OR_EQUALS: '≥',
  EQUALS: '=',
  NOT_EQUALS: '≠',
  IS_AFTER_CURRENT_TIMESTAMP_MINUS: 'is after now minus (seconds)',
  IS_BEFORE_CURRENT_TIMESTAMP_MINUS: 'is before now minus (seconds)',
  CONTAINS: 'contains',
  DOES_NOT_CONTAIN: 'does not contain',
  ANY_OF: 'is any of',
  NOT_ANY_OF: 'is none of',
  CONTAINS_ANY_OF: 'contains any of',
  DOES_NOT_CONTAIN_ANY_OF: 'contains none of',
};

// The value checks below mirror the service's (shared/delivery/eligibility.ts), which has the last
// word; test/unit/console-rule-check.test.ts keeps the two in agreement.
const NUMBER_TEXT = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

function isNumber(text: string): boolean {
  const t = text.trim();
  return NUMBER_TEXT.test(t) && Number.isFinite(Number(t));
}

function isTimestamp(text: string): boolean {
  if (isNumber(text)) return true;
  const m = RFC3339.exec(text.trim());
  if (!m) return false;
  const [, y, mo, d, h, mi, sec] = m.map(Number);
  const date = new Date(Date.UTC(y, mo - 1, d, h, mi, sec));
  return date.getUTCFullYear() === y && date.getUTCMonth() === mo - 1 && date.getUTCDate() === d && h < 24 && mi < 60 && sec < 61;
}

const SCALAR: Record<string, { ok: (text: string) => boolean; expected: string; items: string }> = {
  INTEGER: { ok: isNumber, expected: 'must be a number', items: 'numbers' },
  DOUBLE: { ok: isNumber, expected: 'must be a number', items: 'numbers' },
  STRING: { ok: () => true, expected: 'must be a string', items: 'strings' },
  BOOLEAN: { ok: (t) => /^(true|false)$/i.test(t.trim()), expected: 'must be true or false', items: 'true/false values' },
  TIMESTAMP_SECONDS: { ok: isTimestamp, expected: 'must be an RFC 3339 timestamp or a number of epoch seconds', items: 'RFC 3339 timestamps or epoch seconds' },
};

/** The items of a comma-separated input, trimmed, blanks dropped. */
export function splitCommaList(text: string): string[] {
  return text.split(',').map((item) => item.trim()).filter((item) => item !== '');
}

/** A list value: a JSON array, else comma-separated (a JSON string is one item). */
function listItems(rhs: string): string[] | undefined {
  const t = rhs.trim();
  if (t.startsWith('[') || t.startsWith('"')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(t);
    } catch {
      parsed = undefined;
    }
    if (Array.isArray(parsed)) return parsed.every((i) => ['string', 'number', 'boolean'].includes(typeof i)) ? parsed.map(String) : undefined;
    if (typeof parsed === 'string') return [parsed];
    if (t.startsWith('[') && t.endsWith(']')) return splitCommaList(t.slice(1, -1));
  }
  return splitCommaList(t);
}

/** The value checked as it is typed: null when the service would accept it, else why not. */
export function checkRhs(type: string, condition: string, rhs: string): string | null {
  if (!condition) return 'choose a condition';
  const scalar = SCALAR[type.replace(/_LIST$/, '')];
  if (!scalar) return 'this data field has no comparable type';
  if (RELATIVE_TIME.includes(condition)) {
    const t = rhs.trim();
    const n = t.endsWith('s') ? t.slice(0, -1) : t;
    return isNumber(n) && Number(n.trim()) >= 0 ? null : 'must be a non-negative number of seconds, e.g. 86400';
  }
  if (ONE_OF.includes(condition) || OVERLAP.includes(condition)) {
    const items = listItems(rhs);
    return items && items.length > 0 && items.every(scalar.ok) ? null : `must be a non-empty list of ${scalar.items} (comma-separated or a JSON array)`;
  }
  if (MEMBERSHIP.includes(condition) && type === 'STRING') return null;
  return scalar.ok(rhs) ? null : scalar.expected;
}
