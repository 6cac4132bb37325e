import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createProjectWithKeys, createTestApp, type ProjectKeys, type TestApp } from '../helpers/context.js';
import { createProtoCodec } from '../../shared/ingestion/proto.codec.js';
import { messageOutcome, type ParseContext } from '../../workers/ingestion/pubsub-intake.js';
import { attack, expectRejectedWithoutStall, listen } from './attack.js';

/*
 * Attack class: timestamps. One strict RFC 3339 parser everywhere (an impossible date is a
 * 400, not a roll-over into the next month). The times that pick a ClickHouse partition
 * (tables are partitioned by month of the event's time) lie within [now − RETENTION_DAYS,
 * now + 24 h], so no request can create partitions by the hundred; times inside property values
 * are not partition keys and may be anything from 1900 to 2299.
 */

const DAY = 86_400_000;
const HOUR = 3_600_000;
const iso = (ms: number) => new Date(ms).toISOString();

let t: TestApp;
let k: ProjectKeys;
let treatmentId: string;
let timestampFieldId: string;

async function ok(op: string, body: Record<string, unknown>): Promise<any> {
  const r = await call(t, op, k.management, { projectId: k.projectId, ...body });
  if (r.status !== 200) throw new Error(`${op}: ${JSON.stringify(r.body)}`);
  return r.body;
}

beforeAll(async () => {
  t = await createTestApp();
  k = await createProjectWithKeys(t);
  await ok('InsertSurface', { name: 'home' });
  await ok('InsertTreatmentType', {
    treatmentTypeName: 'banner',
    lastModifiedBy: 't',
    surfaces: [{ surfaceName: 'home' }],
    contentFieldTypes: [{ fieldName: 'body', maximumLengthAllowed: 100 }],
  });
  timestampFieldId = (await ok('GetDataFields', { dataFieldParams: [{ eventDataFieldParams: { eventSchemaName: 'signup', latestTimestampAggregation: {} } }] }))
    .dataFields[0].dataFieldId;
  const inserted = await ok('InsertTreatment', {
    name: 'x',
    description: 'd',
    treatmentTypeName: 'banner',
    lastModifiedBy: 't',
    startTimestamp: '2026-01-01T00:00:00Z',
    shouldPublish: true,
    content: { languageAgnosticContentFields: [{ fieldName: 'body', stringValue: 'hi' }] },
  });
  treatmentId = inserted.treatment.treatmentId;
});

afterAll(async () => {
  await t?.close();
});

const event = (over: Record<string, unknown> = {}) => ({ eventName: 'e', clientEventTimestamp: iso(Date.now()), ...over });
const logEvents = (events: unknown[]) => call(t, 'LogEvents', k.logEvents, { projectId: k.projectId, userId: 'u', events });

function expect400(r: { status: number; body: any }, field: string): void {
  expect(r.status, JSON.stringify(r.body)).toBe(400);
  expect(r.body.error.status).toBe('INVALID_ARGUMENT');
  expect(r.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
}

/** A 400 for the text itself: these dates fall out of [now − RETENTION_DAYS, now + 24 h] as time passes, which must not be what rejects them. */
function expectUnparsable(r: { status: number; body: any }, field: string): void {
  expect400(r, field);
  expect(r.body.error.details.find((d: { field: string }) => d.field === field).description).toMatch(/RFC 3339/);
}

describe('impossible dates are 400 on every path', () => {
  const impossible = [
    '2026-02-30T00:00:00Z',
    '2025-02-29T12:00:00Z',
    '2026-04-31T00:00:00Z',
    '2026-06-15T24:00:00Z',
    '2026-06-15T23:59:60Z',
    '2026-06-15T12:00:00+24:00',
  ];

  it.each(impossible)('LogEvents clientEventTimestamp %s (it was rolled over to March)', async (ts) => {
    expectUnparsable(await logEvents([event({ clientEventTimestamp: ts })]), 'events[0].clientEventTimestamp');
  });

  it.each(impossible)('LogEvents serverReceivedTimestamp %s', async (ts) => {
    expectUnparsable(await logEvents([event({ serverReceivedTimestamp: ts })]), 'events[0].serverReceivedTimestamp');
  });

  it.each(impossible)('event and user property timestampValue %s', async (ts) => {
    expect400(await logEvents([event({ eventProperties: { at: { timestampValue: ts } } })]), 'events[0].eventProperties.at.timestampValue');
    expect400(await logEvents([event({ user_properties: { at: { timestamp_value: ts } } })]), 'events[0].userProperties.at.timestampValue');
  });

  it.each(impossible)('InsertTreatment startTimestamp and endTimestamp %s', async (ts) => {
    const body = {
      projectId: k.projectId,
      name: 'y',
      description: 'd',
      treatmentTypeName: 'banner',
      lastModifiedBy: 't',
      content: { languageAgnosticContentFields: [{ fieldName: 'body', stringValue: 'x' }] },
    };
    expect400(await call(t, 'InsertTreatment', k.management, { ...body, startTimestamp: ts }), 'startTimestamp');
    expect400(await call(t, 'InsertTreatment', k.management, { ...body, startTimestamp: '2026-01-01T00:00:00Z', endTimestamp: ts }), 'endTimestamp');
    expect400(await call(t, 'UpdateTreatment', k.management, { projectId: k.projectId, treatmentId, lastModifiedBy: 't', endTimestamp: ts }), 'endTimestamp');
  });

  it.each(impossible)('a TIMESTAMP rule value %s', async (ts) => {
    const r = await call(t, 'InsertTreatment', k.management, {
      projectId: k.projectId,
      name: 'z',
      description: 'd',
      treatmentTypeName: 'banner',
      lastModifiedBy: 't',
      startTimestamp: '2026-01-01T00:00:00Z',
      content: { languageAgnosticContentFields: [{ fieldName: 'body', stringValue: 'x' }] },
      eligibilityRules: { rules: [{ dataFieldId: timestampFieldId, condition: 'LESS_THAN', rhsValue: ts }] },
    });
    expect400(r, 'eligibilityRules.rules[0].rhsValue');
  });

  it.each(impossible)('GetTreatments contextual attribute timestampValue %s', async (ts) => {
    const r = await call(t, 'GetTreatments', k.delivery, {
      projectId: k.projectId,
      userId: 'u',
      surfaces: [{ surface: 'home' }],
      contextualAttributes: [{ key: 'signup', timestampValue: ts }],
    });
    expect400(r, 'contextualAttributes[0].timestampValue');
  });

  it.each(impossible)('GetDataFields property filter timestampValue %s', async (ts) => {
    const r = await call(t, 'GetDataFields', k.management, {
      projectId: k.projectId,
      dataFieldParams: [
        {
          eventDataFieldParams: {
            eventSchemaName: 'purchase',
            propertyValueByPropertyName: { at: { timestampValue: ts } },
            dailyCountAggregation: { windowName: 'LAST_7D' },
          },
        },
      ],
    });
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(JSON.stringify(r.body.error.details)).toMatch(/timestampValue/);
  });

  it('valid spellings of one instant are accepted everywhere (offsets, lower case, fractions, a space)', async () => {
    const now = Date.now();
    const local = new Date(now + 2 * HOUR).toISOString().slice(0, 19);
    for (const ts of [`${local}+02:00`, iso(now).toLowerCase(), `${iso(now).slice(0, 19)}.123456789Z`, `${iso(now).slice(0, 10)} ${iso(now).slice(11)}`]) {
      const r = await logEvents([event({ clientEventTimestamp: ts, eventProperties: { at: { timestampValue: ts } } })]);
      expect(r.status, `${ts}: ${JSON.stringify(r.body)}`).toBe(200);
    }
  });
});

describe('partition-key times lie within [now − RETENTION_DAYS, now + 24 h]', () => {
  it('LogEvents clientEventTimestamp and serverReceivedTimestamp: inside accepted, outside 400 naming the field', async () => {
    const now = Date.now();
    expect((await logEvents([event({ clientEventTimestamp: iso(now - 399 * DAY), serverReceivedTimestamp: iso(now + 23 * HOUR) })])).status).toBe(200);
    for (const ms of [now - 401 * DAY, now + 25 * HOUR, Date.UTC(1900, 0, 1), Date.UTC(2299, 11, 31), Date.UTC(1970, 0, 1)]) {
      expect400(await logEvents([event(), event({ clientEventTimestamp: iso(ms) })]), 'events[1].clientEventTimestamp');
      expect400(await logEvents([event({ serverReceivedTimestamp: iso(ms) })]), 'events[0].serverReceivedTimestamp');
    }
  });

  it('property timestamps are not partition keys: 1900 to 2299 are accepted, beyond is 400', async () => {
    const props = (ts: string) => [event({ eventProperties: { at: { timestampValue: ts } }, userProperties: { born: { timestampValue: ts } } })];
    for (const ts of ['1900-01-01T00:00:00Z', '2299-12-31T23:59:59.999Z', '1969-07-20T20:17:00Z']) expect((await logEvents(props(ts))).status, ts).toBe(200);
    for (const ts of ['1899-12-31T23:59:59Z', '2300-01-01T00:00:00Z', '0001-01-01T00:00:00Z', '9999-12-31T23:59:59Z']) {
      expect400(await logEvents(props(ts)), 'events[0].eventProperties.at.timestampValue');
    }
  });

  it('one request spread over 1,000 months is refused whole, at once, with every field named', async () => {
    const url = await listen(t.app);
    const events = Array.from({ length: 1000 }, (_, i) =>
      event({ clientEventTimestamp: iso(Date.UTC(1900 + Math.floor(i / 12), i % 12, 15)), insertId: `m${i}` }),
    );
    const body = JSON.stringify({ projectId: k.projectId, userId: 'u', events });
    const r = await attack(url, '/v1/LogEvents', body, { 'x-api-key': k.logEvents });
    expectRejectedWithoutStall(r, 400, 'events[999].clientEventTimestamp');
    expect(r.result.body.error.details).toHaveLength(1000);
  });

  it('LogTreatmentInteraction interactionTimeMicros: inside accepted, outside 400', async () => {
    const interaction = (ms: number | string) =>
      call(t, 'LogTreatmentInteraction', k.delivery, {
        projectId: k.projectId,
        userId: 'u',
        treatmentId,
        treatmentTrackingId: `${treatmentId}_r1`,
        surface: 'home',
        interactionType: 'VIEWED',
        interactionTimeMicros: typeof ms === 'string' ? ms : String(BigInt(ms) * 1000n),
      });
    const now = Date.now();
    expect((await interaction(now)).status).toBe(200);
    expect((await interaction(now - 399 * DAY)).status).toBe(200);
    for (const ms of [now - 401 * DAY, now + 25 * HOUR, 0, Date.UTC(2299, 0, 1)]) expect400(await interaction(ms), 'interactionTimeMicros');
    expect400(await interaction('9223372036854775807'), 'interactionTimeMicros');
    expect400(await interaction('-9223372036854775808'), 'interactionTimeMicros');
  });

  it('RETENTION_DAYS sets the bound', async () => {
    const short = await createTestApp({ RETENTION_DAYS: '30' });
    try {
      const keys = await createProjectWithKeys(short);
      const send = (ms: number) =>
        call(short, 'LogEvents', keys.logEvents, { projectId: keys.projectId, userId: 'u', events: [event({ clientEventTimestamp: iso(ms) })] });
      expect((await send(Date.now() - 29 * DAY)).status).toBe(200);
      const r = await send(Date.now() - 31 * DAY);
      expect400(r, 'events[0].clientEventTimestamp');
      expect(r.body.error.details[0].description).toMatch(/more than 30 days in the past/);
    } finally {
      await short.close();
    }
  });
});

describe('Pub/Sub: the same parser and bounds, a dead letter with the reason', () => {
  const codec = createProtoCodec();
  const ctx = (): ParseContext => ({ sourceProjectId: 'shop', codec, nowMs: Date.now(), retentionDays: 400 });
  const eventData = (clientEventTimestamp: string, extra: Record<string, unknown> = {}) => ({
    messageId: '1',
    dataType: 'EventData',
    data: codec.encodeLogEventsRequest({ projectId: 'shop', userId: 'u', events: [{ eventName: 'e', clientEventTimestamp, ...extra }] }),
  });
  const userAttribute = (updateTimestamp: string, props: Record<string, unknown> = {}) => ({
    messageId: '2',
    dataType: 'UserAttribute',
    data: codec.encodeUserAttribute({ userId: 'u', userProperties: props as never, updateTimestamp }),
  });
  const reason = (o: ReturnType<typeof messageOutcome>) => (o.kind === 'dead_letter' ? o.reason : `queued`);

  it('events outside [now − RETENTION_DAYS, now + 24 h] are dead letters naming the field', () => {
    const now = Date.now();
    expect(messageOutcome(eventData(iso(now - 399 * DAY)), ctx()).kind).toBe('queue');
    expect(reason(messageOutcome(eventData(iso(now - 401 * DAY)), ctx()))).toMatch(/events\[0\]\.clientEventTimestamp: more than 400 days in the past/);
    expect(reason(messageOutcome(eventData(iso(now + 25 * HOUR)), ctx()))).toMatch(/events\[0\]\.clientEventTimestamp: more than 24 hours in the future/);
    expect(reason(messageOutcome(eventData(iso(now), { serverReceivedTimestamp: '1950-01-01T00:00:00Z' }), ctx()))).toMatch(/serverReceivedTimestamp/);
  });

  it('UserAttribute update_timestamp outside the bound is a dead letter; property times may be old', () => {
    const now = Date.now();
    expect(messageOutcome(userAttribute(iso(now), { born: { timestampValue: '1901-01-01T00:00:00Z' } }), ctx()).kind).toBe('queue');
    expect(reason(messageOutcome(userAttribute(iso(now - 401 * DAY)), ctx()))).toMatch(/updateTimestamp: more than 400 days in the past/);
    expect(reason(messageOutcome(userAttribute(iso(now + 25 * HOUR)), ctx()))).toMatch(/updateTimestamp: more than 24 hours in the future/);
  });
});
