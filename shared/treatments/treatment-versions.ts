import { FailedPreconditionError } from '../platform/errors.js';
import { treatmentStatus, versionStatus } from './treatment-status.js';
import type { Content, EligibilityRule, FrequencyCap, TreatmentRecord, TreatmentVersionRecord } from './types.js';

/**
 * Treatment state transitions. Every function returns a new record and
 * never mutates its input; unchanged versions are shared with the input (treat records as
 * immutable). Status is derived, never stored (see treatment-status.ts), so a transition only
 * moves publish and end times.
 */

/** A state rule forbids the operation (for example pausing a treatment that is not LIVE). */
export class DomainRuleError extends FailedPreconditionError {
  declare readonly code: 'FAILED_PRECONDITION';

  constructor(message: string) {
    super(message);
    this.name = 'DomainRuleError';
  }
}

/** The version-level fields; timestamps are RFC 3339 strings and are stored as `toISOString()`. */
export type VersionFields = Pick<
  TreatmentVersionRecord,
  'startTimestamp' | 'endTimestamp' | 'tags' | 'content' | 'eligibilityRules' | 'removedSurfaces' | 'targetActionEventId'
>;

export interface NewTreatment {
  treatmentId: string;
  projectId: string;
  name: string;
  description: string;
  treatmentTypeId: string;
  lastModifiedBy: string;
  externalTreatmentId?: string;
  mutualExclusionGroupId?: string;
  shouldPublish?: boolean;
  version: VersionFields;
  controls?: TreatmentControls;
}

/**
 * Delivery controls (holdout, QA users, fallback, frequency cap): treatment-level, so a change never creates a version.
 * On update, unset = unchanged; `frequencyCap: null` removes the cap, `qaUserIds: []` clears them.
 */
export interface TreatmentControls {
  holdoutPercentage?: number;
  qaUserIds?: string[];
  isFallback?: boolean;
  frequencyCap?: FrequencyCap | null;
}

/**
 * An UpdateTreatment after the route has resolved names to ids. Unset fields are unchanged.
 * `null` clears an optional field: the mutual exclusion group (the wire's empty string), the end
 * timestamp (the treatment then never ends) and the target action.
 */
export interface TreatmentUpdate {
  lastModifiedBy: string;
  name?: string;
  description?: string;
  externalTreatmentId?: string;
  mutualExclusionGroupId?: string | null;
  content?: Content;
  /** an empty list clears the tags */
  tags?: string[];
  startTimestamp?: string;
  endTimestamp?: string | null;
  /** an empty list removes every rule */
  eligibilityRules?: EligibilityRule[];
  removedSurfaces?: string[];
  targetActionEventId?: string | null;
  shouldPublish?: boolean;
  controls?: TreatmentControls;
}

export function createTreatment(input: NewTreatment, nowMs: number): TreatmentRecord {
  const now = iso(nowMs);
  const version: TreatmentVersionRecord = {
    versionNumber: 1,
    ...(input.shouldPublish ? { publishTime: now } : {}),
    ...versionBody(input.version),
    createTime: now,
    lastModifiedTimestamp: now,
  };
  return {
    treatmentId: input.treatmentId,
    projectId: input.projectId,
    name: input.name,
    description: input.description,
    treatmentTypeId: input.treatmentTypeId,
    ...(input.externalTreatmentId !== undefined ? { externalTreatmentId: input.externalTreatmentId } : {}),
    ...(input.mutualExclusionGroupId !== undefined ? { mutualExclusionGroupId: input.mutualExclusionGroupId } : {}),
    paused: false,
    lastModifiedBy: input.lastModifiedBy,
    lastModifiedTimestamp: now,
    modificationSource: 'API',
    createTime: now,
    versions: [version],
    ...withControls({}, input.controls),
  };
}

/** Stored sparsely: a default value (0, [], false, no cap) is an absent field. */
function withControls<T extends Partial<TreatmentRecord>>(t: T, c: TreatmentControls | undefined): T {
  if (c === undefined) return t;
  const next = { ...t };
  if (c.holdoutPercentage !== undefined) {
    if (c.holdoutPercentage === 0) delete next.holdoutPercentage;
    else next.holdoutPercentage = c.holdoutPercentage;
  }
  if (c.qaUserIds !== undefined) {
    if (c.qaUserIds.length === 0) delete next.qaUserIds;
    else next.qaUserIds = [...new Set(c.qaUserIds)];
  }
  if (c.isFallback !== undefined) {
    if (!c.isFallback) delete next.isFallback;
    else next.isFallback = true;
  }
  if (c.frequencyCap === null) delete next.frequencyCap;
  else if (c.frequencyCap !== undefined) next.frequencyCap = { ...c.frequencyCap };
  return next;
}

/**
 * A version-level field only counts as a change when its value differs from the newest
 * version's: a retried UpdateTreatment then leaves the record as the first call did instead of
 * piling up identical versions. `changed` is false when the record is returned untouched (no
 * modification stamp either), so the store may skip the write.
 */
export function applyUpdate(t: TreatmentRecord, update: TreatmentUpdate, nowMs: number): { treatment: TreatmentRecord; changed: boolean } {
  let next = withControls(applyTreatmentFields(t, update), update.controls);
  let changed = TREATMENT_LEVEL_FIELDS.some((k) => next[k] !== t[k]) || CONTROL_FIELDS.some((k) => stableJson(next[k]) !== stableJson(t[k]));
  const newest = newestVersion(t);
  const edited = editedBody(newest, update);
  if (edited !== undefined) {
    next = addVersion(next, edited, newest.versionNumber + 1, nowMs);
    if (update.shouldPublish) next = publish(next, newest.versionNumber + 1, nowMs);
    changed = true;
  } else if (update.shouldPublish) {
    const resumed = publishNewestDraftOrResume(next, newest, nowMs);
    changed ||= resumed !== next;
    next = resumed;
  }
  if (!changed) return { treatment: t, changed: false };
  return { treatment: stamped(next, update.lastModifiedBy, nowMs), changed: true };
}

/** Only a LIVE treatment can be paused. */
export function pauseTreatment(t: TreatmentRecord, lastModifiedBy: string, nowMs: number): TreatmentRecord {
  const status = treatmentStatus(t, nowMs);
  if (status !== 'LIVE') {
    throw new DomainRuleError(`only a LIVE treatment can be paused; treatment ${t.treatmentId} is ${status}`);
  }
  return stamped({ ...t, paused: true }, lastModifiedBy, nowMs);
}

/**
 * Every version ends now, so the treatment derives ARCHIVED and is never served again.
 * TreatmentRecord has no deletion flag, and a treatment whose versions are all unpublished
 * derives DRAFT whatever their end; so each draft is also marked published now. A draft
 * published with an end of now is ARCHIVED at once and was never served. Versions that already
 * ended keep their end. A deleted treatment is thereby indistinguishable from one archived by
 * time: a later update that publishes new content makes it LIVE again.
 */
export function deleteTreatment(t: TreatmentRecord, lastModifiedBy: string, nowMs: number): TreatmentRecord {
  const versions = t.versions.map((v) => endedVersion(v, nowMs));
  return stamped({ ...t, versions, paused: false }, lastModifiedBy, nowMs);
}

const TREATMENT_LEVEL_FIELDS = ['name', 'description', 'externalTreatmentId', 'mutualExclusionGroupId'] as const;
const CONTROL_FIELDS = ['holdoutPercentage', 'qaUserIds', 'isFallback', 'frequencyCap'] as const;

type VersionBody = Omit<TreatmentVersionRecord, 'versionNumber' | 'publishTime' | 'createTime' | 'lastModifiedTimestamp'>;

function applyTreatmentFields(t: TreatmentRecord, u: TreatmentUpdate): TreatmentRecord {
  const next: TreatmentRecord = { ...t };
  if (u.name !== undefined) next.name = u.name;
  if (u.description !== undefined) next.description = u.description;
  if (u.externalTreatmentId !== undefined) next.externalTreatmentId = u.externalTreatmentId;
  if (u.mutualExclusionGroupId === null) delete next.mutualExclusionGroupId;
  else if (u.mutualExclusionGroupId !== undefined) next.mutualExclusionGroupId = u.mutualExclusionGroupId;
  return next;
}

/** The newest version's fields with the update applied, or undefined when nothing differs. */
function editedBody(newest: TreatmentVersionRecord, u: TreatmentUpdate): VersionBody | undefined {
  const current = versionBody(newest);
  const edited = versionBody({
    startTimestamp: u.startTimestamp ?? current.startTimestamp,
    endTimestamp: u.endTimestamp === null ? undefined : (u.endTimestamp ?? current.endTimestamp),
    tags: u.tags ?? current.tags,
    content: u.content ?? current.content,
    eligibilityRules: u.eligibilityRules ?? current.eligibilityRules,
    removedSurfaces: u.removedSurfaces ?? current.removedSurfaces,
    targetActionEventId: u.targetActionEventId === null ? undefined : (u.targetActionEventId ?? current.targetActionEventId),
  });
  return stableJson(edited) === stableJson(current) ? undefined : edited;
}

function addVersion(t: TreatmentRecord, body: VersionBody, versionNumber: number, nowMs: number): TreatmentRecord {
  const now = iso(nowMs);
  const version: TreatmentVersionRecord = { versionNumber, ...body, createTime: now, lastModifiedTimestamp: now };
  return { ...t, versions: [...t.versions, version] };
}

/**
 * Only the newest version is publishable: a draft below a newer version is stale (the newer one
 * was copied from it), and publishing it would silently roll edits back.
 */
function publishNewestDraftOrResume(t: TreatmentRecord, newest: TreatmentVersionRecord, nowMs: number): TreatmentRecord {
  if (newest.publishTime === undefined) return publish(t, newest.versionNumber, nowMs);
  if (t.paused) return { ...t, paused: false };
  return t;
}

/**
 * The published version becomes the served one: every other version that is LIVE or SCHEDULED
 * now ends now (ARCHIVED from this instant on), so at most one published version can be served.
 */
function publish(t: TreatmentRecord, versionNumber: number, nowMs: number): TreatmentRecord {
  const now = iso(nowMs);
  const versions = t.versions.map((v) => {
    if (v.versionNumber === versionNumber) return { ...v, publishTime: now, lastModifiedTimestamp: now };
    const status = versionStatus(v, t, nowMs);
    if (status === 'LIVE' || status === 'SCHEDULED') return { ...v, endTimestamp: now, lastModifiedTimestamp: now };
    return v;
  });
  return { ...t, versions, paused: false };
}

function endedVersion(v: TreatmentVersionRecord, nowMs: number): TreatmentVersionRecord {
  const isDraft = v.publishTime === undefined;
  const endsLater = v.endTimestamp === undefined || Date.parse(v.endTimestamp) > nowMs;
  if (!isDraft && !endsLater) return v;
  const now = iso(nowMs);
  return {
    ...v,
    ...(isDraft ? { publishTime: now } : {}),
    ...(endsLater ? { endTimestamp: now } : {}),
    lastModifiedTimestamp: now,
  };
}

function stamped(t: TreatmentRecord, lastModifiedBy: string, nowMs: number): TreatmentRecord {
  return { ...t, lastModifiedBy, lastModifiedTimestamp: iso(nowMs), modificationSource: 'API' };
}

function newestVersion(t: TreatmentRecord): TreatmentVersionRecord {
  if (t.versions.length === 0) throw new Error(`treatment ${t.treatmentId} has no versions`);
  return t.versions.reduce((a, b) => (b.versionNumber > a.versionNumber ? b : a));
}

/** A deep copy with timestamps in stored form and unset optional fields absent. */
function versionBody(f: VersionFields): VersionBody {
  return {
    startTimestamp: canonicalTime(f.startTimestamp),
    ...(f.endTimestamp !== undefined ? { endTimestamp: canonicalTime(f.endTimestamp) } : {}),
    tags: [...f.tags],
    content: structuredClone(f.content),
    eligibilityRules: structuredClone(f.eligibilityRules),
    removedSurfaces: [...f.removedSurfaces],
    ...(f.targetActionEventId !== undefined ? { targetActionEventId: f.targetActionEventId } : {}),
  };
}

function canonicalTime(s: string): string {
  return new Date(s).toISOString();
}

function iso(nowMs: number): string {
  return new Date(nowMs).toISOString();
}

/** JSON with object keys sorted, so equal values compare equal whatever their key order. */
function stableJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v,
  );
}
