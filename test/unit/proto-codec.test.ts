import protobuf from 'protobufjs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createProtoCodec, ProtoDecodeError, type LogEventsJson, type UserAttributeJson } from '../../shared/ingestion/proto.codec.js';

const codec = createProtoCodec();

/** Raw access to the schema, to build messages the typed encoder refuses to produce. */
const root = protobuf.loadSync(fileURLToPath(new URL('../../shared/ingestion/proto/tds/v1/events.proto', import.meta.url)));
const rawLogEvents = root.lookupType('tds.v1.LogEventsRequest');

function roundTrip(json: LogEventsJson): LogEventsJson {
  return codec.decodeLogEventsRequest(codec.encodeLogEventsRequest(json));
}

const baseEvent = { eventName: 'purchase', clientEventTimestamp: '2024-05-06T07:08:09Z' };

describe('proto codec: LogEventsRequest', () => {
  it('round-trips every PropertyValue kind, including falsy members of the oneof', () => {
    const eventProperties = {
      count: { longValue: '-42' },
      price: { doubleValue: 19.99 },
      zero: { doubleValue: 0 },
      sku: { stringValue: 'A-1' },
      empty: { stringValue: '' },
      vip: { booleanValue: true },
      off: { booleanValue: false },
      at: { timestampValue: '2023-12-31T23:59:59Z' },
    };
    const out = roundTrip({ projectId: 'p1', userId: 'u1', events: [{ ...baseEvent, eventProperties }] });
    expect(out.events[0].eventProperties).toEqual(eventProperties);
  });

  it('keeps int64 values beyond 2^53 exact as decimal strings', () => {
    const big = { max: { longValue: '9223372036854775807' }, min: { longValue: '-9223372036854775808' }, odd: { longValue: '9007199254740993' } };
    const out = roundTrip({ projectId: 'p1', userId: 'u1', events: [{ ...baseEvent, userProperties: big }] });
    expect(out.events[0].userProperties).toEqual(big);
  });

  it('writes timestamps as RFC 3339 UTC with Z, keeping sub-second digits', () => {
    const out = roundTrip({
      projectId: 'p1',
      userId: 'u1',
      events: [{ eventName: 'e', clientEventTimestamp: '2024-01-02T03:04:05.123456789Z', serverReceivedTimestamp: '2024-01-02T05:04:05.5+02:00' }],
    });
    expect(out.events[0].clientEventTimestamp).toBe('2024-01-02T03:04:05.123456789Z');
    expect(out.events[0].serverReceivedTimestamp).toBe('2024-01-02T03:04:05.500Z');
  });

  it('carries insert_id when present and omits it when absent or empty', () => {
    const out = roundTrip({
      projectId: 'p1',
      userId: 'u1',
      events: [{ ...baseEvent, insertId: 'ins-1' }, { ...baseEvent }, { ...baseEvent, insertId: '' }],
    });
    expect(out.events[0].insertId).toBe('ins-1');
    expect(out.events[1]).not.toHaveProperty('insertId');
    expect(out.events[2]).not.toHaveProperty('insertId');
  });

  it('decodes the full ExternalEvent shape and leaves unset optional fields out', () => {
    const full = {
      ...baseEvent,
      serverReceivedTimestamp: '2024-05-06T07:08:10Z',
      insertId: 'i',
      sessionId: 's',
      preLoginTempUserId: 'anon-1',
      country: 'DE',
      region: 'BE',
      city: 'Berlin',
      ipAddress: '203.0.113.7',
      deviceId: 'd',
      appVersionId: '1.2.3',
    };
    const out = roundTrip({ projectId: 'p1', userId: 'u1', events: [full, { ...baseEvent, sessionId: '' }] });
    expect(out).toEqual({ projectId: 'p1', userId: 'u1', events: [full, baseEvent] });
  });

  it('keeps empty required strings so request validation can report them', () => {
    const buf = rawLogEvents.encode(rawLogEvents.fromObject({ events: [{ clientEventTimestamp: { seconds: 1, nanos: 0 } }] })).finish();
    expect(codec.decodeLogEventsRequest(buf)).toEqual({
      projectId: '',
      userId: '',
      events: [{ eventName: '', clientEventTimestamp: '1970-01-01T00:00:01Z' }],
    });
  });

  it('rejects an event without client_event_timestamp, naming the field', () => {
    const buf = rawLogEvents
      .encode(rawLogEvents.fromObject({ projectId: 'p', userId: 'u', events: [{ eventName: 'ok', clientEventTimestamp: { seconds: 1 } }, { eventName: 'x' }] }))
      .finish();
    expect(() => codec.decodeLogEventsRequest(buf)).toThrow(/events\[1\]\.client_event_timestamp is missing/);
  });

  it('rejects a PropertyValue with no member set', () => {
    const buf = rawLogEvents
      .encode(
        rawLogEvents.fromObject({
          projectId: 'p',
          userId: 'u',
          events: [{ eventName: 'x', clientEventTimestamp: { seconds: 1 }, eventProperties: { k: {} } }],
        }),
      )
      .finish();
    expect(() => codec.decodeLogEventsRequest(buf)).toThrow(ProtoDecodeError);
    expect(() => codec.decodeLogEventsRequest(buf)).toThrow(/event_properties\["k"\] has no value set/);
  });

  it('rejects a non-finite double, which the JSON shape cannot carry', () => {
    const buf = rawLogEvents
      .encode(
        rawLogEvents.fromObject({
          projectId: 'p',
          userId: 'u',
          events: [{ eventName: 'x', clientEventTimestamp: { seconds: 1 }, eventProperties: { k: { doubleValue: NaN } } }],
        }),
      )
      .finish();
    expect(() => codec.decodeLogEventsRequest(buf)).toThrow(/double_value is not a finite number/);
  });

  it('throws ProtoDecodeError with a readable reason for garbage bytes', () => {
    for (const garbage of [Buffer.from('hello, this is not protobuf'), new Uint8Array([0xff, 0xff, 0xff, 0x01, 0x02]), new Uint8Array([0x1a, 0x05, 0x0a])]) {
      let caught: unknown;
      try {
        codec.decodeLogEventsRequest(garbage);
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(ProtoDecodeError);
      const err = caught as ProtoDecodeError;
      expect(err.messageType).toBe('LogEventsRequest');
      expect(err.isRetriable).toBe(false);
      expect(err.message).toMatch(/^cannot decode LogEventsRequest: .+/);
    }
  });

  it('rejects a Timestamp outside the RFC 3339 range', () => {
    const buf = rawLogEvents
      .encode(
        rawLogEvents.fromObject({ projectId: 'p', userId: 'u', events: [{ eventName: 'x', clientEventTimestamp: { seconds: '999999999999', nanos: 0 } }] }),
      )
      .finish();
    expect(() => codec.decodeLogEventsRequest(buf)).toThrow(ProtoDecodeError);
  });
});

describe('proto codec: UserAttribute', () => {
  const attribute: UserAttributeJson = {
    userId: 'u1',
    userProperties: { plan: { stringValue: 'gold' }, logins: { longValue: '1234567890123456789' }, since: { timestampValue: '2020-02-29T12:00:00Z' } },
    updateTimestamp: '2024-05-06T07:08:09.250Z',
  };

  it('round-trips with and without the optional project id', () => {
    expect(codec.decodeUserAttribute(codec.encodeUserAttribute(attribute))).toEqual(attribute);
    const withProject = { ...attribute, projectId: 'p1' };
    expect(codec.decodeUserAttribute(codec.encodeUserAttribute(withProject))).toEqual(withProject);
  });

  it('gives an empty property map rather than none', () => {
    const out = codec.decodeUserAttribute(codec.encodeUserAttribute({ ...attribute, userProperties: {} }));
    expect(out.userProperties).toEqual({});
  });

  it('rejects a missing update_timestamp and garbage bytes with ProtoDecodeError', () => {
    const noTime = root.lookupType('tds.v1.UserAttribute');
    const buf = noTime.encode(noTime.fromObject({ userId: 'u1' })).finish();
    expect(() => codec.decodeUserAttribute(buf)).toThrow(/cannot decode UserAttribute: update_timestamp is missing/);
    expect(() => codec.decodeUserAttribute(new Uint8Array([0x0a, 0x7f, 0x41]))).toThrow(ProtoDecodeError);
  });
});
