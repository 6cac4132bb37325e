import type { LogEventsRequest } from './wire.generated.js';
import { uuid } from './backoff.js';

/** One event as LogEvents takes it. */
export type WireEvent = LogEventsRequest['events'][number];
/** `{ stringValue: 'gold' }`, `{ longValue: 3 }`, ...: exactly one member. */
export type PropertyValue = NonNullable<WireEvent['eventProperties']>[string];
/** A property as the service takes it, or a plain value: a string, a boolean, a Date (a timestamp), an integer (longValue) or another number (doubleValue). */
export type PropertyInput = PropertyValue | string | number | boolean | Date;

/** An event to track: the wire event with plain property values and a `timestamp` (default now). */
export interface TrackEvent extends Omit<WireEvent, 'clientEventTimestamp' | 'eventProperties' | 'userProperties'> {
  userId: string;
  /** When it happened (RFC 3339 text, epoch milliseconds or a Date). @defaultValue now */
  timestamp?: Date | string | number;
  eventProperties?: Record<string, PropertyInput>;
  userProperties?: Record<string, PropertyInput>;
}

function text(name: string, v: unknown, max: number, optional = false): void {
  if (optional && v === undefined) return;
  if (typeof v !== 'string' || v.length === 0 || v.length > max)
    throw new TypeError(`${name} must be a string of 1-${max} characters, got ${typeof v === 'string' ? `${v.length} characters` : String(v)}`);
}

function timestamp(v: TrackEvent['timestamp']): string {
  if (v === undefined) return new Date().toISOString();
  if (typeof v === 'string') {
    if (!/^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/.test(v))
      throw new TypeError(`timestamp must be RFC 3339 with an offset (e.g. 2026-01-31T12:00:00Z), got ${v}`);
    return v;
  }
  const d = typeof v === 'number' ? new Date(v) : v;
  if (!(d instanceof Date) || Number.isNaN(d.getTime())) throw new TypeError(`timestamp is not a valid time: ${String(v)}`);
  return d.toISOString();
}

function propertyValue(name: string, v: PropertyInput): PropertyValue {
  switch (typeof v) {
    case 'string':
      return { stringValue: v };
    case 'boolean':
      return { booleanValue: v };
    case 'number':
      if (!Number.isFinite(v)) throw new TypeError(`${name} must be a finite number, got ${v}`);
      return Number.isSafeInteger(v) ? { longValue: v } : { doubleValue: v };
    default:
      if (v instanceof Date) return { timestampValue: timestamp(v) };
      if (v !== null && typeof v === 'object' && Object.keys(v).length === 1) return v;
      throw new TypeError(
        `${name} must be a string, number, boolean, Date or one of { stringValue | longValue | doubleValue | booleanValue | timestampValue }`,
      );
  }
}

function properties(name: string, props: Record<string, PropertyInput> | undefined): Record<string, PropertyValue> | undefined {
  if (props === undefined) return undefined;
  if (props === null || typeof props !== 'object') throw new TypeError(`${name} must be an object`);
  const out: Record<string, PropertyValue> = {};
  for (const key of Object.keys(props)) out[key] = propertyValue(`${name}.${key}`, props[key]);
  return out;
}

/** The event as LogEvents takes it, checked, with an insertId (a new UUID unless given). */
export function toWireEvent(e: TrackEvent): WireEvent {
  if (e === null || typeof e !== 'object') throw new TypeError('track: pass an event object');
  text('userId', e.userId, 256);
  text('eventName', e.eventName, 256);
  text('insertId', e.insertId, 256, true);
  const { userId: _userId, timestamp: when, eventProperties, userProperties, ...rest } = e;
  const wire: WireEvent = { ...rest, clientEventTimestamp: timestamp(when), insertId: e.insertId ?? uuid() };
  const ep = properties('eventProperties', eventProperties);
  const up = properties('userProperties', userProperties);
  if (ep) wire.eventProperties = ep;
  if (up) wire.userProperties = up;
  return wire;
}

interface PageGlobals {
  addEventListener?(type: string, fn: () => void): void;
  removeEventListener?(type: string, fn: () => void): void;
  document?: { visibilityState?: string; addEventListener?(type: string, fn: () => void): void; removeEventListener?(type: string, fn: () => void): void };
}

/**
 * In a browser page: `flush` when the page is hidden (a tab switch, the app backgrounded: often
 * the last chance on mobile) or left (`pagehide`). Elsewhere nothing. Returns the undo.
 */
export function installPageExitFlush(flush: () => void): () => void {
  const g = globalThis as PageGlobals;
  const doc = g.document;
  if (typeof g.addEventListener !== 'function' || doc === undefined || typeof doc.addEventListener !== 'function') return () => undefined;
  const onHidden = () => {
    if (doc.visibilityState === 'hidden') flush();
  };
  g.addEventListener('pagehide', flush);
  doc.addEventListener('visibilitychange', onHidden);
  return () => {
    g.removeEventListener?.('pagehide', flush);
    doc.removeEventListener?.('visibilitychange', onHidden);
  };
}
