import type { ErrorDetail } from '../platform/errors.js';
import type { Condition, Content, ContentField, EligibilityRule } from './types.js';
import type { DataFieldType } from '../aggregation/index.js';
import type { TreatmentType } from '../catalog/index.js';

/**
 * Validation of a treatment version's content, rules and removed surfaces against its type and
 * project. Functions collect every problem rather than stopping at the first, so
 * one 400 INVALID_ARGUMENT names them all; `field` is the JSON path in the request body.
 */

export type Problem = ErrorDetail;

/** Decides whether a condition can be applied to a data field of the given type. */
export type ConditionFitCheck = (condition: Condition, type: DataFieldType) => boolean;

export function validateContent(content: Content, type: TreatmentType): { content: Content; problems: Problem[] } {
  const problems: Problem[] = [];
  const seenLanguages = new Map<string, number>();
  const contentByLanguage = content.contentByLanguage.map((entry, i) => {
    const path = `content.contentByLanguage[${i}]`;
    const languageCode = canonicalLanguage(entry.languageCode.languageCode);
    if (languageCode === undefined) {
      problems.push({
        field: `${path}.languageCode.languageCode`,
        description: `"${entry.languageCode.languageCode}" is not a well-formed BCP 47 language tag`,
      });
    } else if (seenLanguages.has(languageCode)) {
      problems.push({
        field: `${path}.languageCode.languageCode`,
        description: `language ${languageCode} is also given at content.contentByLanguage[${seenLanguages.get(languageCode)}]`,
      });
    } else {
      seenLanguages.set(languageCode, i);
    }
    problems.push(...fieldProblems(entry.contentFields, `${path}.contentFields`, type, true));
    return {
      languageCode: { languageCode: languageCode ?? entry.languageCode.languageCode },
      contentFields: entry.contentFields.map((f) => ({ ...f })),
    };
  });
  problems.push(...fieldProblems(content.languageAgnosticContentFields, 'content.languageAgnosticContentFields', type, false));
  const languageAgnosticContentFields = content.languageAgnosticContentFields.map((f) => ({ ...f }));
  return { content: { contentByLanguage, languageAgnosticContentFields }, problems };
}

export function validateRules(rules: EligibilityRule[], fieldsById: Map<string, DataFieldType>, fitCheck: ConditionFitCheck): Problem[] {
  const problems: Problem[] = [];
  rules.forEach((rule, i) => {
    const path = `eligibilityRules.rules[${i}]`;
    const fieldType = fieldsById.get(rule.dataFieldId);
    if (fieldType === undefined) {
      problems.push({ field: `${path}.dataFieldId`, description: `data field ${rule.dataFieldId} does not exist in the project` });
    }
    if (rule.condition === 'UNSPECIFIED_CONDITION') {
      problems.push({ field: `${path}.condition`, description: 'a condition is required' });
    } else if (fieldType !== undefined && !fitCheck(rule.condition, fieldType)) {
      problems.push({
        field: `${path}.condition`,
        description: `condition ${rule.condition} cannot be applied to a data field of type ${fieldType}`,
      });
    }
  });
  return problems;
}

export function validateRemovedSurfaces(names: string[], type: TreatmentType): Problem[] {
  return names.flatMap((name, i) =>
    type.surfaces.includes(name)
      ? []
      : [
          {
            field: `removedSurfaces.surfaces[${i}].name`,
            description: `"${name}" is not a surface of treatment type ${type.treatmentTypeName}`,
          },
        ],
  );
}

/** The canonical form of a BCP 47 tag (`en-us` → `en-US`), or undefined when it is malformed. */
function canonicalLanguage(tag: string): string | undefined {
  try {
    return Intl.getCanonicalLocales(tag)[0];
  } catch {
    return undefined;
  }
}

function fieldProblems(fields: ContentField[], path: string, type: TreatmentType, perLanguage: boolean): Problem[] {
  const problems: Problem[] = [];
  const seen = new Map<string, number>();
  fields.forEach((field, j) => {
    const at = `${path}[${j}]`;
    const fieldType = type.contentFieldTypes.find((ft) => ft.fieldName === field.fieldName);
    if (fieldType === undefined) {
      problems.push({
        field: `${at}.fieldName`,
        description: `"${field.fieldName}" is not a content field of treatment type ${type.treatmentTypeName}`,
      });
      return;
    }
    if (fieldType.isPerLanguage !== perLanguage) {
      problems.push({ field: `${at}.fieldName`, description: misplacedField(field.fieldName, fieldType.isPerLanguage) });
    }
    if (seen.has(field.fieldName)) {
      problems.push({ field: `${at}.fieldName`, description: `"${field.fieldName}" is also given at ${path}[${seen.get(field.fieldName)}]` });
    } else {
      seen.set(field.fieldName, j);
    }
    // Length is in characters as users see them in most UIs: code points, not UTF-16 units.
    const length = [...field.stringValue].length;
    if (length > fieldType.maximumLengthAllowed) {
      problems.push({
        field: `${at}.stringValue`,
        description: `is ${length} characters long; "${field.fieldName}" allows at most ${fieldType.maximumLengthAllowed}`,
      });
    }
  });
  return problems;
}

function misplacedField(fieldName: string, isPerLanguage: boolean): string {
  return isPerLanguage
    ? `"${fieldName}" is a per-language field; give it inside content.contentByLanguage`
    : `"${fieldName}" is a language-agnostic field; give it in content.languageAgnosticContentFields`;
}
