import { PubSub, type Message, type Subscription } from '@google-cloud/pubsub';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProtoCodec, type LogEventsJson, type UserAttributeJson } from '../../shared/ingestion/proto.codec.js';
import { startPubSubEmulator, type PubSubEmulator } from '../helpers/pubsub-emulator.js';

/** The real emulator end to end: publish protobuf payloads, pull them by streaming pull, decode, ack. */
describe('Pub/Sub emulator with protobuf payloads', () => {
  const codec = createProtoCodec();
  let emulator: PubSubEmulator;
  let pubsub: PubSub;

  beforeAll(async () => {
    const startedAt = performance.now();
    emulator = await startPubSubEmulator();
    console.info(`pubsub emulator ready in ${Math.round(performance.now() - startedAt)} ms`);
    pubsub = new PubSub(emulator.clientOptions);
  }, 120_000);

  afterAll(async () => {
    await pubsub?.close();
    await emulator?.stop();
  }, 60_000);

  it('reaches the emulator through client options alone, without PUBSUB_EMULATOR_HOST', () => {
    expect(process.env.PUBSUB_EMULATOR_HOST).toBeUndefined();
    expect(pubsub.isEmulator).toBe(true);
    expect(emulator.clientOptions.apiEndpoint).toBe(emulator.host);
  });

  it('delivers EventData and UserAttribute payloads that decode to the LogEvents shape', async () => {
    const [topic] = await pubsub.createTopic('tds-ingest');
    const [subscription] = await topic.createSubscription('tds-ingest-sub');
    const events: LogEventsJson = {
      projectId: emulator.projectId,
      userId: 'user-1',
      events: [
        {
          eventName: 'purchase',
          clientEventTimestamp: '2024-05-06T07:08:09.123Z',
          insertId: 'ins-1',
          eventProperties: { amount: { longValue: '9007199254740993' }, currency: { stringValue: 'EUR' } },
        },
      ],
    };
    const attribute: UserAttributeJson = {
      userId: 'user-1',
      userProperties: { plan: { stringValue: 'gold' } },
      updateTimestamp: '2024-05-06T07:08:10Z',
    };

    const received = collect(subscription, 2, (m) =>
      m.attributes.data_type === 'EventData' ? codec.decodeLogEventsRequest(m.data) : codec.decodeUserAttribute(m.data),
    );
    await topic.publishMessage({ data: Buffer.from(codec.encodeLogEventsRequest(events)), attributes: { data_type: 'EventData' } });
    await topic.publishMessage({ data: Buffer.from(codec.encodeUserAttribute(attribute)), attributes: { data_type: 'UserAttribute' } });
    const { messages, acks } = await received;
    await subscription.close();

    const byType = new Map(messages.map((m) => [m.attributes.data_type, m]));
    expect(codec.decodeLogEventsRequest(byType.get('EventData')!.data)).toEqual(events);
    expect(codec.decodeUserAttribute(byType.get('UserAttribute')!.data)).toEqual(attribute);
    expect(acks).toEqual(['SUCCESS', 'SUCCESS']);
  });
});

/** Streams messages until `count` arrived, acking each one after its data decoded (a throw fails the test). */
function collect(subscription: Subscription, count: number, decode: (m: Message) => unknown): Promise<{ messages: Message[]; acks: string[] }> {
  return new Promise((resolve, reject) => {
    const messages: Message[] = [];
    const acks: Promise<string>[] = [];
    const timer = setTimeout(() => reject(new Error(`received ${messages.length} of ${count} messages in 20 s`)), 20_000);
    subscription.on('error', reject);
    subscription.on('message', (message: Message) => {
      try {
        decode(message);
      } catch (err) {
        reject(err);
        return;
      }
      acks.push(message.ackWithResponse());
      messages.push(message);
      if (messages.length < count) return;
      clearTimeout(timer);
      Promise.all(acks).then((results) => resolve({ messages, acks: results }), reject);
    });
  });
}
