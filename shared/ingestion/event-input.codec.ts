import type { Static } from 'typebox';
import type { EventPayload } from './jobs.js';
import type { PropertyValue } from './types.js';
import { invalidField, InvalidArgumentError, type ErrorDetail } from '../platform/errors.js';
import type { ExternalEventIn, PropertyMap } from './ingest.schemas.js';
import { parseRfc3339 } from '../platform/rfc3339.js';

/** An event more than 24 h in the client's future is rejected. */
export const MAX_FUTURE_MS = 24 * 3600 * 1000;
const DAY_MS = 86_400_000;
/** The range ClickHouse's DateTime64 stores: anything outside is rejected at the door, not retried forever. */
export const MIN_TS_MS = Date.UTC(1900, 0, 1);
export const MAX_TS_MS = Date.UTC(2300, 0, 1) - 1;

/** Times inside property values: any storable time (they are not partition keys). */
export function storableTime(ms: number): boolean {
  return ms >= MIN_TS_MS && ms <= MAX_TS_MS;
}

/**
 * The times that decide a row's ClickHouse partition (tables are partitioned by month of the
 * event's or interaction's time): accepted only within [now − RETENTION_DAYS, now + 24 h], so one
 * request can touch at most ~15 monthly partitions (400 days) and never create one the TTL would
 * drop at once. Outside: 400 naming the field, or a dead letter on the Pub/Sub path.
 */
export interface AcceptedTimes {
  minMs: number;
  maxMs: number;
  retentionDays: number;
}

export function acceptedTimes(nowMs: number, retentionDays: number): AcceptedTimes {
  return { minMs: nowMs - retentionDays * DAY_MS, maxMs: nowMs + MAX_FUTURE_MS, retentionDays };
}

/** Undefined when `ms` is accepted, else what is wrong with it. */
export function acceptedTimeProblem(ms: number, window: AcceptedTimes): string | undefined {
  if (ms > window.maxMs) return 'more than 24 hours in the future';
  if (ms < window.minMs) return `more than ${window.retentionDays} days in the past (RETENTION_DAYS)`;
  return undefined;
}

/** A partition-key time given as RFC 3339 text: epoch ms, or undefined with the problem recorded. */
export function acceptedTimestamp(text: string, field: string, window: AcceptedTimes, problems: ErrorDetail[]): number | undefined {
  const ms = parseRfc3339(text);
  const problem = ms === undefined ? 'not a valid RFC 3339 timestamp' : acceptedTimeProblem(ms, window);
  if (problem === undefined) return ms;
  problems.push({ field, description: problem });
  return undefined;
}
const INT64_MIN = -9223372036854775808n;
const INT64_MAX = 9223372036854775807n;

type PropertyMapIn = Static<typeof PropertyMap>;

/** Decimal string of an int64 given as a JSON integer or a decimal string; undefined out of range. */
function canonicalInt(v: string | number): string | undefined {
  // Up to 15 digits a double holds the value exactly: no BigInt needed (the common case).
  if (typeof v === 'string' ? v.length <= 15 : Number.isSafeInteger(v)) return String(Number(v));
  const n = BigInt(v);
  return n < INT64_MIN || n > INT64_MAX ? undefined : n.toString();
}

/** Canonical PropertyValue: longValue as a decimal string, timestamps as RFC 3339 UTC. */
export function normalizePropertyMap(map: PropertyMapIn | undefined, path: string, problems: ErrorDetail[]): Record<string, PropertyValue> | undefined {
  if (!map) return undefined;
  const out: Record<string, PropertyValue> = {};
  for (const [name, v] of Object.entries(map)) {
    const field = `${path}.${name}`;
    if ('longValue' in v) {
      const canonical = canonicalInt(v.longValue);
      if (canonical === undefined) problems.push({ field: `${field}.longValue`, description: 'out of the int64 range' });
      else out[name] = { longValue: canonical };
    } else if ('timestampValue' in v) {
      const ms = parseRfc3339(v.timestampValue);
      if (ms === undefined) problems.push({ field: `${field}.timestampValue`, description: 'not a valid RFC 3339 timestamp' });
      else if (!storableTime(ms)) problems.push({ field: `${field}.timestampValue`, description: 'must be between 1900 and 2299' });
      else out[name] = { timestampValue: new Date(ms).toISOString() };
    } else if ('doubleValue' in v) {
      if (!Number.isFinite(v.doubleValue)) problems.push({ field: `${field}.doubleValue`, description: 'must be a finite number' });
      out[name] = { doubleValue: v.doubleValue };
    } else out[name] = v as PropertyValue;
  }
  return out;
}

const OPTIONAL_STRINGS = ['preLoginTempUserId', 'sessionId', 'country', 'region', 'city', 'ipAddress', 'deviceId', 'appVersionId'] as const;

/** Semantic checks the schema cannot express, and the normalised job payload. */
export function normalizeEvents(events: Static<typeof ExternalEventIn>[], window: AcceptedTimes): EventPayload[] {
  const problems: ErrorDetail[] = [];
  const out = events.map((e, i) => {
    const path = `events[${i}]`;
    const clientEventTs = acceptedTimestamp(e.clientEventTimestamp, `${path}.clientEventTimestamp`, window, problems) ?? 0;
    const serverReceivedTs =
      e.serverReceivedTimestamp === undefined ? undefined : acceptedTimestamp(e.serverReceivedTimestamp, `${path}.serverReceivedTimestamp`, window, problems);
    // Only the fields present: the payload is serialised into the job and read back per event.
    const p: EventPayload = { eventName: e.eventName, clientEventTs };
    if (serverReceivedTs !== undefined) p.serverReceivedTs = serverReceivedTs;
    if (e.insertId !== undefined) p.insertId = e.insertId;
    const eventProperties = normalizePropertyMap(e.eventProperties, `${path}.eventProperties`, problems);
    if (eventProperties !== undefined) p.eventProperties = eventProperties;
    const userProperties = normalizePropertyMap(e.userProperties, `${path}.userProperties`, problems);
    if (userProperties !== undefined) p.userProperties = userProperties;
    for (const k of OPTIONAL_STRINGS) if (e[k] !== undefined) p[k] = e[k];
    return p;
  });
  if (problems.length > 0) throw new InvalidArgumentError(`invalid events: ${problems.map((d) => `${d.field}: ${d.description}`).join('; ')}`, problems);
  return out;
}

/** `<treatmentId>_<responseId>` with the request's treatmentId. */
export function checkTrackingId(trackingId: string, treatmentId: string | undefined): string {
  const sep = trackingId.indexOf('_');
  if (sep <= 0 || sep === trackingId.length - 1 || (treatmentId !== undefined && trackingId.slice(0, sep) !== treatmentId)) {
    throw invalidField('treatmentTrackingId', 'must be <treatmentId>_<responseId> as returned by GetTreatments, with the same treatmentId');
  }
  return trackingId.slice(0, sep);
}

/** The response id part of a tracking id (`<treatmentId>_<responseId>`), checked by `checkTrackingId`. */
export function trackingResponseId(trackingId: string): string {
  return trackingId.slice(trackingId.indexOf('_') + 1);
}
