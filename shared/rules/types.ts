/** The types rules are written in: data-field types, conditions, eligibility rules and the values events carry. */

export type DataFieldType =
  'UNSPECIFIED_DATA_FIELD_TYPE' | 'INTEGER' | 'DOUBLE' | 'STRING' | 'BOOLEAN' | 'TIMESTAMP_SECONDS' | 'INTEGER_LIST' | 'DOUBLE_LIST' | 'STRING_LIST';

export type Condition =
  | 'UNSPECIFIED_CONDITION'
  | 'LESS_THAN'
  | 'LESS_THAN_OR_EQUALS'
  | 'GREATER_THAN'
  | 'GREATER_THAN_OR_EQUALS'
  | 'EQUALS'
  | 'NOT_EQUALS'
  | 'IS_AFTER_CURRENT_TIMESTAMP_MINUS'
  | 'IS_BEFORE_CURRENT_TIMESTAMP_MINUS'
  | 'CONTAINS'
  | 'ANY_OF'
  | 'DOES_NOT_CONTAIN'
  | 'NOT_ANY_OF'
  | 'CONTAINS_ANY_OF'
  | 'DOES_NOT_CONTAIN_ANY_OF';

export type DataMissingBehaviour = 'ELIGIBILITY_RULE_DATA_MISSING_BEHAVIOUR_UNSPECIFIED' | 'EVALUATE_TO_ELIGIBLE' | 'EVALUATE_TO_INELIGIBLE';

export interface EligibilityRule {
  dataFieldId: string;
  condition: Condition;
  rhsValue: string;
  dataMissingBehaviour: DataMissingBehaviour;
}

/** A PropertyValue in its JSON form: exactly one member set. longValue is a decimal string. */
export type PropertyValue = { longValue: string } | { doubleValue: number } | { stringValue: string } | { booleanValue: boolean } | { timestampValue: string };

/**
 * The value slots of a contextual attribute (GetTreatments' `ContextualAttributeIn`, whose static
 * type is passed here): exactly one is set, which the request check enforces.
 */
export interface AttributeSlots {
  key: string;
  stringValue?: string;
  integerValue?: number | string;
  doubleValue?: number;
  boolValue?: boolean | number;
  booleanValue?: boolean | number;
  timestampValue?: string;
  timestampMicrosValue?: number | string;
}
