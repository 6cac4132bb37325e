import { describe, expect, it } from 'vitest';
import { eventOps, interactionOps, propertyValuesEqual } from '../../shared/aggregation/data-field-ops.js';
import type { DataFieldParams, DataFieldRecord } from '../../shared/aggregation/index.js';
import type { EventPayload, InteractionJob } from '../../shared/ingestion/jobs.js';

const TS = Date.parse('2026-03-10T23:30:00-02:00'); // 2026-03-11 01:30 UTC

function field(id: string, params: DataFieldParams): DataFieldRecord {
  return { dataFieldId: id, projectId: 'p', dataFieldType: 'INTEGER', params, createTime: '2026-01-01T00:00:00Z' };
}

const LAST_7D = { dailyCountAggregation: { windowName: 'LAST_7D' } };
const ev = (extra: object = {}, agg: object = LAST_7D) => ({ eventDataFieldParams: { eventSchemaName: 'buy', ...agg, ...extra } }) as DataFieldParams;
const event = (e: Partial<EventPayload> = {}): EventPayload => ({ eventName: 'buy', clientEventTs: TS, ...e });

describe('eventOps', () => {
  it('counts a matching event on the UTC day of its clientEventTimestamp', () => {
    expect(eventOps([field('1', ev())], event())).toEqual([['inc', 'dc:1:20260311', 1]]);
  });

  it('ignores events of another name and fields without an aggregation', () => {
    const userProperty: DataFieldRecord = { dataFieldId: '2', projectId: 'p', name: 'buy', dataFieldType: 'STRING', createTime: '2026-01-01T00:00:00Z' };
    expect(eventOps([field('1', ev()), userProperty], event({ eventName: 'view' }))).toEqual([]);
    expect(eventOps([userProperty], event())).toEqual([]);
  });

  it('keeps the first timestamp with min and the latest with max, for the days-since variants too', () => {
    const fields = [
      field('1', ev({}, { firstTimestampAggregation: {} })),
      field('2', ev({}, { latestTimestampAggregation: {} })),
      field('3', ev({}, { daysSinceFirstTimestampAggregation: {} })),
      field('4', ev({}, { daysSinceLastTimestampAggregation: {} })),
    ];
    expect(eventOps(fields, event())).toEqual([
      ['min', 'ft:1', TS],
      ['max', 'lt:2', TS],
      ['min', 'ft:3', TS],
      ['max', 'lt:4', TS],
    ]);
  });

  it('with a property filter, counts only events whose properties equal every given value', () => {
    const f = field('5', ev({ propertyValueByPropertyName: { plan: { stringValue: 'pro' }, seats: { longValue: '3' } } }));
    expect(eventOps([f], event({ eventProperties: { plan: { stringValue: 'pro' }, seats: { longValue: '3' }, other: { booleanValue: true } } }))).toHaveLength(
      1,
    );
    expect(eventOps([f], event({ eventProperties: { plan: { stringValue: 'pro' } } }))).toEqual([]);
    expect(eventOps([f], event({ eventProperties: { plan: { stringValue: 'Pro' }, seats: { longValue: '3' } } }))).toEqual([]);
    expect(eventOps([f], event({ eventProperties: { plan: { stringValue: 'pro' }, seats: { doubleValue: 3 } } }))).toEqual([]);
  });
});

describe('propertyValuesEqual', () => {
  it('compares int64 as integers and timestamps as instants', () => {
    expect(propertyValuesEqual({ longValue: '9007199254740993' }, { longValue: '9007199254740993' })).toBe(true);
    expect(propertyValuesEqual({ longValue: '9007199254740993' }, { longValue: '9007199254740992' })).toBe(false);
    expect(propertyValuesEqual({ timestampValue: '2026-01-01T00:00:00Z' }, { timestampValue: '2026-01-01T00:00:00.000Z' })).toBe(true);
    expect(propertyValuesEqual({ timestampValue: '2026-01-01T00:00:00Z' }, { timestampValue: '2026-01-01T00:00:01.000Z' })).toBe(false);
  });

  it('a value of another member never matches', () => {
    expect(propertyValuesEqual({ booleanValue: true }, { stringValue: 'true' })).toBe(false);
    expect(propertyValuesEqual({ stringValue: 'x' }, undefined)).toBe(false);
  });
});

describe('interactionOps', () => {
  const job = (j: Partial<InteractionJob> = {}): InteractionJob => ({
    kind: 'interaction',
    projectId: 'p',
    userId: 'u',
    treatmentId: '11',
    treatmentTrackingId: '11_r1',
    surface: 'home',
    interactionType: 'CLICKED',
    interactionTimeMicros: String(TS * 1000 + 999),
    receivedAt: TS,
    ...j,
  });
  const tr = (extra: object, agg: object = LAST_7D) =>
    ({ treatmentDataFieldParams: { treatmentInteractionType: 'CLICKED', ...agg, ...extra } }) as DataFieldParams;

  it('counts interactions of the field’s type on the UTC day of the interaction', () => {
    expect(interactionOps([field('1', tr({}))], job())).toEqual([['inc', 'dc:1:20260311', 1]]);
    expect(interactionOps([field('1', tr({}))], job({ interactionType: 'VIEWED' }))).toEqual([]);
  });

  it('honours the treatmentId and surface scopes (surfaceId is the surface name)', () => {
    const fields = [
      field('1', tr({ treatmentId: '11' })),
      field('2', tr({ treatmentId: '12' })),
      field('3', tr({ surfaceName: 'home' })),
      field('4', tr({ surfaceId: 'home' })),
      field('5', tr({ surfaceName: 'inbox' })),
    ];
    expect(interactionOps(fields, job()).map((op) => op[1])).toEqual(['dc:1:20260311', 'dc:3:20260311', 'dc:4:20260311']);
  });

  it('distinct counts go through a per-tracking-id marker', () => {
    expect(interactionOps([field('6', tr({ isDistinctInteraction: true }))], job())).toEqual([['incnew', 'dm:6:11_r1', 'dc:6:20260311', 1]]);
  });

  it('timestamps are the interaction time in milliseconds', () => {
    expect(interactionOps([field('7', tr({}, { latestTimestampAggregation: {} }))], job())).toEqual([['max', 'lt:7', TS]]);
  });

  it('SENT counts DELIVERY_SENT interactions', () => {
    const sent = field('8', tr({ treatmentInteractionType: 'SENT' }));
    expect(interactionOps([sent], job({ interactionType: 'DELIVERY_SENT' }))).toHaveLength(1);
    expect(interactionOps([sent], job({ interactionType: 'CLICKED' }))).toEqual([]);
  });
});
