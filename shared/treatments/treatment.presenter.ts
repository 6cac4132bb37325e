import type { PublicTreatmentWire, PublishedVersionWire, TreatmentVersionWire, TreatmentWire } from './treatment.schemas.js';
import { treatmentStatus, versionStatus } from './treatment-status.js';
import type { ContentFieldType, MutualExclusionGroup, TreatmentType } from '../catalog/index.js';
import type { TreatmentRecord, TreatmentVersionRecord } from './types.js';

/**
 * Stored treatment record → wire Treatment (spec Treatment / TreatmentVersion). Pure: the caller
 * passes the treatment's type and group and the clock, since status is derived at read time.
 */
export interface TreatmentRefs {
  /** undefined only if the type record vanished; the treatment is still shown */
  type: TreatmentType | undefined;
  group: MutualExclusionGroup | undefined;
}

/** `versions` defaults to every version; GetAllTreatments passes the filtered ones. Newest first. */
export function presentTreatment(t: TreatmentRecord, refs: TreatmentRefs, nowMs: number, versions: TreatmentVersionRecord[] = t.versions): TreatmentWire {
  const ordered = [...versions].sort((a, b) => b.versionNumber - a.versionNumber);
  return {
    projectId: t.projectId,
    treatmentId: t.treatmentId,
    treatmentType: presentType(t, refs.type),
    name: t.name,
    description: t.description,
    status: treatmentStatus(t, nowMs),
    versions: ordered.map((v) => presentVersion(v, t, nowMs)),
    lastModifiedBy: t.lastModifiedBy,
    lastModifiedTimestamp: t.lastModifiedTimestamp,
    modificationSource: t.modificationSource,
    ...(t.externalTreatmentId !== undefined ? { externalTreatmentId: t.externalTreatmentId } : {}),
    ...(refs.group !== undefined ? { mutualExclusionGroup: { ...refs.group } } : {}),
    holdoutPercentage: t.holdoutPercentage ?? 0,
    qaUserIds: [...(t.qaUserIds ?? [])],
    isFallback: t.isFallback === true,
    ...(t.frequencyCap !== undefined ? { frequencyCap: { ...t.frequencyCap } } : {}),
  };
}

/**
 * The public form (GetTreatment with a DELIVERY key), built member by member from what an app
 * may show, never by removing members from the whole record: a member added to the record later
 * stays out until it is added here. Published versions only (LIVE or SCHEDULED), newest first.
 */
export function presentPublicTreatment(t: TreatmentRecord, type: TreatmentType | undefined, nowMs: number): PublicTreatmentWire {
  const versions: PublishedVersionWire[] = [];
  for (const v of [...t.versions].sort((a, b) => b.versionNumber - a.versionNumber)) {
    const status = versionStatus(v, t, nowMs);
    if (status !== 'LIVE' && status !== 'SCHEDULED') continue;
    versions.push({
      versionNumber: v.versionNumber,
      status,
      tags: v.tags.map((name) => ({ name })),
      startTimestamp: v.startTimestamp,
      ...(v.endTimestamp !== undefined ? { endTimestamp: v.endTimestamp } : {}),
      content: structuredClone(v.content),
      removedSurfaces: { surfaces: v.removedSurfaces.map((name) => ({ name })) },
      ...(v.targetActionEventId !== undefined ? { targetAction: { eventId: v.targetActionEventId } } : {}),
      publishTime: v.publishTime!,
    });
  }
  return {
    projectId: t.projectId,
    treatmentId: t.treatmentId,
    ...(t.externalTreatmentId !== undefined ? { externalTreatmentId: t.externalTreatmentId } : {}),
    treatmentType: presentType(t, type),
    name: t.name,
    status: treatmentStatus(t, nowMs),
    versions,
  };
}

function presentVersion(v: TreatmentVersionRecord, t: TreatmentRecord, nowMs: number): TreatmentVersionWire {
  return {
    versionNumber: v.versionNumber,
    status: versionStatus(v, t, nowMs),
    tags: v.tags.map((name) => ({ name })),
    startTimestamp: v.startTimestamp,
    ...(v.endTimestamp !== undefined ? { endTimestamp: v.endTimestamp } : {}),
    content: structuredClone(v.content),
    eligibilityRules: { rules: v.eligibilityRules.map((r) => ({ ...r })) },
    removedSurfaces: { surfaces: v.removedSurfaces.map((name) => ({ name })) },
    ...(v.targetActionEventId !== undefined ? { targetAction: { eventId: v.targetActionEventId } } : {}),
    ...(v.publishTime !== undefined ? { publishTime: v.publishTime } : {}),
    createTime: v.createTime,
    lastModifiedTimestamp: v.lastModifiedTimestamp,
  };
}

function presentType(t: TreatmentRecord, type: TreatmentType | undefined): TreatmentWire['treatmentType'] {
  if (type === undefined) {
    return {
      projectId: t.projectId,
      name: '',
      deliveryType: 'DELIVERY_TYPE_UNSPECIFIED',
      languageSpecificContentFieldTypes: [],
      languageAgnosticContentFieldTypes: [],
      surfaces: [],
    };
  }
  return {
    projectId: type.projectId,
    name: type.treatmentTypeName,
    deliveryType: type.deliveryType,
    languageSpecificContentFieldTypes: type.contentFieldTypes.filter((f) => f.isPerLanguage).map(deliveryFieldType),
    languageAgnosticContentFieldTypes: type.contentFieldTypes.filter((f) => !f.isPerLanguage).map(deliveryFieldType),
    surfaces: type.surfaces.map((name) => ({ name })),
  };
}

/** The delivery form's data type enum has no HTML; the stored type is shown as is rather than hidden. */
function deliveryFieldType(f: ContentFieldType): { fieldName: string; valueLengthLimit: number; dataType: string } {
  return { fieldName: f.fieldName, valueLengthLimit: f.maximumLengthAllowed, dataType: f.dataType };
}
