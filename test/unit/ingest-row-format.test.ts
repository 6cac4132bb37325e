import { describe, expect, it } from 'vitest';
import { utcDay } from '../../shared/aggregation/data-field-values.js';
import { acceptedTimes, normalizeEvents } from '../../shared/ingestion/event-input.codec.js';
import { InvalidArgumentError } from '../../shared/platform/errors.js';
import { eventRowLine, toEventRow } from '../../shared/ingestion/event-rows.warehouse.js';
import { toClickhouseDateTime64 } from '../../shared/platform/warehouse/clickhouse-datetime.js';
import { rowLine } from '../../shared/platform/warehouse/tables.js';

// The ingest hot path formats timestamps and days by arithmetic with a per-day cache; these
// tests hold it to the Date-based formatting it replaced, across the whole storable range.
const slow = (ms: number) => new Date(ms).toISOString().slice(0, 23).replace('T', ' ');
const MIN = Date.UTC(1900, 0, 1);
const MAX = Date.UTC(2300, 0, 1) - 1;

describe('timestamp and day formatting of the ingest path', () => {
  it('formats epoch milliseconds exactly as the ISO string would, from 1900 to 2299', () => {
    let seed = 7;
    const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const samples = [MIN, MAX, 0, -1, 1, 999, 1000, 86_399_999, 86_400_000, -86_400_000, Date.UTC(2024, 1, 29, 23, 59, 59, 999)];
    for (let i = 0; i < 20_000; i++) samples.push(Math.floor(MIN + rnd() * (MAX - MIN)));
    // alternate far-apart and same-day values so the day cache is both hit and missed
    for (const ms of samples) {
      expect(toClickhouseDateTime64(ms)).toBe(slow(ms));
      const next = Math.min(ms + 1, MAX);
      expect(toClickhouseDateTime64(next)).toBe(slow(next));
    }
  });

  it('formats RFC 3339 strings through the same path and still refuses what cannot be stored', () => {
    expect(toClickhouseDateTime64('1969-12-31T23:59:59.999Z')).toBe('1969-12-31 23:59:59.999');
    expect(toClickhouseDateTime64('2024-01-02T05:04:05.006789+02:00')).toBe('2024-01-02 03:04:05.006');
    expect(() => toClickhouseDateTime64(MIN - 1)).toThrow(RangeError);
    expect(() => toClickhouseDateTime64(MAX + 1)).toThrow(RangeError);
  });

  it('gives the UTC day of each instant, however the calls alternate between days', () => {
    const instants = [
      Date.UTC(2024, 2, 10, 23, 59, 59, 999),
      Date.UTC(2024, 2, 11),
      Date.UTC(2024, 2, 10),
      Date.UTC(1969, 11, 31, 12),
      Date.UTC(1900, 0, 1),
      Date.UTC(2299, 11, 31, 23),
    ];
    expect(instants.map(utcDay)).toEqual(['20240310', '20240311', '20240310', '19691231', '19000101', '22991231']);
    expect(instants.map(utcDay)).toEqual(['20240310', '20240311', '20240310', '19691231', '19000101', '22991231']);
  });
});

describe('event row lines', () => {
  it('serialise the same values, in the same column order, as the row object', () => {
    const owner = { projectId: 'p', userId: 'u"1' };
    const e = {
      eventName: 'buy',
      insertId: 'i-1',
      country: 'FR',
      eventProperties: { note: { stringValue: 'a "quoted"\nline' } },
      userProperties: { tier: { stringValue: 'gold' } },
    };
    const args = [owner, e, Date.UTC(2024, 0, 2, 3, 4, 5, 6), undefined, 'i:i-1', '2024-01-02 03:04:06.000', 'api'] as const;
    const line = eventRowLine(...args);
    expect(line).toBe(rowLine('events', toEventRow(...args)));
    const values = JSON.parse(line) as unknown[];
    expect(values.slice(0, 8)).toEqual(['p', 'u"1', 'buy', 'i:i-1', 'i-1', '2024-01-02 03:04:05.006', null, '2024-01-02 03:04:06.000']);
    expect(JSON.parse(values[8] as string)).toEqual(e.eventProperties);
    expect(values[12]).toBe('FR');
    expect(values[18]).toBe('api');
  });

  it('write {} for absent property maps and empty strings for absent attributes', () => {
    const row = toEventRow({ projectId: 'p', userId: 'u' }, { eventName: 'x' }, 0, 5, 'j:1:0', '1970-01-01 00:00:00.000', 'pubsub');
    expect(row).toMatchObject({
      insert_id: '',
      event_properties: '{}',
      user_properties: '{}',
      city: '',
      server_received_ts: '1970-01-01 00:00:00.005',
      source: 'pubsub',
    });
  });
});

describe('normalizeEvents', () => {
  const now = acceptedTimes(Date.UTC(2024, 5, 1), 400);
  const one = (longValue: string | number) =>
    normalizeEvents([{ eventName: 'e', clientEventTimestamp: '2024-06-01T00:00:00Z', eventProperties: { n: { longValue } } }], now)[0].eventProperties!.n;

  it('writes every int64 in canonical decimal form, short or long, string or number', () => {
    expect(one('007')).toEqual({ longValue: '7' });
    expect(one('-0')).toEqual({ longValue: '0' });
    expect(one('-000000000000012')).toEqual({ longValue: '-12' });
    expect(one(42)).toEqual({ longValue: '42' });
    expect(one('9223372036854775807')).toEqual({ longValue: '9223372036854775807' });
    expect(one('-9223372036854775808')).toEqual({ longValue: '-9223372036854775808' });
    expect(one('0009007199254740993')).toEqual({ longValue: '9007199254740993' });
  });

  it('refuses an int64 out of range', () => {
    expect(() => one('9223372036854775808')).toThrow(InvalidArgumentError);
  });

  it('keeps only the fields given, with timestamps as epoch milliseconds', () => {
    const [p] = normalizeEvents([{ eventName: 'e', clientEventTimestamp: '2024-06-01T00:00:00.5Z', city: 'Oslo' }], now);
    expect(p).toEqual({ eventName: 'e', clientEventTs: Date.UTC(2024, 5, 1, 0, 0, 0, 500), city: 'Oslo' });
    expect(Object.keys(p)).toEqual(['eventName', 'clientEventTs', 'city']);
  });
});
