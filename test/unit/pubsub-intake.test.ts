import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { createProtoCodec, type LogEventsJson, type UserAttributeJson } from '../../shared/ingestion/proto.codec.js';
import { pubSubClientOptions, subscriptionPath } from '../../shared/platform/pubsub/pubsub.js';
import { checkTopicPath } from '../../shared/platform/pubsub/pubsub.js';
import {
  DATA_TYPE_HANDLERS,
  messageOutcome,
  pubsubJobId,
  type IncomingMessage,
  type MessageOutcome,
  type ParseContext,
} from '../../workers/ingestion/pubsub-intake.js';

const codec = createProtoCodec();
const rawSchema = protobuf.loadSync(fileURLToPath(new URL('../../shared/ingestion/proto/tds/v1/events.proto', import.meta.url)));
const NOW = Date.parse('2024-05-06T12:00:00Z');
const ctx: ParseContext = { sourceProjectId: 'shop', codec, nowMs: NOW, retentionDays: 400 };

function eventData(json: LogEventsJson, messageId = '1001'): IncomingMessage {
  return { messageId, dataType: 'EventData', data: codec.encodeLogEventsRequest(json) };
}

function userAttribute(json: UserAttributeJson, messageId = '2002'): IncomingMessage {
  return { messageId, dataType: 'UserAttribute', data: codec.encodeUserAttribute(json) };
}

function deadLetterReason(outcome: MessageOutcome): string {
  if (outcome.kind !== 'dead_letter') throw new Error(`expected a dead letter, got ${JSON.stringify(outcome)}`);
  return outcome.reason;
}

const purchase = { eventName: 'purchase', clientEventTimestamp: '2024-05-06T07:08:09.123Z' };

describe('data_type registry', () => {
  it('registers exactly the data types events.proto documents, once each', () => {
    const types = DATA_TYPE_HANDLERS.map((h) => h.dataType);
    expect([...types].sort()).toEqual(['EventData', 'UserAttribute']);
    expect(new Set(types).size).toBe(types.length);
  });

  it('routes each registered data_type to its own handler', () => {
    for (const h of DATA_TYPE_HANDLERS) {
      const out = messageOutcome({ messageId: '1', dataType: h.dataType, data: new Uint8Array() }, ctx, [h]);
      // Empty bytes decode to an empty payload, which fails validation in the handler, not in the lookup.
      expect(deadLetterReason(out)).toMatch(new RegExp(`^(invalid|undecodable) ${h.dataType}`));
    }
  });
});

describe('message → job', () => {
  it('maps EventData to an events job of the source project, keyed by the message for de-duplication', () => {
    const msg = eventData({
      projectId: 'shop',
      userId: 'u1',
      events: [
        {
          ...purchase,
          insertId: 'ins-1',
          eventProperties: { amount: { longValue: '9007199254740993' } },
          userProperties: { plan: { stringValue: 'gold' } },
          country: 'DE',
        },
        { eventName: 'view', clientEventTimestamp: '2024-05-06T08:00:00+02:00', serverReceivedTimestamp: '2024-05-06T06:00:01Z' },
      ],
    });
    const out = messageOutcome(msg, ctx);
    expect(out).toEqual({
      kind: 'queue',
      jobId: 'ps-shop-1001',
      job: {
        kind: 'events',
        projectId: 'shop',
        userId: 'u1',
        origin: { source: 'pubsub', messageId: '1001' },
        receivedAt: NOW,
        events: [
          {
            eventName: 'purchase',
            clientEventTs: Date.parse(purchase.clientEventTimestamp),
            insertId: 'ins-1',
            eventProperties: { amount: { longValue: '9007199254740993' } },
            userProperties: { plan: { stringValue: 'gold' } },
            country: 'DE',
          },
          { eventName: 'view', clientEventTs: Date.parse('2024-05-06T06:00:00Z'), serverReceivedTs: Date.parse('2024-05-06T06:00:01Z') },
        ],
      },
    });
  });

  it('maps UserAttribute to a userAttributes job; an unset project_id means the topic’s project', () => {
    const out = messageOutcome(
      userAttribute({
        userId: 'u1',
        userProperties: { plan: { stringValue: 'gold' }, seen: { timestampValue: '2024-05-01T00:00:00.500Z' } },
        updateTimestamp: '2024-05-06T10:00:00Z',
      }),
      ctx,
    );
    expect(out).toEqual({
      kind: 'queue',
      jobId: 'ps-shop-2002',
      job: {
        kind: 'userAttributes',
        projectId: 'shop',
        userId: 'u1',
        userProperties: { plan: { stringValue: 'gold' }, seen: { timestampValue: '2024-05-01T00:00:00.500Z' } },
        updateTs: Date.parse('2024-05-06T10:00:00Z'),
        messageId: '2002',
        receivedAt: NOW,
      },
    });
  });

  it('accepts a UserAttribute that names the source project', () => {
    const out = messageOutcome(userAttribute({ projectId: 'shop', userId: 'u1', userProperties: {}, updateTimestamp: '2024-05-06T10:00:00Z' }), ctx);
    expect(out.kind).toBe('queue');
  });

  it('builds job ids BullMQ accepts as custom ids (no ":"), one per project and message', () => {
    expect(pubsubJobId('shop', '17')).toBe('ps-shop-17');
    expect(pubsubJobId('shop', '17')).not.toContain(':');
    expect(pubsubJobId('shop', '17')).not.toBe(pubsubJobId('shop', '18'));
    expect(pubsubJobId('shop', '17')).not.toBe(pubsubJobId('shop2', '17'));
  });
});

describe('dead-letter reasons', () => {
  const valid = eventData({ projectId: 'shop', userId: 'u1', events: [purchase] });

  it('a missing or empty data_type', () => {
    expect(deadLetterReason(messageOutcome({ ...valid, dataType: undefined }, ctx))).toBe('missing data_type attribute; expected EventData or UserAttribute');
    expect(deadLetterReason(messageOutcome({ ...valid, dataType: '' }, ctx))).toMatch(/^missing data_type/);
  });

  it('an unknown data_type (matching is exact)', () => {
    expect(deadLetterReason(messageOutcome({ ...valid, dataType: 'eventdata' }, ctx))).toBe(
      'unknown data_type "eventdata"; expected EventData or UserAttribute',
    );
  });

  it('bytes that are not a protobuf of the named type', () => {
    const garbage = { messageId: '9', dataType: 'EventData', data: new Uint8Array([0xff, 0xff, 0xff, 0xff, 0x0f]) };
    expect(deadLetterReason(messageOutcome(garbage, ctx))).toMatch(/^undecodable EventData: /);
    expect(deadLetterReason(messageOutcome({ ...garbage, dataType: 'UserAttribute' }, ctx))).toMatch(/^undecodable UserAttribute: /);
  });

  it('a string that is not UTF-8 (a surrogate encoded on its own) is undecodable: protobuf decoding never yields an unpaired surrogate', () => {
    // proto3 strings are checked (utf8_validation VERIFY), whether the bytes come as a Buffer or a plain Uint8Array
    const cases: [string, LogEventsJson][] = [
      ['userId', { projectId: 'shop', userId: 'ABC', events: [purchase] }],
      ['eventName', { projectId: 'shop', userId: 'u1', events: [{ ...purchase, eventName: 'ABC' }] }],
      ['a property value', { projectId: 'shop', userId: 'u1', events: [{ ...purchase, eventProperties: { p: { stringValue: 'ABC' } } }] }],
    ];
    for (const [field, json] of cases) {
      const bytes = Buffer.from(codec.encodeLogEventsRequest(json));
      const at = bytes.indexOf('ABC');
      bytes.set([0xed, 0xa0, 0x80], at); // U+D800 in the bytes UTF-8 would use, were it allowed
      for (const data of [bytes, new Uint8Array(bytes)]) {
        const out = messageOutcome({ messageId: '7', dataType: 'EventData', data }, ctx);
        expect(deadLetterReason(out), field).toMatch(/^undecodable EventData: .*utf-8/i);
      }
    }
  });

  it('a refused payload that could be decoded names its users (DeleteUserData finds its dead letter)', () => {
    const out = messageOutcome(
      eventData({
        projectId: 'shop',
        userId: 'u1',
        events: [
          { ...purchase, preLoginTempUserId: 't1' },
          { ...purchase, eventName: '' },
        ],
      }),
      ctx,
    );
    expect(out).toMatchObject({ kind: 'dead_letter', userIds: ['u1', 't1'] });
    const other = messageOutcome(userAttribute({ projectId: 'other', userId: 'u2', userProperties: {}, updateTimestamp: '2024-05-06T10:00:00Z' }), ctx);
    expect(other).toMatchObject({ kind: 'dead_letter', userIds: ['u2'] });
    const garbage = messageOutcome({ messageId: '9', dataType: 'EventData', data: new Uint8Array([0xff, 0xff, 0xff, 0xff, 0x0f]) }, ctx);
    expect(garbage).toEqual({ kind: 'dead_letter', reason: expect.any(String) });
  });

  it('a payload naming another project than the source’s', () => {
    expect(deadLetterReason(messageOutcome(eventData({ projectId: 'other', userId: 'u1', events: [purchase] }), ctx))).toBe(
      'the payload names project "other", but the topic belongs to project "shop"',
    );
    expect(
      deadLetterReason(messageOutcome(userAttribute({ projectId: 'other', userId: 'u1', userProperties: {}, updateTimestamp: '2024-05-06T10:00:00Z' }), ctx)),
    ).toMatch(/names project "other"/);
  });

  it('EventData that fails the LogEvents validation, with the field paths of the HTTP API', () => {
    const reason = (json: LogEventsJson) => deadLetterReason(messageOutcome(eventData(json), ctx));
    expect(reason({ projectId: '', userId: 'u1', events: [purchase] })).toMatch(/^invalid EventData: projectId: /);
    expect(reason({ projectId: 'shop', userId: '', events: [purchase] })).toMatch(/^invalid EventData: userId: /);
    expect(reason({ projectId: 'shop', userId: 'u1', events: [] })).toMatch(/^invalid EventData: events: /);
    expect(reason({ projectId: 'shop', userId: 'u1', events: [purchase, { ...purchase, eventName: '' }] })).toMatch(
      /^invalid EventData: events\[1\]\.eventName: /,
    );
    expect(reason({ projectId: 'shop', userId: 'u1', events: [{ ...purchase, clientEventTimestamp: '2024-05-07T12:00:01Z' }] })).toMatch(
      /events\[0\]\.clientEventTimestamp: more than 24 hours in the future/,
    );
    expect(reason({ projectId: 'shop', userId: 'u1', events: [{ ...purchase, clientEventTimestamp: '1850-01-01T00:00:00Z' }] })).toMatch(
      /more than 400 days in the past/,
    );
  });

  it('an EventData event without a client timestamp', () => {
    // The codec refuses an event without the required timestamp: undecodable, never a job.
    const withoutTs = { messageId: '3', dataType: 'EventData', data: encodeWithoutTimestamp() };
    expect(deadLetterReason(messageOutcome(withoutTs, ctx))).toMatch(/client_event_timestamp is missing/);
  });

  it('a UserAttribute without a user, or updated more than 24 h in the future', () => {
    const reason = (json: UserAttributeJson) => deadLetterReason(messageOutcome(userAttribute(json), ctx));
    expect(reason({ userId: '', userProperties: {}, updateTimestamp: '2024-05-06T10:00:00Z' })).toMatch(/^invalid UserAttribute: userId: /);
    expect(reason({ userId: 'u1', userProperties: {}, updateTimestamp: '2024-05-07T12:00:01Z' })).toBe(
      'invalid UserAttribute: updateTimestamp: more than 24 hours in the future',
    );
    expect(messageOutcome(userAttribute({ userId: 'u1', userProperties: {}, updateTimestamp: '2024-05-07T12:00:00Z' }), ctx).kind).toBe('queue');
  });

  it('keeps reasons short however many fields are wrong', () => {
    const events = Array.from({ length: 1000 }, () => ({ ...purchase, eventName: '' }));
    expect(deadLetterReason(messageOutcome(eventData({ projectId: 'shop', userId: 'u1', events }), ctx)).length).toBeLessThanOrEqual(2000);
  });
});

describe('sources and the client', () => {
  it('accepts only full topic paths', () => {
    expect(() => checkTopicPath('projects/customer-1/topics/events')).not.toThrow();
    expect(() => checkTopicPath('projects/example.com:proj/topics/ev.ents-1')).not.toThrow();
    for (const bad of [
      'events',
      'projects/p/topics/',
      'projects//topics/events',
      'projects/p/subscriptions/events',
      'projects/p/topics/1events',
      'projects/p/topics/events/x',
    ]) {
      expect(() => checkTopicPath(bad), bad).toThrow(/projects\/<project>\/topics\/<topic>/);
    }
  });

  it('names the subscription after the project, in the service’s GCP project', () => {
    expect(subscriptionPath('tds-prod', 'shop')).toBe('projects/tds-prod/subscriptions/tds-shop');
  });

  it('builds emulator options from PUBSUB_EMULATOR_HOST that never look for cloud credentials', () => {
    expect(pubSubClientOptions({ pubsubProjectId: 'tds-local', pubsubEmulatorHost: '127.0.0.1:8085' })).toEqual({
      projectId: 'tds-local',
      apiEndpoint: '127.0.0.1:8085',
      emulatorMode: true,
      universeDomain: 'googleapis.com',
    });
    expect(pubSubClientOptions({ pubsubProjectId: 'tds-prod', pubsubEmulatorHost: undefined })).toEqual({ projectId: 'tds-prod' });
  });
});

/** A LogEventsRequest whose event lacks client_event_timestamp (the typed encoder always sets it). */
function encodeWithoutTimestamp(): Uint8Array {
  const type = rawSchema.lookupType('tds.v1.LogEventsRequest');
  return type.encode(type.fromObject({ projectId: 'shop', userId: 'u1', events: [{ eventName: 'purchase' }] })).finish();
}
