import { aggregationOf, type AggregationSpec } from './data-field-params.js';
import { ruleValueFromJson, type RuleValue } from '../rules/index.js';
import type { DataFieldRecord } from './types.js';
import { dailyCountKey, firstTsKey, latestTsKey, type StoredProfile } from '../profiles/index.js';

/**
 * Data-field values of a user. Pure: no I/O.
 *
 * The profile hash keeps what values are DERIVED from, never the values themselves, so that
 * windows and days-since are right at the moment they are read, not when the scheduler last ran:
 * daily counts, first / latest timestamps and distinct markers, named by the profile layout
 * (shared/profiles/profile-layout.ts). Days are UTC days of the event's clientEventTimestamp or
 * the interaction's time.
 */

const DAY_MS = 86_400_000;

/**
 * Formatted days by day number. Every ingested event and every daily-count rule of a request
 * asks for a few recent days (a window of up to 90 days back from today), so they are formatted
 * once; the cache is dropped when it outgrows any window.
 */
const formattedDays = new Map<number, string>();
const MAX_FORMATTED_DAYS = 1024;

/** `yyyymmdd` of the UTC day of `ms`. */
export function utcDay(ms: number): string {
  const dayNumber = Math.floor(ms / DAY_MS);
  let day = formattedDays.get(dayNumber);
  if (day === undefined) {
    if (formattedDays.size >= MAX_FORMATTED_DAYS) formattedDays.clear();
    formattedDays.set(dayNumber, (day = formatUtcDay(ms)));
  }
  return day;
}

function formatUtcDay(ms: number): string {
  const d = new Date(ms);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth() + 1;
  const day = d.getUTCDate();
  return `${String(y).padStart(4, '0')}${m < 10 ? '0' : ''}${m}${day < 10 ? '0' : ''}${day}`;
}

/** The UTC day `days` days after (negative: before) the day of `ms`, as `yyyymmdd`. */
export function utcDayOffset(ms: number, days: number): string {
  return utcDay(ms + days * DAY_MS);
}

/** Epoch ms of 00:00 UTC of the day of `ms`. */
export function utcDayStartMs(ms: number): number {
  return Math.floor(ms / DAY_MS) * DAY_MS;
}

/** The aggregation of a params-resolved field; undefined for user-property fields. */
export function fieldAggregation(field: DataFieldRecord): AggregationSpec | undefined {
  return field.params ? aggregationOf(field.params) : undefined;
}

/** The user property a field reads, for fields registered by name (or resolved from userAttributeDataFieldParams). */
function userPropertyName(field: DataFieldRecord): string | undefined {
  if (field.params && 'userAttributeDataFieldParams' in field.params) return field.params.userAttributeDataFieldParams.propertyName;
  return field.params ? undefined : field.name;
}

/**
 * Sum of the last `days` UTC calendar days, today included. A user with no matching events
 * has a count of 0, not a missing value: "fewer than 3 purchases" must hold for a user who never
 * bought anything, and dataMissingBehaviour stays meaningful for fields that can truly be absent.
 */
function dailyCount(fields: Record<string, string>, dataFieldId: string, days: number, nowMs: number): bigint {
  let sum = 0n;
  for (let i = 0; i < days; i++) {
    const raw = fields[dailyCountKey(dataFieldId, utcDayOffset(nowMs, -i))];
    if (raw !== undefined && /^-?\d+$/.test(raw)) sum += BigInt(raw);
  }
  return sum;
}

function storedMs(fields: Record<string, string>, key: string): number | undefined {
  const raw = fields[key];
  if (raw === undefined) return undefined;
  const ms = Number(raw);
  return Number.isFinite(ms) ? ms : undefined;
}

/**
 * Whole days since `ms`, floored. A timestamp slightly in the future (events are accepted up
 * to 24 h ahead of the server clock) counts as 0 days, never as -1.
 */
function daysSince(ms: number | undefined, nowMs: number): RuleValue | undefined {
  if (ms === undefined) return undefined;
  return { kind: 'integer', value: BigInt(Math.max(0, Math.floor((nowMs - ms) / DAY_MS))) };
}

function timestamp(ms: number | undefined): RuleValue | undefined {
  return ms === undefined ? undefined : { kind: 'timestamp', valueMs: ms };
}

/** The value of one data field for a user at `nowMs`, or undefined when the user has none. */
export function computeDataFieldValue(field: DataFieldRecord, profile: StoredProfile, nowMs: number): RuleValue | undefined {
  const agg = fieldAggregation(field);
  const id = field.dataFieldId;
  if (agg === undefined) {
    const name = userPropertyName(field);
    const raw = name === undefined ? undefined : profile.userProperties[name];
    return raw === undefined ? undefined : ruleValueFromJson(field.dataFieldType, raw);
  }
  switch (agg.key) {
    case 'dailyCountAggregation':
      return { kind: 'integer', value: dailyCount(profile.fields, id, agg.windowDays ?? 1, nowMs) };
    case 'firstTimestampAggregation':
      return timestamp(storedMs(profile.fields, firstTsKey(id)));
    case 'latestTimestampAggregation':
      return timestamp(storedMs(profile.fields, latestTsKey(id)));
    case 'daysSinceFirstTimestampAggregation':
      return daysSince(storedMs(profile.fields, firstTsKey(id)), nowMs);
    case 'daysSinceLastTimestampAggregation':
      return daysSince(storedMs(profile.fields, latestTsKey(id)), nowMs);
  }
}

/** Plain JSON of a value (GetUserProfile): int64 as a decimal string, timestamps RFC 3339. */
export function dataFieldJson(value: RuleValue): string | number | boolean | null {
  switch (value.kind) {
    case 'integer':
      return value.value.toString();
    case 'double':
    case 'string':
    case 'boolean':
      return value.value;
    case 'timestamp':
      return Number.isFinite(value.valueMs) ? new Date(value.valueMs).toISOString() : null;
    case 'integer_list':
      return JSON.stringify(value.value.map(String));
    case 'double_list':
    case 'string_list':
      return JSON.stringify(value.value);
  }
}

/** Every field that has a value for the user, by dataFieldId; fields without one are left out. */
export function dataFieldValuesJson(
  fields: readonly DataFieldRecord[],
  profile: StoredProfile,
  nowMs: number,
): Record<string, string | number | boolean | null> {
  const out: Record<string, string | number | boolean | null> = {};
  for (const field of fields) {
    const value = computeDataFieldValue(field, profile, nowMs);
    if (value !== undefined) out[field.dataFieldId] = dataFieldJson(value);
  }
  return out;
}
