import type { PropertyValue } from '../ingestion/index.js';

/**
 * The layout of a user's profile hash: every field name the service writes, reads or merges is
 * built from these prefixes, here and nowhere else; the Lua scripts get them as arguments.
 * The hash keeps what data-field values are derived from, never the values themselves, so
 * windows and days-since are right when read, not when the scheduler last ran.
 */
export const PROFILE_FIELDS = {
  /** `up:<name>`: a user property, its PropertyValue as JSON. */
  userProperty: 'up:',
  /** `ut:<name>`: the event time (ms) of that user property; the later write wins. */
  userPropertyTime: 'ut:',
  /** `dc:<dataFieldId>:<yyyymmdd>`: matching events (or interactions) on that UTC day. */
  dailyCount: 'dc:',
  /** `ft:<dataFieldId>`: first timestamp (ms). */
  firstTimestamp: 'ft:',
  /** `lt:<dataFieldId>`: latest timestamp (ms). */
  latestTimestamp: 'lt:',
  /**
   * `dm:<dataFieldId>:<treatmentTrackingId>`: distinct marker (isDistinctInteraction), a tracking
   * id counted once, on the UTC day it was first seen. The recompute stores that day (yyyymmdd)
   * as the value, the incremental path stores `1`.
   */
  distinctMarker: 'dm:',
  /** `cap:<v|r>:<treatmentId>:<utcDay>`: frequency-cap counter (VIEWED or RETURNED on a day since the epoch). */
  capCounter: 'cap:',
  /** `merged:<id>`: a pre-login id merged into this profile (value: merge time, ms). */
  merged: 'merged:',
  /** The user this id was merged into (the profile is that user's). */
  alias: '@alias',
  /** Present once the merge of this pre-login id is finished. */
  done: '@done',
  /**
   * This id has been the signed-in side of a merge (value: first time, ms): it is a user of its
   * own and is never merged into another one. Written before each claim the user makes.
   */
  signedIn: '@signedIn',
} as const;

export function userPropertyField(name: string): string {
  return PROFILE_FIELDS.userProperty + name;
}

export function userPropertyTimeField(name: string): string {
  return PROFILE_FIELDS.userPropertyTime + name;
}

export function dailyCountPrefix(dataFieldId: string): string {
  return `${PROFILE_FIELDS.dailyCount}${dataFieldId}:`;
}

export function dailyCountKey(dataFieldId: string, day: string): string {
  return dailyCountPrefix(dataFieldId) + day;
}

export function firstTsKey(dataFieldId: string): string {
  return PROFILE_FIELDS.firstTimestamp + dataFieldId;
}

export function latestTsKey(dataFieldId: string): string {
  return PROFILE_FIELDS.latestTimestamp + dataFieldId;
}

export function distinctMarkerPrefix(dataFieldId: string): string {
  return `${PROFILE_FIELDS.distinctMarker}${dataFieldId}:`;
}

export function distinctMarkerKey(dataFieldId: string, trackingId: string): string {
  return distinctMarkerPrefix(dataFieldId) + trackingId;
}

/** The frequency-cap counter of a treatment: times VIEWED (interactions) or RETURNED (decision log) on a UTC day (days since the epoch). */
export function capCounterField(kind: 'VIEWED' | 'RETURNED', treatmentId: string, utcDay: number): string {
  return `${PROFILE_FIELDS.capCounter}${kind === 'VIEWED' ? 'v' : 'r'}:${treatmentId}:${utcDay}`;
}

/** The HSCAN MATCH pattern of every frequency-cap counter. */
export function capCounterPattern(): string {
  return `${PROFILE_FIELDS.capCounter}*`;
}

/** The UTC day of a `capCounterField` name; undefined for other fields. */
export function capCounterDay(field: string): number | undefined {
  if (!field.startsWith(PROFILE_FIELDS.capCounter)) return undefined;
  const day = Number(field.slice(field.lastIndexOf(':') + 1));
  return Number.isInteger(day) ? day : undefined;
}

/**
 * How an identity merge combines a pre-login id's field with the user's, by prefix: daily and cap
 * counters add up, first/latest timestamps keep the extreme. A field of no rule (distinct
 * markers, earlier merge markers) is kept when the user has none; user properties are
 * last-write-wins by their timestamps.
 */
export const MERGE_RULES: readonly (readonly [prefix: string, rule: 'sum' | 'min' | 'max'])[] = [
  [PROFILE_FIELDS.dailyCount, 'sum'],
  [PROFILE_FIELDS.capCounter, 'sum'],
  [PROFILE_FIELDS.firstTimestamp, 'min'],
  [PROFILE_FIELDS.latestTimestamp, 'max'],
];

export interface StoredProfile {
  userProperties: Record<string, PropertyValue>;
  /** Raw numeric fields (aggregation state), by field name. */
  fields: Record<string, string>;
  /** The pre-login ids merged into this profile. */
  mergedFrom?: string[];
  /** The user this id was merged into (the profile is that user's). */
  mergedInto?: string;
}

/** A profile hash as read (HGETALL) in its parts; bookkeeping fields are left out. */
export function parseProfile(raw: Record<string, string>): StoredProfile {
  const { userProperty, userPropertyTime, merged, alias, done, signedIn } = PROFILE_FIELDS;
  const userProperties: Record<string, PropertyValue> = {};
  const fields: Record<string, string> = {};
  let mergedFrom: string[] | undefined;
  // for…in, not Object.entries: no pair array per field (this runs on every GetTreatments)
  for (const k in raw) {
    const v = raw[k];
    if (k.startsWith(userProperty)) userProperties[k.slice(userProperty.length)] = JSON.parse(v) as PropertyValue;
    else if (k.startsWith(merged)) (mergedFrom ??= []).push(k.slice(merged.length));
    else if (!k.startsWith(userPropertyTime) && k !== alias && k !== done && k !== signedIn) fields[k] = v;
  }
  return mergedFrom ? { userProperties, fields, mergedFrom: mergedFrom.sort() } : { userProperties, fields };
}

/**
 * How long a job's in-flight mark (and the `@applied` stamp) counts (RedisKeys.ingestInFlight): a
 * job neither applied nor retried within it (dead-lettered after its rows) no longer holds back a
 * recompute of its user. Well above the longest pause between a failing job's attempts (30 s), so
 * a job that keeps failing after its rows keeps its mark; short, because every active user holds
 * the hash this long (about 100 bytes of Redis).
 */
export const IN_FLIGHT_TTL_MS = 5 * 60_000;

/** The in-flight hash's field holding when a job last updated the profile (epoch ms). */
export const IN_FLIGHT_APPLIED = '@applied';
