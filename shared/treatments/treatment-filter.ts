import { compareIds } from '../platform/ids.js';
import { versionStatus } from './treatment-status.js';
import type { TreatmentRecord, TreatmentVersionRecord } from './types.js';
import type { TreatmentType } from '../catalog/index.js';

/** GetAllTreatments selection (spec GetAllTreatments): ascending treatmentId; a treatment with no version left is omitted. */
export interface TreatmentListFilter {
  treatmentTypeName?: string;
  /** OR within the list; an empty list is the same as no surface filter */
  surfaceNames?: string[];
  /** OR within the list; an empty list is the same as no tag filter */
  tags?: string[];
  /** unset: every version; 0: LIVE versions only; N: LIVE versions plus the N most recently modified others */
  maxNonLiveVersions?: number;
}

export interface ListedTreatment {
  treatment: TreatmentRecord;
  /** newest first (versionNumber descending) */
  versions: TreatmentVersionRecord[];
}

/**
 * Treatments in ascending numeric treatmentId order. The version filters run before
 * maxNonLiveVersions, so N counts versions that match the filters. A treatment left with no
 * version (including one without a LIVE version when maxNonLiveVersions is 0) is omitted.
 */
export function filterTreatments(ts: TreatmentRecord[], typesById: Map<string, TreatmentType>, req: TreatmentListFilter, nowMs: number): ListedTreatment[] {
  const listed: ListedTreatment[] = [];
  for (const treatment of [...ts].sort((a, b) => compareIds(a.treatmentId, b.treatmentId))) {
    const type = typesById.get(treatment.treatmentTypeId);
    if (req.treatmentTypeName !== undefined && type?.treatmentTypeName !== req.treatmentTypeName) continue;
    const matching = treatment.versions.filter((v) => versionMatches(v, type, req));
    const versions = limitNonLive(matching, treatment, req.maxNonLiveVersions, nowMs);
    if (versions.length > 0) listed.push({ treatment, versions });
  }
  return listed;
}

function versionMatches(v: TreatmentVersionRecord, type: TreatmentType | undefined, req: TreatmentListFilter): boolean {
  const surfaces = req.surfaceNames ?? [];
  const tags = req.tags ?? [];
  const onSurface = surfaces.length === 0 || surfaces.some((s) => (type?.surfaces.includes(s) ?? false) && !v.removedSurfaces.includes(s));
  const tagged = tags.length === 0 || tags.some((tag) => v.tags.includes(tag));
  return onSurface && tagged;
}

function limitNonLive(versions: TreatmentVersionRecord[], t: TreatmentRecord, max: number | undefined, nowMs: number): TreatmentVersionRecord[] {
  if (max === undefined) return byNewestFirst(versions);
  const live = versions.filter((v) => versionStatus(v, t, nowMs) === 'LIVE');
  const recentOthers = versions
    .filter((v) => versionStatus(v, t, nowMs) !== 'LIVE')
    .sort((a, b) => Date.parse(b.lastModifiedTimestamp) - Date.parse(a.lastModifiedTimestamp) || b.versionNumber - a.versionNumber)
    .slice(0, Math.max(0, max));
  return byNewestFirst([...live, ...recentOthers]);
}

function byNewestFirst(versions: TreatmentVersionRecord[]): TreatmentVersionRecord[] {
  return [...versions].sort((a, b) => b.versionNumber - a.versionNumber);
}
