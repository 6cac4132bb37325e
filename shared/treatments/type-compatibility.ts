import type { ErrorDetail } from '../platform/errors.js';
import type { TreatmentType } from '../catalog/index.js';
import { treatmentStatus, versionStatus } from './treatment-status.js';
import type { ContentField, TreatmentRecord } from './types.js';

/**
 * A treatment type change must not leave stored content invalid. Pure: the caller reads the
 * project's treatments and applies the change only when this returns no problem.
 *
 * - Content: every value in every version (drafts and archived versions included) of every
 *   non-archived treatment of the type must still fit: its field exists, sits where the field's
 *   `isPerLanguage` says, and is at most `maximumLengthAllowed` characters long.
 * - Surfaces: a surface may leave the type only when no non-archived version (LIVE, SCHEDULED,
 *   DRAFT) of a non-archived treatment of the type would be delivered on it, i.e. every such
 *   version lists it in `removedSurfaces`. Archived versions are never delivered again, so they
 *   do not hold a surface.
 *
 * Each problem is one detail whose `field` is the request path of the offending change
 * (`contentFieldTypes`, `contentFieldTypes[i].maximumLengthAllowed`, `contentFieldTypes[i].isPerLanguage`,
 * `surfaces` or `clearSurfaces`) and whose description names the treatment and the field.
 */
export function typeChangeConflicts(
  before: TreatmentType,
  after: TreatmentType,
  treatments: TreatmentRecord[],
  nowMs: number,
  surfacesField: 'surfaces' | 'clearSurfaces' = 'surfaces',
): ErrorDetail[] {
  const affected = treatments.filter((t) => t.treatmentTypeId === after.treatmentTypeId && treatmentStatus(t, nowMs) !== 'ARCHIVED');
  if (affected.length === 0) return [];
  const removedSurfaces = before.surfaces.filter((s) => !after.surfaces.includes(s));
  return affected.flatMap((t) => [...contentConflicts(t, after), ...surfaceConflicts(t, removedSurfaces, surfacesField, nowMs)]);
}

interface StoredValue {
  field: ContentField;
  perLanguage: boolean;
  versionNumber: number;
}

function storedValues(t: TreatmentRecord): StoredValue[] {
  return t.versions.flatMap((v) => [
    ...v.content.contentByLanguage.flatMap((e) => e.contentFields.map((field) => ({ field, perLanguage: true, versionNumber: v.versionNumber }))),
    ...v.content.languageAgnosticContentFields.map((field) => ({ field, perLanguage: false, versionNumber: v.versionNumber })),
  ]);
}

/** One detail per (treatment, field, kind of problem), listing the versions concerned. */
function contentConflicts(t: TreatmentRecord, after: TreatmentType): ErrorDetail[] {
  const found = new Map<string, { field: string; problem: (versions: string) => string; versions: Set<number> }>();
  const note = (key: string, field: string, problem: (versions: string) => string, versionNumber: number) => {
    const entry = found.get(key) ?? { field, problem, versions: new Set<number>() };
    entry.versions.add(versionNumber);
    found.set(key, entry);
  };
  const who = `treatment ${t.treatmentId} ("${t.name}")`;
  // The longest stored value per field decides the message, whichever version holds it.
  const longest = new Map<string, number>();
  for (const { field, perLanguage, versionNumber } of storedValues(t)) {
    const index = after.contentFieldTypes.findIndex((f) => f.fieldName === field.fieldName);
    const name = field.fieldName;
    if (index < 0) {
      note(`${name}:removed`, 'contentFieldTypes', (vs) => `content field "${name}" would be removed but ${who} stores a value for it (${vs})`, versionNumber);
      continue;
    }
    const type = after.contentFieldTypes[index];
    if (type.isPerLanguage !== perLanguage) {
      const where = perLanguage ? 'per-language' : 'language-agnostic';
      note(`${name}:placement`, `contentFieldTypes[${index}].isPerLanguage`, (vs) => `${who} stores "${name}" as a ${where} value (${vs})`, versionNumber);
    }
    const length = [...field.stringValue].length;
    if (length > type.maximumLengthAllowed) {
      longest.set(name, Math.max(longest.get(name) ?? 0, length));
      const max = type.maximumLengthAllowed;
      note(
        `${name}:length`,
        `contentFieldTypes[${index}].maximumLengthAllowed`,
        (vs) => `${who} stores a ${longest.get(name)}-character value in "${name}" (${vs}), longer than ${max}`,
        versionNumber,
      );
    }
  }
  return [...found.values()].map((e) => ({ field: e.field, description: e.problem(versionList(e.versions)) }));
}

function surfaceConflicts(t: TreatmentRecord, removed: string[], field: string, nowMs: number): ErrorDetail[] {
  if (removed.length === 0) return [];
  const open = t.versions.filter((v) => versionStatus(v, t, nowMs) !== 'ARCHIVED');
  return removed.flatMap((surface) => {
    const using = open.filter((v) => !v.removedSurfaces.includes(surface)).map((v) => v.versionNumber);
    if (using.length === 0) return [];
    return [
      {
        field,
        description: `surface "${surface}" would be removed but treatment ${t.treatmentId} ("${t.name}") is delivered on it (${versionList(new Set(using))}); list it in the treatment's removedSurfaces or delete the treatment first`,
      },
    ];
  });
}

function versionList(versions: Set<number>): string {
  const sorted = [...versions].sort((a, b) => a - b);
  return `${sorted.length === 1 ? 'version' : 'versions'} ${sorted.join(', ')}`;
}
