import { describe, expect, it } from 'vitest';
import {
  aggregationOf,
  aggregationResultType,
  canonicalTimestamp,
  normalizeDataFieldParams,
  parseWindowDays,
  stableStringify,
  type DataFieldParamsInput,
} from '../../shared/aggregation/data-field-params.js';
import { ApiError } from '../../shared/platform/errors.js';

/** The error thrown by `fn`, which must be a 400 INVALID_ARGUMENT. */
function invalid(fn: () => unknown): ApiError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError);
    const e = err as ApiError;
    expect(e.httpStatus).toBe(400);
    expect(e.code).toBe('INVALID_ARGUMENT');
    return e;
  }
  throw new Error('expected an INVALID_ARGUMENT error');
}

const key = (input: DataFieldParamsInput) => normalizeDataFieldParams(input, 'p').key;

describe('parseWindowDays', () => {
  it.each([
    ['LAST_1D', 1],
    ['LAST_14D', 14],
    ['LAST_365D', 365],
  ])('%s → %i days', (name, days) => {
    expect(parseWindowDays(name)).toBe(days);
  });

  it.each(['LAST_0D', 'LAST_366D', 'LAST_999D', 'LAST_07D', 'last_7d', 'LAST_7', 'LAST_D', 'LAST_-1D', '', 'LAST_7D '])('rejects %j', (name) => {
    const e = invalid(() => parseWindowDays(name, 'x.windowName'));
    expect(e.details).toEqual([expect.objectContaining({ field: 'x.windowName' })]);
  });
});

describe('normalizeDataFieldParams: idempotency key', () => {
  const event: DataFieldParamsInput = {
    eventDataFieldParams: {
      eventSchemaName: 'purchase',
      propertyValueByPropertyName: { sku: { stringValue: 'a1' }, qty: { longValue: 5 } },
      dailyCountAggregation: { windowName: 'LAST_7D' },
    },
  };

  it('ignores key order at every level', () => {
    const reordered = {
      eventDataFieldParams: {
        dailyCountAggregation: { windowName: 'LAST_7D' },
        propertyValueByPropertyName: { qty: { longValue: 5 }, sku: { stringValue: 'a1' } },
        eventSchemaName: 'purchase',
      },
    } as DataFieldParamsInput;
    expect(key(reordered)).toBe(key(event));
  });

  it('treats longValue 5, "5" and "005" as one value', () => {
    const asString = structuredClone(event);
    asString.eventDataFieldParams!.propertyValueByPropertyName!.qty = { longValue: '5' };
    const padded = structuredClone(event);
    padded.eventDataFieldParams!.propertyValueByPropertyName!.qty = { longValue: '005' };
    expect(key(asString)).toBe(key(event));
    expect(key(padded)).toBe(key(event));
  });

  it('distinguishes values, types, windows, event names and aggregations', () => {
    const variants: DataFieldParamsInput[] = [
      { eventDataFieldParams: { ...event.eventDataFieldParams!, propertyValueByPropertyName: { sku: { stringValue: 'a1' }, qty: { longValue: 6 } } } },
      { eventDataFieldParams: { ...event.eventDataFieldParams!, propertyValueByPropertyName: { sku: { stringValue: 'a1' }, qty: { doubleValue: 5 } } } },
      { eventDataFieldParams: { ...event.eventDataFieldParams!, dailyCountAggregation: { windowName: 'LAST_8D' } } },
      { eventDataFieldParams: { ...event.eventDataFieldParams!, eventSchemaName: 'refund' } },
      {
        eventDataFieldParams: {
          eventSchemaName: 'purchase',
          propertyValueByPropertyName: event.eventDataFieldParams!.propertyValueByPropertyName,
          latestTimestampAggregation: {},
        },
      },
      { eventDataFieldParams: { eventSchemaName: 'purchase', dailyCountAggregation: { windowName: 'LAST_7D' } } },
    ];
    const keys = new Set([key(event), ...variants.map(key)]);
    expect(keys.size).toBe(variants.length + 1);
  });

  it('treats an empty property filter as no filter and isDistinctInteraction false as unset', () => {
    expect(key({ eventDataFieldParams: { eventSchemaName: 'e', propertyValueByPropertyName: {}, firstTimestampAggregation: {} } })).toBe(
      key({ eventDataFieldParams: { eventSchemaName: 'e', firstTimestampAggregation: {} } }),
    );
    const base = { treatmentInteractionType: 'CLICKED' as const, dailyCountAggregation: { windowName: 'LAST_1D' } };
    expect(key({ treatmentDataFieldParams: { ...base, isDistinctInteraction: false } })).toBe(key({ treatmentDataFieldParams: base }));
    expect(key({ treatmentDataFieldParams: { ...base, isDistinctInteraction: true } })).not.toBe(key({ treatmentDataFieldParams: base }));
  });

  it('treats treatmentId 12 and "12" alike, and timestamps of one instant alike', () => {
    const t = (treatmentId: number | string) =>
      key({ treatmentDataFieldParams: { treatmentInteractionType: 'VIEWED', treatmentId, daysSinceLastTimestampAggregation: {} } });
    expect(t(12)).toBe(t('12'));
    expect(t(12)).not.toBe(t(13));
    const ts = (timestampValue: string) =>
      key({ eventDataFieldParams: { eventSchemaName: 'e', propertyValueByPropertyName: { at: { timestampValue } }, firstTimestampAggregation: {} } });
    expect(ts('2024-05-01T12:00:00+02:00')).toBe(ts('2024-05-01T10:00:00.000Z'));
    expect(ts('2024-05-01T12:00:00+02:00')).not.toBe(ts('2024-05-01T12:00:00Z'));
  });

  it('stores the canonical form and echoes int64 values as strings', () => {
    const n = normalizeDataFieldParams(event, 'dataFieldParams[0]');
    expect(n.kind).toBe('event');
    expect(n.canonical).toEqual({
      eventDataFieldParams: {
        eventSchemaName: 'purchase',
        propertyValueByPropertyName: { sku: { stringValue: 'a1' }, qty: { longValue: '5' } },
        dailyCountAggregation: { windowName: 'LAST_7D' },
      },
    });
    expect(n.echo).toEqual(n.canonical);
    expect(event.eventDataFieldParams!.propertyValueByPropertyName!.qty).toEqual({ longValue: 5 });
  });

  it('keeps a user attribute as its property name', () => {
    const n = normalizeDataFieldParams({ userAttributeDataFieldParams: { propertyName: 'tier' } }, 'p');
    expect(n.kind).toBe('userAttribute');
    expect(n.canonical).toEqual({ userAttributeDataFieldParams: { propertyName: 'tier' } });
    expect(aggregationOf(n.canonical)).toBeUndefined();
  });
});

describe('normalizeDataFieldParams: errors name the field', () => {
  const field = (input: unknown) => invalid(() => normalizeDataFieldParams(input as DataFieldParamsInput, 'dataFieldParams[3]')).details[0].field;

  it('requires exactly one member', () => {
    expect(field({})).toBe('dataFieldParams[3]');
    expect(field({ userAttributeDataFieldParams: { propertyName: 'a' }, eventDataFieldParams: { eventSchemaName: 'e', firstTimestampAggregation: {} } })).toBe(
      'dataFieldParams[3]',
    );
  });

  it('requires exactly one aggregation', () => {
    expect(field({ eventDataFieldParams: { eventSchemaName: 'e' } })).toBe('dataFieldParams[3].eventDataFieldParams');
    expect(field({ treatmentDataFieldParams: { treatmentInteractionType: 'VIEWED', firstTimestampAggregation: {}, latestTimestampAggregation: {} } })).toBe(
      'dataFieldParams[3].treatmentDataFieldParams',
    );
  });

  it('checks the window, the scope, property values and names', () => {
    expect(field({ eventDataFieldParams: { eventSchemaName: 'e', dailyCountAggregation: { windowName: 'LAST_400D' } } })).toBe(
      'dataFieldParams[3].eventDataFieldParams.dailyCountAggregation.windowName',
    );
    expect(field({ treatmentDataFieldParams: { treatmentInteractionType: 'VIEWED', treatmentId: '1', surfaceName: 's', firstTimestampAggregation: {} } })).toBe(
      'dataFieldParams[3].treatmentDataFieldParams',
    );
    expect(field({ treatmentDataFieldParams: { treatmentInteractionType: 'LIKED', firstTimestampAggregation: {} } })).toBe(
      'dataFieldParams[3].treatmentDataFieldParams.treatmentInteractionType',
    );
    expect(
      field({
        eventDataFieldParams: { eventSchemaName: 'e', propertyValueByPropertyName: { p: { stringValue: 'a', longValue: 1 } }, firstTimestampAggregation: {} },
      }),
    ).toBe('dataFieldParams[3].eventDataFieldParams.propertyValueByPropertyName.p');
    expect(
      field({ eventDataFieldParams: { eventSchemaName: 'e', propertyValueByPropertyName: { p: { longValue: 2 ** 60 } }, firstTimestampAggregation: {} } }),
    ).toBe('dataFieldParams[3].eventDataFieldParams.propertyValueByPropertyName.p.longValue');
    expect(field({ userAttributeDataFieldParams: { propertyName: 'UserTier' } })).toBe('dataFieldParams[3].userAttributeDataFieldParams.propertyName');
  });
});

describe('result types', () => {
  it.each([
    [{ dailyCountAggregation: { windowName: 'LAST_30D' } }, 'INTEGER', 30],
    [{ firstTimestampAggregation: {} }, 'TIMESTAMP_SECONDS', undefined],
    [{ latestTimestampAggregation: {} }, 'TIMESTAMP_SECONDS', undefined],
    [{ daysSinceFirstTimestampAggregation: {} }, 'INTEGER', undefined],
    [{ daysSinceLastTimestampAggregation: {} }, 'INTEGER', undefined],
  ])('%j → %s', (agg, type, windowDays) => {
    const n = normalizeDataFieldParams({ eventDataFieldParams: { eventSchemaName: 'e', ...agg } }, 'p');
    const spec = aggregationOf(n.canonical)!;
    expect(spec.windowDays).toBe(windowDays);
    expect(aggregationResultType(spec.key)).toBe(type);
  });
});

describe('helpers', () => {
  it('canonicalTimestamp converts to UTC and keeps sub-millisecond digits', () => {
    expect(canonicalTimestamp('f', '2024-01-01T01:00:00.123456+01:00')).toBe('2024-01-01T00:00:00.123456Z');
    expect(canonicalTimestamp('f', '2024-01-01t00:00:00.500z')).toBe('2024-01-01T00:00:00.5Z');
    expect(canonicalTimestamp('f', '2024-01-01T00:00:00.000Z')).toBe('2024-01-01T00:00:00Z');
    invalid(() => canonicalTimestamp('f', '2024-01-01 00:00:00'));
  });

  it('stableStringify sorts keys and drops undefined members', () => {
    expect(stableStringify({ b: [{ d: 1, c: 2 }], a: undefined, e: 'x' })).toBe('{"b":[{"c":2,"d":1}],"e":"x"}');
  });
});
