import type { TreatmentRecord, TreatmentVersionRecord } from './types.js';

/**
 * Status derivation. Status is never stored: it is computed at read time from
 * the publish time and the start/end timestamps, so time passing needs no background job.
 */

export type VersionStatus = 'LIVE' | 'DRAFT' | 'SCHEDULED' | 'ARCHIVED';
export type TreatmentStatus = VersionStatus | 'PAUSED';

/**
 * `treatment` is part of the signature so that callers need not change if a version's status
 * ever depends on its treatment; today superseding is modelled by the publish operation moving
 * the previous version's end to the publish time, so the version alone decides.
 */
export function versionStatus(v: TreatmentVersionRecord, _treatment: TreatmentRecord, nowMs: number): VersionStatus {
  if (v.publishTime === undefined) return 'DRAFT';
  // The end is checked before the start: a scheduled version that was superseded or deleted
  // has its end moved to a time that may precede its start, and must read ARCHIVED, not SCHEDULED.
  if (v.endTimestamp !== undefined && Date.parse(v.endTimestamp) <= nowMs) return 'ARCHIVED';
  if (nowMs < Date.parse(v.startTimestamp)) return 'SCHEDULED';
  return 'LIVE';
}

export function treatmentStatus(t: TreatmentRecord, nowMs: number): TreatmentStatus {
  if (t.paused) return 'PAUSED';
  const statuses = t.versions.map((v) => versionStatus(v, t, nowMs));
  if (statuses.includes('LIVE')) return 'LIVE';
  if (statuses.includes('SCHEDULED')) return 'SCHEDULED';
  if (t.versions.every((v) => v.publishTime === undefined)) return 'DRAFT';
  return 'ARCHIVED';
}

/**
 * The version delivery serves. Publishing archives the previous served version, so several LIVE
 * versions only occur in records written by hand or by older code; the latest publish wins then.
 */
export function servedVersion(t: TreatmentRecord, nowMs: number): TreatmentVersionRecord | undefined {
  if (t.paused) return undefined;
  let best: TreatmentVersionRecord | undefined;
  for (const v of t.versions) {
    if (versionStatus(v, t, nowMs) !== 'LIVE') continue;
    if (best === undefined || publishedLater(v, best)) best = v;
  }
  return best;
}

function publishedLater(a: TreatmentVersionRecord, b: TreatmentVersionRecord): boolean {
  const diff = Date.parse(a.publishTime!) - Date.parse(b.publishTime!);
  return diff !== 0 ? diff > 0 : a.versionNumber > b.versionNumber;
}
