// Shapes of the catalogue as the API returns them, and how the console names them.

export interface Surface {
  name: string;
  description: string;
  createTime: string;
}

export interface ContentFieldType {
  fieldName: string;
  maximumLengthAllowed: number;
  isPerLanguage: boolean;
  dataType: string;
}

export interface TreatmentType {
  treatmentTypeId: string;
  treatmentTypeName: string;
  contentFieldTypes: ContentFieldType[];
  surfaces: { surfaceName: string }[];
  deliveryType: string;
  lastModifiedBy: string;
  lastModifiedTimestamp: string;
  modificationSource?: string;
}

export interface DataField {
  dataFieldId: string;
  name?: string;
  userProperty?: { dataType: string };
  dataFieldParams?: Record<string, Record<string, unknown>>;
  dataFieldType?: string;
}

export function fieldType(f: DataField): string {
  return f.dataFieldType ?? f.userProperty?.dataType ?? 'UNSPECIFIED_DATA_FIELD_TYPE';
}

/** "user property plan", "VIEWED on home · daily count LAST_7D", ... */
export function describeField(f: DataField): string {
  if (f.userProperty) return `user property ${f.name}`;
  const params = f.dataFieldParams ?? {};
  const [kind, p] = Object.entries(params)[0] ?? ['', {} as Record<string, unknown>];
  const agg = Object.entries(p).find(([k]) => k.endsWith('Aggregation'));
  const window = agg ? (agg[1] as { windowName?: string }).windowName : undefined;
  const aggText = agg ? agg[0].replace(/Aggregation$/, '').replace(/([A-Z])/g, ' $1').toLowerCase() + (window ? ` ${window}` : '') : '';
  let what: string;
  if (kind === 'treatmentDataFieldParams') {
    what = `${String(p.treatmentInteractionType ?? '')}${p.surfaceName ? ` on ${String(p.surfaceName)}` : ''}${p.treatmentId ? ` of treatment ${String(p.treatmentId)}` : ''}${p.isDistinctInteraction ? ' (distinct)' : ''}`;
  } else if (kind === 'eventDataFieldParams') {
    const props = p.propertyValueByPropertyName ? ` where ${JSON.stringify(p.propertyValueByPropertyName)}` : '';
    what = `event ${String(p.eventSchemaName ?? '')}${props}`;
  } else if (kind === 'userAttributeDataFieldParams') {
    what = `user property ${String(p.propertyName)}`;
  } else {
    what = kind || 'data field';
  }
  return aggText ? `${what} · ${aggText}` : what;
}

const ORDERING = ['LESS_THAN', 'LESS_THAN_OR_EQUALS', 'GREATER_THAN', 'GREATER_THAN_OR_EQUALS'];
const EQUALITY = ['EQUALS', 'NOT_EQUALS'];
const RELATIVE_TIME = ['IS_AFTER_CURRENT_TIMESTAMP_MINUS', 'IS_BEFORE_CURRENT_TIMESTAMP_MINUS'];
const MEMBERSHIP = ['CONTAINS', 'DOES_NOT_CONTAIN'];
const ONE_OF = ['ANY_OF', 'NOT_ANY_OF'];
const OVERLAP = ['CONTAINS_ANY_OF', 'DOES_NOT_CONTAIN_ANY_OF'];

/** The conditions each data field type allows (the service's own table, D27). */
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

function listItems(rhs: string): string[] | undefined {
  const t = rhs.trim();
  if (t.startsWith('[')) {
    try {
      const v = JSON.parse(t) as unknown;
      return Array.isArray(v) ? v.map(String) : undefined;
    } catch {
      return undefined;
    }
  }
  return t.split(',').map((s) => s.trim()).filter(Boolean);
}

/** The value checked as it is typed: null when the service would accept it, else why not. */
export function checkRhs(type: string, condition: string, rhs: string): string | null {
  if (!condition) return 'choose a condition';
  const base = type.replace(/_LIST$/, '');
  const scalarOk = (v: string): boolean => {
    if (base === 'INTEGER' || base === 'TIMESTAMP_SECONDS') return /^[+-]?\d+(\.\d+)?$/.test(v.trim());
    if (base === 'DOUBLE') return v.trim() !== '' && Number.isFinite(Number(v));
    if (base === 'BOOLEAN') return /^(true|false)$/i.test(v.trim());
    return true;
  };
  if (RELATIVE_TIME.includes(condition)) return /^\d+(\.\d+)?s?$/.test(rhs.trim()) ? null : 'must be a non-negative number of seconds, e.g. 86400';
  if (ONE_OF.includes(condition) || OVERLAP.includes(condition)) {
    const items = listItems(rhs);
    if (!items || items.length === 0) return 'must be a non-empty list: comma-separated or a JSON array';
    return items.every(scalarOk) ? null : `every item must be ${base === 'STRING' ? 'text' : base === 'INTEGER' ? 'a whole number' : base === 'BOOLEAN' ? 'true or false' : 'a number'}`;
  }
  if (base === 'STRING') return null;
  const expected: Record<string, string> = { BOOLEAN: 'true or false', INTEGER: 'a whole number', DOUBLE: 'a number', TIMESTAMP_SECONDS: 'a number of epoch seconds' };
  return scalarOk(rhs) ? null : `must be ${expected[base] ?? 'a value of the field type'}`;
}
