// Shapes of the catalogue as the API returns them (the client's wire types, generated from the
// service's own schemas), and how the console names them.
import { conditionFitsType, conditionsFor, rhsProblem, type Condition, type DataFieldType } from '../../../shared/rules/index.js';
import type {
  GetAllDataFieldsResponse,
  GetAllSurfacesResponse,
  GetAllTreatmentTypesResponse,
  GetEventSchemasResponse,
  GetMutualExclusionGroupsResponse,
} from '../../../client/src/wire.generated.js';

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
  const aggText = agg
    ? agg[0]
        .replace(/Aggregation$/, '')
        .replace(/([A-Z])/g, ' $1')
        .toLowerCase() + (window ? ` ${window}` : '')
    : '';
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

const RULE_TYPES: DataFieldType[] = ['INTEGER', 'DOUBLE', 'STRING', 'BOOLEAN', 'TIMESTAMP_SECONDS', 'INTEGER_LIST', 'DOUBLE_LIST', 'STRING_LIST'];

/** The conditions each data field type allows (the service's own table, shared/rules). */
export const CONDITIONS_BY_TYPE: Record<string, string[]> = Object.fromEntries(RULE_TYPES.map((t) => [t, conditionsFor(t)]));

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

/** The items of a comma-separated input, trimmed, blanks dropped. */
export function splitCommaList(text: string): string[] {
  return text
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
}

/** The value checked as it is typed, by the service's own rule compiler (shared/rules): null when it would accept it, else why not. */
export function checkRhs(type: string, condition: string, rhs: string): string | null {
  if (!condition) return 'choose a condition';
  if (!conditionFitsType(condition as Condition, type as DataFieldType)) return `does not apply to a ${type} data field`;
  return rhsProblem(condition as Condition, type as DataFieldType, rhs);
}
