import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { PubSub, type Message } from '@google-cloud/pubsub';
import type { ClickHouseClient } from '@clickhouse/client';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClickhouse } from '../../shared/platform/warehouse/clickhouse.js';
import { ClickhouseWarehouse } from '../../shared/platform/warehouse/clickhouse-warehouse.js';
import { DeadLetterSink, MAX_DEAD_LETTER_PAYLOAD_BYTES } from '../../workers/ingestion/dead-letter-sink.js';
import { ensureSubscription, subscriptionPath } from '../../shared/platform/pubsub/pubsub.js';
import { createProtoCodec } from '../../shared/ingestion/proto.codec.js';
import type { SingleEventsJob } from '../../shared/ingestion/jobs.js';
import { runMigrations } from '../../shared/platform/warehouse/migrations.js';
import { MAX_MESSAGE_BYTES, PubSubIntake } from '../../workers/ingestion/pubsub-intake.js';
import { waitUntil } from '../helpers/context.js';
import { startPubSubEmulator, type PubSubEmulator } from '../helpers/pubsub-emulator.js';

/**
 * Pub/Sub messages are bounded like HTTP bodies: at most 1 MiB and 1 to 1,000 events. A message
 * over a bound is acked (never redelivered) and stored as a dead letter with the reason; the
 * intake keeps taking the next messages. Real emulator, real embedded ClickHouse.
 */
const codec = createProtoCodec();
let emulator: PubSubEmulator;
let customer: PubSub;
let ch: ClickHouseClient;
let intake: PubSubIntake;
const queued: { job: SingleEventsJob; jobId: string }[] = [];
const projectId = `lim${randomBytes(3).toString('hex')}`;
const topicPath = `projects/customer-${projectId}/topics/events`;
const subscription = () => subscriptionPath(emulator.projectId, projectId);

async function deadLetters(): Promise<
  { message_id: string; reason: string; bytes: number; payload_bytes: number; payload_sha256: string; row_bytes: number; user_ids: string[] }[]
> {
  const rs = await ch.query({
    query: `SELECT message_id, reason, toUInt32(length(base64Decode(payload_base64))) AS bytes, toUInt32(payload_bytes) AS payload_bytes, payload_sha256, user_ids,
                   toUInt32(length(payload_base64) + length(reason) + length(message_id) + length(data_type) + length(payload_sha256) + length(arrayStringConcat(user_ids))) AS row_bytes
            FROM dead_letters FINAL WHERE project_id = {p:String} ORDER BY receive_time`,
    query_params: { p: projectId },
    format: 'JSONEachRow',
  });
  return rs.json();
}

beforeAll(async () => {
  emulator = await startPubSubEmulator();
  customer = new PubSub(emulator.clientOptions);
  await customer.createTopic(topicPath);
  ch = createClickhouse({ dataDir: mkdtempSync(join(tmpdir(), 'tds-pubsub-limits-')) });
  await runMigrations(ch);
  const source = { projectId, topic: topicPath, subscription: subscription() };
  const pubsub = new PubSub(emulator.clientOptions);
  await ensureSubscription(pubsub, source, { replace: false, timeoutMs: 10_000 });
  intake = new PubSubIntake(
    {
      pubsub,
      sources: { list: async () => [source] },
      events: { enqueue: async (job, opts) => void queued.push({ job, jobId: opts.jobId }) },
      deadLetters: new DeadLetterSink(new ClickhouseWarehouse(ch), Date.now),
      bus: { on: () => () => undefined },
      codec,
      log: pino({ level: 'silent' }),
      now: Date.now,
    },
    { closeTimeoutMs: 1500 },
  );
  await intake.start();
}, 120_000);

afterAll(async () => {
  await intake?.close();
  await customer?.close();
  await ch?.close();
  await emulator?.stop();
}, 120_000);

const event = (i: number) => ({ eventName: 'open', clientEventTimestamp: new Date(Date.now() - i).toISOString(), insertId: `i${i}` });

describe('Pub/Sub message limits', () => {
  it('five 500 KB bad payloads make five small dead letters (64 KiB each, with the size and hash of the whole)', async () => {
    const topic = customer.topic(topicPath);
    const before = (await deadLetters()).length;
    const bad = Array.from({ length: 5 }, (_, i) => Buffer.concat([Buffer.from([0xff, 0xff, 0xff, i]), randomBytes(500_000)]));
    const ids = await Promise.all(bad.map((data) => topic.publishMessage({ data, attributes: { data_type: 'EventData' } })));
    await waitUntil(async () => (await deadLetters()).length === before + 5, 30_000, 100);
    const byId = new Map((await deadLetters()).map((l) => [l.message_id, l]));
    for (const [i, id] of ids.entries()) {
      const l = byId.get(id)!;
      expect(l.reason).toMatch(/^(undecodable|invalid) EventData/);
      expect(l.bytes).toBe(MAX_DEAD_LETTER_PAYLOAD_BYTES);
      expect(l.payload_bytes).toBe(500_004);
      expect(l.payload_sha256).toBe(createHash('sha256').update(bad[i]).digest('hex'));
      // the whole row: the kept payload in base64 plus a little
      expect(l.row_bytes).toBeLessThan(Math.ceil((MAX_DEAD_LETTER_PAYLOAD_BYTES * 4) / 3) + 2000);
    }
  }, 60_000);

  it('a message over 1 MiB is acked and dead-lettered unread (its first 64 KiB, size and SHA-256 kept); 1,001 events likewise; a normal message is queued', async () => {
    const topic = customer.topic(topicPath);
    const before = (await deadLetters()).length;
    // valid EventData, just too big: one event whose property is 1 MiB of text
    const big = codec.encodeLogEventsRequest({
      projectId,
      userId: 'u',
      events: [{ ...event(0), eventProperties: { blob: { stringValue: 'x'.repeat(MAX_MESSAGE_BYTES) } } }],
    });
    expect(big.byteLength).toBeGreaterThan(MAX_MESSAGE_BYTES);
    const bigId = await topic.publishMessage({ data: Buffer.from(big), attributes: { data_type: 'EventData' } });
    const many = codec.encodeLogEventsRequest({ projectId, userId: 'u', events: Array.from({ length: 1001 }, (_, i) => event(i)) });
    expect(many.byteLength).toBeLessThan(MAX_MESSAGE_BYTES);
    const manyId = await topic.publishMessage({ data: Buffer.from(many), attributes: { data_type: 'EventData' } });
    const okId = await topic.publishMessage({
      data: Buffer.from(codec.encodeLogEventsRequest({ projectId, userId: 'u', events: Array.from({ length: 1000 }, (_, i) => event(i)) })),
      attributes: { data_type: 'EventData' },
    });

    await waitUntil(async () => (await deadLetters()).length === before + 2 && queued.length === 1, 30_000, 100);
    const letters = await deadLetters();
    const byId = new Map(letters.map((l) => [l.message_id, l]));
    expect(byId.get(bigId)!.reason).toMatch(/exceeds the limit of 1048576 bytes \(1 MiB\)/);
    expect(byId.get(bigId)!.bytes).toBe(MAX_DEAD_LETTER_PAYLOAD_BYTES);
    expect(byId.get(bigId)!.payload_bytes).toBe(big.byteLength);
    expect(byId.get(bigId)!.payload_sha256).toBe(createHash('sha256').update(big).digest('hex'));
    // decoded (1,001 events): the dead letter names its user, for DeleteUserData
    expect(byId.get(manyId)!.user_ids).toEqual(['u']);
    expect(byId.get(manyId)!.reason).toMatch(/1001 events, at most 1000 per message/);
    expect(queued.map((q) => q.job.kind === 'events' && q.job.events.length)).toEqual([1000]);
    expect(queued[0].jobId).toContain(okId);

    // acked: nothing is redelivered, to the intake or to anyone else
    await intake.close();
    const again: Message[] = [];
    const sub = customer.subscription(subscription());
    sub.on('message', (m: Message) => {
      again.push(m);
      m.ack();
    });
    await sleep(3000);
    await sub.close();
    expect(again).toEqual([]);
    expect(await deadLetters()).toHaveLength(before + 2);
  }, 90_000);
});
