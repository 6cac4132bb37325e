import type { AggregationSpec } from './data-field-params.js';
import { fieldAggregation, utcDay } from './data-field-values.js';
import type { DataFieldParams, DataFieldRecord } from './types.js';
import type { PropertyValue, TreatmentInteractionType } from '../ingestion/index.js';
import type { EventPayload, InteractionJob } from '../ingestion/index.js';
import { dailyCountKey, distinctMarkerKey, firstTsKey, latestTsKey, type ProfileOp } from '../profiles/index.js';
import { parseRfc3339 } from '../platform/rfc3339.js';

/**
 * The incremental path of aggregations: the profile updates one event or interaction
 * causes, applied by the ingestion workers in the same atomic script as the event's
 * de-duplication marker, so a duplicate (same insertId) or a retried job never counts twice.
 * Each field gets only the state its aggregation reads (see data-field-values.ts for the naming).
 * The scheduler's recompute from ClickHouse uses the same matching rules and stays the truth.
 */

type EventParams = Extract<DataFieldParams, { eventDataFieldParams: unknown }>['eventDataFieldParams'];
type TreatmentParams = Extract<DataFieldParams, { treatmentDataFieldParams: unknown }>['treatmentDataFieldParams'];

export type AggregationTarget =
  | { source: 'event'; field: DataFieldRecord; agg: AggregationSpec; params: EventParams }
  | { source: 'treatment'; field: DataFieldRecord; agg: AggregationSpec; params: TreatmentParams };

/** What a field aggregates, or undefined for a user-property field. */
export function aggregationTarget(field: DataFieldRecord): AggregationTarget | undefined {
  const agg = fieldAggregation(field);
  if (!agg || !field.params) return undefined;
  if ('eventDataFieldParams' in field.params) return { source: 'event', field, agg, params: field.params.eventDataFieldParams };
  if ('treatmentDataFieldParams' in field.params) return { source: 'treatment', field, agg, params: field.params.treatmentDataFieldParams };
  return undefined;
}

/**
 * LogTreatmentInteraction types a treatmentInteractionType counts. SENT has no interaction of
 * that name: it counts the email DELIVERY_SENT interactions. UNSPECIFIED counts nothing.
 */
export function interactionTypesCounted(type: TreatmentInteractionType): string[] {
  if (type === 'TREATMENT_INTERACTION_TYPE_UNSPECIFIED') return [];
  return type === 'SENT' ? ['DELIVERY_SENT'] : [type];
}

/**
 * Equality of two canonical PropertyValues: the same member with the same value.
 * longValue compares as an integer (both are decimal strings), timestampValue as an instant
 * (a filter may spell `...:00Z`, the stored event `...:00.000Z`). A longValue never equals a
 * doubleValue: the member is part of the value.
 */
export function propertyValuesEqual(want: PropertyValue, got: PropertyValue | undefined): boolean {
  if (got === undefined) return false;
  if ('longValue' in want) return 'longValue' in got && sameInteger(want.longValue, got.longValue);
  if ('doubleValue' in want) return 'doubleValue' in got && want.doubleValue === got.doubleValue;
  if ('stringValue' in want) return 'stringValue' in got && want.stringValue === got.stringValue;
  if ('booleanValue' in want) return 'booleanValue' in got && want.booleanValue === got.booleanValue;
  return 'timestampValue' in got && sameInstant(want.timestampValue, got.timestampValue);
}

function sameInteger(a: string, b: string): boolean {
  try {
    return BigInt(a) === BigInt(b);
  } catch {
    return false;
  }
}

function sameInstant(a: string, b: string): boolean {
  const x = parseRfc3339(a);
  return x !== undefined && x === parseRfc3339(b);
}

/**
 * Scope of a treatment aggregation. The contract gives surfaces no id other than their name
 * (records are referred to by name), so `surfaceId` is matched against the surface name too.
 */
export function interactionMatches(params: TreatmentParams, job: InteractionJob): boolean {
  if (!interactionTypesCounted(params.treatmentInteractionType).includes(job.interactionType)) return false;
  if (params.treatmentId !== undefined && params.treatmentId !== job.treatmentId) return false;
  const surface = params.surfaceName ?? params.surfaceId;
  return surface === undefined || surface === job.surface;
}

function timestampOps(target: AggregationTarget, ms: number): ProfileOp[] {
  const id = target.field.dataFieldId;
  switch (target.agg.key) {
    case 'firstTimestampAggregation':
    case 'daysSinceFirstTimestampAggregation':
      return [['min', firstTsKey(id), ms]];
    case 'latestTimestampAggregation':
    case 'daysSinceLastTimestampAggregation':
      return [['max', latestTsKey(id), ms]];
    default:
      return [];
  }
}

/** `dailyOps`: the daily count's op per UTC day number, made once and shared by every event of that day (read-only). */
type EventTarget = Extract<AggregationTarget, { source: 'event' }> & { filters: [string, PropertyValue][]; dailyOps: Map<number, ProfileOp> };

const DAY_MS = 86_400_000;
/** Days of daily-count ops a target keeps (retention plus the future an event may carry, with room). */
const MAX_DAILY_OPS = 1000;

/** The daily count's `inc` of the day of `ms`: one tuple per field and day, not one per event. */
function dailyCountOp(target: EventTarget, ms: number): ProfileOp {
  const day = Math.floor(ms / DAY_MS);
  let op = target.dailyOps.get(day);
  if (op === undefined) {
    if (target.dailyOps.size >= MAX_DAILY_OPS) target.dailyOps.clear();
    op = Object.freeze(['inc', dailyCountKey(target.field.dataFieldId, utcDay(ms)), 1]) as ProfileOp;
    target.dailyOps.set(day, op);
  }
  return op;
}

/** The event aggregations of a field list, resolved once per list (the cache hands out the same array until a change). */
const eventTargetsOf = new WeakMap<readonly DataFieldRecord[], EventTarget[]>();

function eventTargets(fields: readonly DataFieldRecord[]): EventTarget[] {
  let targets = eventTargetsOf.get(fields);
  if (!targets) {
    targets = [];
    for (const field of fields) {
      const target = aggregationTarget(field);
      if (target?.source === 'event')
        targets.push({ ...target, filters: Object.entries(target.params.propertyValueByPropertyName ?? {}), dailyOps: new Map() });
    }
    eventTargetsOf.set(fields, targets);
  }
  return targets;
}

/** Profile updates for one event: one per matching event aggregation. */
export function eventOps(fields: readonly DataFieldRecord[], event: EventPayload): ProfileOp[] {
  const ops: ProfileOp[] = [];
  for (const target of eventTargets(fields)) {
    if (target.params.eventSchemaName !== event.eventName) continue;
    if (target.filters.length > 0) {
      const props = event.eventProperties ?? {};
      if (!target.filters.every(([name, want]) => propertyValuesEqual(want, props[name]))) continue;
    }
    if (target.agg.key === 'dailyCountAggregation') ops.push(dailyCountOp(target, event.clientEventTs));
    else ops.push(...timestampOps(target, event.clientEventTs));
  }
  return ops;
}

/** Epoch ms of an interaction (its int64 microseconds, floored). */
export function interactionMs(job: InteractionJob): number {
  const us = BigInt(job.interactionTimeMicros);
  const ms = us / 1000n - (us % 1000n < 0n ? 1n : 0n);
  return Number(ms);
}

/**
 * Profile updates for one interaction. Distinct counts (isDistinctInteraction) go through
 * `incnew`: the day's count grows only when the tracking id's marker is new, so an id counts
 * once, on the day it is first seen. Distinctness only affects counts; first/latest timestamps
 * are those of any matching interaction.
 */
export function interactionOps(fields: readonly DataFieldRecord[], job: InteractionJob): ProfileOp[] {
  const ms = interactionMs(job);
  const ops: ProfileOp[] = [];
  for (const field of fields) {
    const target = aggregationTarget(field);
    if (target?.source !== 'treatment' || !interactionMatches(target.params, job)) continue;
    const id = field.dataFieldId;
    if (target.agg.key !== 'dailyCountAggregation') ops.push(...timestampOps(target, ms));
    else if (target.params.isDistinctInteraction === true)
      ops.push(['incnew', distinctMarkerKey(id, job.treatmentTrackingId), dailyCountKey(id, utcDay(ms)), 1]);
    else ops.push(['inc', dailyCountKey(id, utcDay(ms)), 1]);
  }
  return ops;
}
