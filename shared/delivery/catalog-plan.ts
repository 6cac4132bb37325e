/**
 * A project's catalogue compiled for delivery: everything GetTreatments needs, indexed so a
 * request does no parsing and no lookups by scanning. Pure: built from the stored records.
 *
 * Time is not baked in. Every published version keeps its [start, end) window and the served
 * version is picked at request time (`servedPlannedVersion`), so a plan compiled once stays
 * correct as versions start and end; only management changes require a new plan.
 */
import { compareIds } from '../platform/ids.js';
import { hasPlaceholders } from './content-render.js';
import { canonicalizeLanguageTag } from '../treatments/index.js';
import type { TreatmentStatus, VersionStatus } from '../treatments/index.js';
import type { ContentField, EligibilityRule, TreatmentRecord } from '../treatments/index.js';
import type { DataFieldRecord } from '../aggregation/index.js';
import type { DeliveryType, TreatmentType } from '../catalog/index.js';
import type { LanguagePick } from './assessment.js';
import type { CompiledRuleHolder } from '../rules/index.js';

/** A frequency cap ready for request time: the window as a day count. */
export interface PlannedCap {
  maxCount: number;
  windowName: string;
  days: number;
  countOf: 'VIEWED' | 'RETURNED';
}

export interface PlannedRule extends CompiledRuleHolder {
  rule: EligibilityRule;
  /** undefined when the data field is not (or no longer) in the project: the rule reads no value */
  field: DataFieldRecord | undefined;
}

export interface PlannedVersion {
  versionNumber: number;
  /** undefined: a draft, never served */
  publishMs: number | undefined;
  startMs: number;
  /** Infinity when the version never ends */
  endMs: number;
  removedSurfaces: ReadonlySet<string>;
  /** canonical language tag → that language's fields */
  contentByLanguage: ReadonlyMap<string, ContentField[]>;
  languages: string[];
  agnosticFields: ContentField[];
  rules: PlannedRule[];
  /** rules or placeholders: serving it needs the user's profile */
  needsProfile: boolean;
  /**
   * Requested language tag → the content picked for it (`pickLanguage`), filled as requests ask:
   * the plan is the same object request after request, so each tag is resolved once.
   */
  languagePicks: Map<string, LanguagePick | null>;
}

export interface PlannedType {
  treatmentTypeId: string;
  name: string;
  deliveryType: DeliveryType;
  surfaces: ReadonlySet<string>;
  /** false: the type matches every language */
  hasPerLanguageFields: boolean;
}

export interface PlannedTreatment {
  /** Its index in `CatalogPlan.treatments`: per-request state is kept in arrays by it, not in maps by id. */
  ordinal: number;
  treatmentId: string;
  name: string;
  paused: boolean;
  mutualExclusionGroupId: string | undefined;
  /** undefined only if the type record vanished; such a treatment is never served */
  type: PlannedType | undefined;
  /** every version; published ones by publish time, newest first (the first LIVE one is served) */
  versions: PlannedVersion[];
  /** the highest version number: what QA users get */
  newestVersion: PlannedVersion | undefined;
  /** Percentage × 100 (0–10,000); 0 = never held out, and no hash is computed */
  holdoutBasisPoints: number;
  isFallback: boolean;
  cap: PlannedCap | undefined;
}

export interface CatalogPlan {
  projectId: string;
  /** the registered surfaces (a request naming another one is 400) */
  surfaces: ReadonlySet<string>;
  /** every treatment, ascending treatmentId (for explanations) */
  treatments: readonly PlannedTreatment[];
  treatmentsById: ReadonlyMap<string, PlannedTreatment>;
  /**
   * Per surface, the treatments whose type lists it, neither paused nor unpublished, ascending
   * treatmentId. Version windows and removed surfaces are checked at request time. Fallbacks
   * are not in it: they are in `fallbacksBySurface`, under the same conditions.
   */
  bySurface: ReadonlyMap<string, readonly PlannedTreatment[]>;
  fallbacksBySurface: ReadonlyMap<string, readonly PlannedTreatment[]>;
  /** The project's global holdout, percentage × 100 */
  globalHoldoutBasisPoints: number;
  /** QA user id → the treatments (with a type) that list them, ascending treatmentId */
  qaByUser: ReadonlyMap<string, readonly PlannedTreatment[]>;
  /** data fields usable as contextual attribute keys (registered by InsertDataField) */
  dataFieldsByName: ReadonlyMap<string, DataFieldRecord>;
  dataFieldsById: ReadonlyMap<string, DataFieldRecord>;
}

export interface CatalogInput {
  projectId: string;
  treatments: TreatmentRecord[];
  types: TreatmentType[];
  surfaces: Iterable<string>;
  dataFields: DataFieldRecord[];
  /** the project's; absent = 0 */
  globalHoldoutPercentage?: number;
}

export function compileCatalogPlan(input: CatalogInput): CatalogPlan {
  const dataFieldsById = new Map(input.dataFields.map((f) => [f.dataFieldId, f]));
  const dataFieldsByName = new Map<string, DataFieldRecord>();
  for (const f of input.dataFields) if (f.name !== undefined) dataFieldsByName.set(f.name, f);
  const types = new Map(input.types.map((t) => [t.treatmentTypeId, planType(t)]));
  const treatments = [...input.treatments]
    .sort((a, b) => compareIds(a.treatmentId, b.treatmentId))
    .map((t, ordinal) => planTreatment(t, ordinal, types, dataFieldsById));
  const treatmentsById = new Map(treatments.map((t) => [t.treatmentId, t]));
  return {
    projectId: input.projectId,
    surfaces: new Set(input.surfaces),
    treatments,
    treatmentsById,
    bySurface: indexBySurface(treatments, false),
    fallbacksBySurface: indexBySurface(treatments, true),
    globalHoldoutBasisPoints: basisPoints(input.globalHoldoutPercentage),
    qaByUser: indexQaUsers(input.treatments, treatmentsById),
    dataFieldsByName,
    dataFieldsById,
  };
}

function planType(t: TreatmentType): PlannedType {
  return {
    treatmentTypeId: t.treatmentTypeId,
    name: t.treatmentTypeName,
    deliveryType: t.deliveryType,
    surfaces: new Set(t.surfaces),
    hasPerLanguageFields: t.contentFieldTypes.some((f) => f.isPerLanguage),
  };
}

function planTreatment(
  t: TreatmentRecord,
  ordinal: number,
  types: ReadonlyMap<string, PlannedType>,
  fields: ReadonlyMap<string, DataFieldRecord>,
): PlannedTreatment {
  const versions = t.versions.map((v): PlannedVersion => {
    const contentByLanguage = new Map<string, ContentField[]>();
    for (const entry of v.content.contentByLanguage) {
      const code = entry.languageCode.languageCode;
      contentByLanguage.set(canonicalizeLanguageTag(code) ?? code, entry.contentFields);
    }
    const agnosticFields = v.content.languageAgnosticContentFields;
    const rules = v.eligibilityRules.map((rule): PlannedRule => ({ rule, field: fields.get(rule.dataFieldId), compiledRule: undefined }));
    const allFields = [...agnosticFields, ...[...contentByLanguage.values()].flat()];
    return {
      versionNumber: v.versionNumber,
      publishMs: v.publishTime === undefined ? undefined : Date.parse(v.publishTime),
      startMs: Date.parse(v.startTimestamp),
      endMs: v.endTimestamp === undefined ? Infinity : Date.parse(v.endTimestamp),
      removedSurfaces: new Set(v.removedSurfaces),
      contentByLanguage,
      languages: [...contentByLanguage.keys()],
      agnosticFields,
      rules,
      needsProfile: rules.length > 0 || allFields.some((f) => hasPlaceholders(f.stringValue)),
      languagePicks: new Map(),
    };
  });
  return {
    ordinal,
    treatmentId: t.treatmentId,
    name: t.name,
    paused: t.paused,
    mutualExclusionGroupId: t.mutualExclusionGroupId,
    type: types.get(t.treatmentTypeId),
    newestVersion: versions.reduce<PlannedVersion | undefined>((a, b) => (a === undefined || b.versionNumber > a.versionNumber ? b : a), undefined),
    versions: versions.sort(servedFirst),
    holdoutBasisPoints: basisPoints(t.holdoutPercentage),
    isFallback: t.isFallback === true,
    cap: t.frequencyCap === undefined ? undefined : { ...t.frequencyCap, days: Number(/^LAST_(\d+)D$/.exec(t.frequencyCap.windowName)?.[1] ?? 1) },
  };
}

/** A stored percentage (validated: 0–100, two decimals) as an integer number of basis points. */
export function basisPoints(percentage: number | undefined): number {
  return percentage === undefined ? 0 : Math.round(percentage * 100);
}

function indexQaUsers(records: TreatmentRecord[], byId: ReadonlyMap<string, PlannedTreatment>): Map<string, PlannedTreatment[]> {
  const byUser = new Map<string, PlannedTreatment[]>();
  for (const r of records) {
    const t = byId.get(r.treatmentId)!;
    if (t.type === undefined || t.newestVersion === undefined) continue;
    for (const userId of new Set(r.qaUserIds ?? [])) {
      const list = byUser.get(userId) ?? [];
      list.push(t);
      byUser.set(userId, list);
    }
  }
  for (const list of byUser.values()) list.sort((a, b) => compareIds(a.treatmentId, b.treatmentId));
  return byUser;
}

/** Published before drafts; the latest publish first, the higher version number on a tie. */
function servedFirst(a: PlannedVersion, b: PlannedVersion): number {
  if (a.publishMs === undefined || b.publishMs === undefined) return a.publishMs === undefined ? (b.publishMs === undefined ? 0 : 1) : -1;
  return a.publishMs !== b.publishMs ? b.publishMs - a.publishMs : b.versionNumber - a.versionNumber;
}

/**
 * Pausing, resuming and publishing are management changes (a new plan), so a treatment that is
 * paused or was never published cannot be served by this plan and is left out of the per-surface
 * lists. Time-based exclusion is left to request time, so the plan never depends on its clock.
 */
function indexBySurface(treatments: PlannedTreatment[], fallbacks: boolean): Map<string, PlannedTreatment[]> {
  const bySurface = new Map<string, PlannedTreatment[]>();
  for (const t of treatments) {
    if (t.type === undefined || t.paused || t.isFallback !== fallbacks) continue;
    if (!t.versions.some((v) => v.publishMs !== undefined)) continue;
    for (const surface of t.type.surfaces) {
      const list = bySurface.get(surface) ?? [];
      list.push(t);
      bySurface.set(surface, list);
    }
  }
  return bySurface;
}

// ---------------------------------------------------------------------------------------------
// Status at request time: the same rules as treatment-status.ts, over the parsed times.

export function plannedVersionStatus(v: PlannedVersion, nowMs: number): VersionStatus {
  if (v.publishMs === undefined) return 'DRAFT';
  // end before start: a superseded or deleted scheduled version reads ARCHIVED, not SCHEDULED
  if (v.endMs <= nowMs) return 'ARCHIVED';
  if (nowMs < v.startMs) return 'SCHEDULED';
  return 'LIVE';
}

/** The version delivery serves now: the latest-published LIVE one; undefined when paused or none is LIVE. */
export function servedPlannedVersion(t: PlannedTreatment, nowMs: number): PlannedVersion | undefined {
  if (t.paused) return undefined;
  // a loop, not find(): delivery asks this of every candidate of every request
  for (const v of t.versions) if (plannedVersionStatus(v, nowMs) === 'LIVE') return v;
  return undefined;
}

export function plannedTreatmentStatus(t: PlannedTreatment, nowMs: number): TreatmentStatus {
  if (t.paused) return 'PAUSED';
  const statuses = t.versions.map((v) => plannedVersionStatus(v, nowMs));
  if (statuses.includes('LIVE')) return 'LIVE';
  if (statuses.includes('SCHEDULED')) return 'SCHEDULED';
  if (statuses.every((s) => s === 'DRAFT')) return 'DRAFT';
  return 'ARCHIVED';
}

/**
 * Archived or deleted, whatever a pause or a newer draft says: a version was published and none
 * is LIVE or SCHEDULED (they ended by time, or a deletion ended them). QA users get nothing of it.
 */
export function plannedTreatmentArchived(t: PlannedTreatment, nowMs: number): boolean {
  let published = false;
  for (const v of t.versions) {
    const status = plannedVersionStatus(v, nowMs);
    if (status === 'LIVE' || status === 'SCHEDULED') return false;
    published ||= status === 'ARCHIVED';
  }
  return published;
}

export { compareIds };
