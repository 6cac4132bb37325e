import { describe, expect, it } from 'vitest';
import { computeDataFieldValue, dataFieldJson, dataFieldValuesJson, utcDay, utcDayOffset } from '../../shared/aggregation/data-field-values.js';
import type { DataFieldParams, DataFieldRecord, DataFieldType } from '../../shared/aggregation/index.js';
import type { StoredProfile } from '../../shared/profiles/profile-layout.js';

const NOW = Date.parse('2026-03-10T15:30:00Z');
const DAY = 86_400_000;

function field(id: string, params: DataFieldParams, dataFieldType: DataFieldType = 'INTEGER'): DataFieldRecord {
  return { dataFieldId: id, projectId: 'p', dataFieldType, params, createTime: '2026-01-01T00:00:00Z' };
}

const event = (agg: object) => ({ eventDataFieldParams: { eventSchemaName: 'buy', ...agg } }) as DataFieldParams;
const profile = (fields: Record<string, string>, userProperties: StoredProfile['userProperties'] = {}): StoredProfile => ({ fields, userProperties });

describe('utcDay', () => {
  it('is the UTC calendar day, whatever the offset the time was written with', () => {
    expect(utcDay(Date.parse('2026-03-10T23:59:59.999Z'))).toBe('20260310');
    expect(utcDay(Date.parse('2026-03-11T00:30:00+01:00'))).toBe('20260310');
    expect(utcDayOffset(Date.parse('2026-03-01T12:00:00Z'), -1)).toBe('20260228');
  });
});

describe('computeDataFieldValue: daily counts', () => {
  const last7 = field('7', event({ dailyCountAggregation: { windowName: 'LAST_7D' } }));

  it('sums the last n UTC calendar days, today included', () => {
    const p = profile({
      'dc:7:20260310': '2', // today
      'dc:7:20260304': '3', // 6 days ago: the 7th day of the window
      'dc:7:20260303': '100', // 7 days ago: outside
      'dc:7:20260311': '50', // tomorrow (client clock ahead): not yet in the window
      'dc:8:20260310': '9', // another field
    });
    expect(computeDataFieldValue(last7, p, NOW)).toEqual({ kind: 'integer', value: 5n });
  });

  it('moves with the clock passed in, not with when the state was written', () => {
    const p = profile({ 'dc:7:20260304': '3' });
    expect(computeDataFieldValue(last7, p, NOW)).toEqual({ kind: 'integer', value: 3n });
    expect(computeDataFieldValue(last7, p, NOW + DAY)).toEqual({ kind: 'integer', value: 0n });
  });

  it('is 0, not missing, for a user without events', () => {
    expect(computeDataFieldValue(last7, profile({}), NOW)).toEqual({ kind: 'integer', value: 0n });
  });

  it('LAST_1D is today only', () => {
    const today = field('1', event({ dailyCountAggregation: { windowName: 'LAST_1D' } }));
    expect(computeDataFieldValue(today, profile({ 'dc:1:20260310': '4', 'dc:1:20260309': '8' }), NOW)).toEqual({ kind: 'integer', value: 4n });
  });
});

describe('computeDataFieldValue: timestamps and days since', () => {
  const ts = Date.parse('2026-03-07T16:00:00Z');
  const p = profile({ 'ft:1': String(ts), 'lt:2': String(ts), 'ft:3': String(ts), 'lt:4': String(ts) });

  it('first/latest timestamps are TIMESTAMP values, missing when never seen', () => {
    const first = field('1', event({ firstTimestampAggregation: {} }), 'TIMESTAMP_SECONDS');
    const latest = field('2', event({ latestTimestampAggregation: {} }), 'TIMESTAMP_SECONDS');
    expect(computeDataFieldValue(first, p, NOW)).toEqual({ kind: 'timestamp', valueMs: ts });
    expect(computeDataFieldValue(latest, p, NOW)).toEqual({ kind: 'timestamp', valueMs: ts });
    expect(computeDataFieldValue(first, profile({}), NOW)).toBeUndefined();
  });

  it('days since is floor((now - ts) / 1 day), missing when never seen', () => {
    const sinceFirst = field('3', event({ daysSinceFirstTimestampAggregation: {} }));
    const sinceLast = field('4', event({ daysSinceLastTimestampAggregation: {} }));
    // 2 days 23.5 hours
    expect(computeDataFieldValue(sinceFirst, p, NOW)).toEqual({ kind: 'integer', value: 2n });
    expect(computeDataFieldValue(sinceLast, p, ts + 3 * DAY)).toEqual({ kind: 'integer', value: 3n });
    expect(computeDataFieldValue(sinceLast, profile({}), NOW)).toBeUndefined();
  });

  it('a timestamp slightly in the future is 0 days ago, never negative', () => {
    const sinceLast = field('4', event({ daysSinceLastTimestampAggregation: {} }));
    expect(computeDataFieldValue(sinceLast, profile({ 'lt:4': String(NOW + 3600_000) }), NOW)).toEqual({ kind: 'integer', value: 0n });
  });
});

describe('computeDataFieldValue: user properties', () => {
  const named = (name: string, type: DataFieldType): DataFieldRecord => ({
    dataFieldId: '9',
    projectId: 'p',
    name,
    dataFieldType: type,
    createTime: '2026-01-01T00:00:00Z',
  });

  it('converts the stored property to the field’s registered type', () => {
    const p = profile({}, { age: { longValue: '42' }, vip: { booleanValue: true }, plan: { stringValue: 'pro' } });
    expect(computeDataFieldValue(named('age', 'INTEGER'), p, NOW)).toEqual({ kind: 'integer', value: 42n });
    expect(computeDataFieldValue(named('vip', 'BOOLEAN'), p, NOW)).toEqual({ kind: 'boolean', value: true });
    expect(computeDataFieldValue(named('age', 'STRING'), p, NOW)).toEqual({ kind: 'string', value: '42' });
  });

  it('is missing when the user has no such property, or it does not fit the type', () => {
    const p = profile({}, { plan: { stringValue: 'pro' } });
    expect(computeDataFieldValue(named('age', 'INTEGER'), p, NOW)).toBeUndefined();
    expect(computeDataFieldValue(named('plan', 'INTEGER'), p, NOW)).toBeUndefined();
  });
});

describe('dataFieldJson / dataFieldValuesJson', () => {
  it('int64 as decimal strings, timestamps RFC 3339 UTC', () => {
    expect(dataFieldJson({ kind: 'integer', value: 9007199254740993n })).toBe('9007199254740993');
    expect(dataFieldJson({ kind: 'timestamp', valueMs: Date.parse('2026-03-07T16:00:00Z') })).toBe('2026-03-07T16:00:00.000Z');
    expect(dataFieldJson({ kind: 'boolean', value: false })).toBe(false);
    expect(dataFieldJson({ kind: 'double', value: 1.5 })).toBe(1.5);
  });

  it('keys values by dataFieldId and leaves out fields without a value', () => {
    const fields = [
      field('1', event({ dailyCountAggregation: { windowName: 'LAST_7D' } })),
      field('2', event({ latestTimestampAggregation: {} }), 'TIMESTAMP_SECONDS'),
    ];
    expect(dataFieldValuesJson(fields, profile({ 'dc:1:20260310': '3' }), NOW)).toEqual({ '1': '3' });
  });
});
