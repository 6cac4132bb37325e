import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { PubSub, type Message, type Topic } from '@google-cloud/pubsub';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ensureSubscription, subscriptionPath } from '../../shared/platform/pubsub/pubsub.js';
import { UnavailableError } from '../../shared/platform/errors.js';
import { createProtoCodec, type LogEventsJson, type UserAttributeJson } from '../../shared/ingestion/proto.codec.js';
import type { SingleEventsJob } from '../../shared/ingestion/jobs.js';
import { PubSubIntake, pubsubJobId, type PubSubIntakeDeps } from '../../workers/ingestion/pubsub-intake.js';
import { DeadLetterSink } from '../../workers/ingestion/dead-letter-sink.js';
import { admin as injectAdmin, createTestApp, waitUntil, within } from '../helpers/context.js';
import { startPubSubEmulator, type PubSubEmulator } from '../helpers/pubsub-emulator.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { JobCompletions } from '../helpers/job-completions.js';
import { bullPrefix } from '../../shared/platform/queues.js';

/**
 * Pub/Sub ingestion end to end: the real emulator, the whole service in this process
 * (workers with their intake, embedded ClickHouse), messages encoded with the repository's .proto.
 * Each test registers its own project, so each has its own subscription.
 */
const codec = createProtoCodec();
let emulator: PubSubEmulator;
let s: TestService;
/** The customer's side: creates topics, publishes, and pulls to look at what stayed in a subscription. */
let customer: PubSub;

beforeAll(async () => {
  emulator = await startPubSubEmulator();
  // The intake runs in this process's main thread (as every role of an all-roles process does), so
  // the tests can watch what it hands to the queue.
  s = await startTestService({ PUBSUB_EMULATOR_HOST: emulator.host, PUBSUB_PROJECT_ID: emulator.projectId });
  customer = new PubSub(emulator.clientOptions);
}, 120_000);

afterAll(async () => {
  await s?.stop();
  await customer?.close();
  await emulator?.stop();
}, 120_000);

afterEach(() => {
  vi.restoreAllMocks();
});

interface Source {
  projectId: string;
  topic: Topic;
  topicPath: string;
  subscription: string;
}

function uniqueId(label: string): string {
  return `${label}${randomBytes(3).toString('hex')}`;
}

/** A project with a topic in the customer's GCP project, registered as its source. */
async function registeredSource(label: string): Promise<Source> {
  const projectId = uniqueId(label);
  expect((await s.admin('CreateProject', { projectId })).status).toBe(200);
  const topicPath = `projects/customer-${projectId}/topics/events`;
  const [topic] = await customer.createTopic(topicPath);
  const set = await s.admin('SetPubSubSource', { projectId, topic: topicPath });
  expect(set.status, JSON.stringify(set.body)).toBe(200);
  return { projectId, topic, topicPath, subscription: set.body.pubSubSource.subscription };
}

function publishEvents(topic: Topic, json: LogEventsJson): Promise<string> {
  return topic.publishMessage({ data: Buffer.from(codec.encodeLogEventsRequest(json)), attributes: { data_type: 'EventData' } });
}

function publishAttribute(topic: Topic, json: UserAttributeJson): Promise<string> {
  return topic.publishMessage({ data: Buffer.from(codec.encodeUserAttribute(json)), attributes: { data_type: 'UserAttribute' } });
}

async function chCount(query: string, params: Record<string, unknown>): Promise<number> {
  const rows = await s.clickhouse.query<{ n: string }>(query, params);
  return Number(rows[0]?.n ?? 0);
}

function eventsCount(projectId: string): Promise<number> {
  return chCount('SELECT count() AS n FROM events FINAL WHERE project_id = {p:String}', { p: projectId });
}

/** Completed jobs are removed at once: the queue's event stream tells which ones completed. */
const completions = () => new JobCompletions(s.ctx.redis, bullPrefix(s.ctx.config.redisPrefix, s.ctx.redis), 'events');

async function jobCompleted(projectId: string, messageId: string): Promise<boolean> {
  return completions().completed(pubsubJobId(projectId, messageId));
}

async function profileProperties(projectId: string, userId: string): Promise<Record<string, unknown>> {
  const r = await s.admin('GetUserProfile', { projectId, userId });
  expect(r.status).toBe(200);
  return r.body.profile.userProperties;
}

/** Pulls whatever the subscription delivers within `ms` (acking it), as another consumer would. */
async function drain(subscription: string, ms: number): Promise<Message[]> {
  const sub = customer.subscription(subscription);
  const got: Message[] = [];
  sub.on('message', (m: Message) => {
    got.push(m);
    m.ack();
  });
  await sleep(ms);
  await sub.close();
  return got;
}

/** A topic the service does not know of, for an intake the test runs itself. */
async function unregisteredTopic(label: string): Promise<{ projectId: string; topic: Topic; subscription: string }> {
  const projectId = uniqueId(label);
  const [topic] = await customer.createTopic(`projects/customer-${projectId}/topics/events`);
  return { projectId, topic, subscription: subscriptionPath(emulator.projectId, projectId) };
}

/** An intake of its own on one source, with a short close so a test sees what close leaves behind. */
function standaloneIntake(projectId: string, topicPath: string, events: PubSubIntakeDeps['events']): PubSubIntake {
  return new PubSubIntake(
    {
      pubsub: new PubSub(emulator.clientOptions),
      sources: { list: async () => [{ projectId, topic: topicPath, subscription: subscriptionPath(emulator.projectId, projectId) }] },
      events,
      deadLetters: new DeadLetterSink(s.clickhouse, Date.now),
      bus: { on: () => () => undefined },
      codec,
      log: pino({ level: 'silent' }),
      now: Date.now,
    },
    { closeTimeoutMs: 1500 },
  );
}

const at = (offsetMs: number) => new Date(Date.now() + offsetMs).toISOString();

describe('SetPubSubSource / GetPubSubSource', () => {
  it('creates the service’s subscription on the topic and returns its full path', async () => {
    const src = await registeredSource('set');
    expect(src.subscription).toBe(`projects/${emulator.projectId}/subscriptions/tds-${src.projectId}`);
    const [meta] = await customer.subscription(src.subscription).getMetadata();
    expect(meta.topic).toBe(src.topicPath);

    const got = await s.admin('GetPubSubSource', { projectId: src.projectId });
    expect(got).toEqual({ status: 200, body: { pubSubSource: { projectId: src.projectId, topic: src.topicPath, subscription: src.subscription } } });
    // Setting the same source again reuses the subscription.
    expect((await s.admin('SetPubSubSource', { projectId: src.projectId, topic: src.topicPath })).body).toEqual(got.body);
    const changes = await s.admin('ListChanges', { projectId: src.projectId });
    expect(changes.body.changes.filter((c: { operation: string }) => c.operation === 'SetPubSubSource')).toHaveLength(1);
  });

  it('moves the subscription when the project registers another topic', async () => {
    const src = await registeredSource('move');
    const otherPath = `projects/customer-${src.projectId}/topics/events-v2`;
    const [other] = await customer.createTopic(otherPath);
    expect((await s.admin('SetPubSubSource', { projectId: src.projectId, topic: otherPath })).status).toBe(200);
    const [meta] = await customer.subscription(src.subscription).getMetadata();
    expect(meta.topic).toBe(otherPath);
    await publishEvents(other, { projectId: src.projectId, userId: 'u1', events: [{ eventName: 'moved', clientEventTimestamp: at(0) }] });
    await waitUntil(async () => (await eventsCount(src.projectId)) === 1, 20_000);
  });

  it('reports what the operator must fix: bad path 400, missing topic 400 FAILED_PRECONDITION, unknown project 404, no source 404', async () => {
    const projectId = uniqueId('err');
    await s.admin('CreateProject', { projectId });
    const bad = await s.admin('SetPubSubSource', { projectId, topic: 'events' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.status).toBe('INVALID_ARGUMENT');
    const missing = await s.admin('SetPubSubSource', { projectId, topic: `projects/customer-${projectId}/topics/nope` });
    expect(missing.status).toBe(400);
    expect(missing.body.error.status).toBe('FAILED_PRECONDITION');
    expect(missing.body.error.message).toMatch(/topic projects\/customer-.*\/topics\/nope does not exist/);
    expect((await s.admin('GetPubSubSource', { projectId })).status).toBe(404);
    expect((await s.admin('ClearPubSubSource', { projectId })).status).toBe(404);
    expect((await s.admin('SetPubSubSource', { projectId: uniqueId('none'), topic: 'projects/c/topics/events' })).status).toBe(404);
  });

  it('answers 503 when Pub/Sub cannot be reached', async () => {
    // API listeners only, against a port nobody listens on.
    const t = await createTestApp({ PUBSUB_EMULATOR_HOST: '127.0.0.1:9', PUBSUB_PROJECT_ID: 'unreachable' });
    try {
      const projectId = uniqueId('down');
      expect((await injectAdmin(t, 'CreateProject', { projectId })).status).toBe(200);
      const r = await injectAdmin(t, 'SetPubSubSource', { projectId, topic: 'projects/c/topics/events' });
      expect(r.status).toBe(503);
      expect(r.body.error.status).toBe('UNAVAILABLE');
      expect((await injectAdmin(t, 'GetPubSubSource', { projectId })).status).toBe(404);
    } finally {
      await t.close();
    }
  }, 30_000);
});

describe('ingestion', () => {
  it('EventData messages reach ClickHouse and the profile', async () => {
    const src = await registeredSource('ev');
    await publishEvents(src.topic, {
      projectId: src.projectId,
      userId: 'u1',
      events: [
        {
          eventName: 'purchase',
          clientEventTimestamp: at(-1000),
          insertId: 'ins-1',
          eventProperties: { amount: { longValue: '42' } },
          userProperties: { plan: { stringValue: 'gold' } },
        },
        { eventName: 'view', clientEventTimestamp: at(-500), country: 'DE' },
      ],
    });
    await waitUntil(async () => (await eventsCount(src.projectId)) === 2, 20_000);
    const rows = await s.clickhouse.query(
      'SELECT event_name, insert_id, country, source, user_id, event_properties FROM events FINAL WHERE project_id = {p:String} ORDER BY event_name',
      {
        p: src.projectId,
      },
    );
    expect(rows).toEqual([
      { event_name: 'purchase', insert_id: 'ins-1', country: '', source: 'pubsub', user_id: 'u1', event_properties: '{"amount":{"longValue":"42"}}' },
      { event_name: 'view', insert_id: '', country: 'DE', source: 'pubsub', user_id: 'u1', event_properties: '{}' },
    ]);
    await waitUntil(async () => (await profileProperties(src.projectId, 'u1')).plan === 'gold', 10_000);
    expect(await (await fetch(`http://127.0.0.1:${s.service.ops.port}/metrics`)).text()).toContain(
      `tds_pubsub_messages_acked_total{project="${src.projectId}",outcome="queued"} 1`,
    );
  });

  it('a UserAttribute message updates the profile, last write wins by update_timestamp', async () => {
    const src = await registeredSource('ua');
    await publishAttribute(src.topic, { userId: 'u1', userProperties: { plan: { stringValue: 'gold' } }, updateTimestamp: at(-60_000) });
    await waitUntil(async () => (await profileProperties(src.projectId, 'u1')).plan === 'gold', 20_000);

    // Older than what the profile holds: stored, but it does not win.
    const older = await publishAttribute(src.topic, {
      projectId: src.projectId,
      userId: 'u1',
      userProperties: { plan: { stringValue: 'silver' } },
      updateTimestamp: at(-120_000),
    });
    await waitUntil(() => jobCompleted(src.projectId, older), 20_000);
    expect((await profileProperties(src.projectId, 'u1')).plan).toBe('gold');
    expect(await chCount('SELECT count() AS n FROM user_attribute_updates FINAL WHERE project_id = {p:String}', { p: src.projectId })).toBe(2);

    await publishAttribute(src.topic, { userId: 'u1', userProperties: { plan: { stringValue: 'platinum' } }, updateTimestamp: at(-1000) });
    await waitUntil(async () => (await profileProperties(src.projectId, 'u1')).plan === 'platinum', 20_000);
  });

  it('the same event published twice with the same insert_id counts once', async () => {
    const src = await registeredSource('dup');
    const body: LogEventsJson = {
      projectId: src.projectId,
      userId: 'u1',
      events: [{ eventName: 'purchase', clientEventTimestamp: at(-1000), insertId: 'same-1' }],
    };
    const ids = await Promise.all([publishEvents(src.topic, body), publishEvents(src.topic, body)]);
    expect(ids[0]).not.toBe(ids[1]);
    await waitUntil(async () => (await jobCompleted(src.projectId, ids[0])) && (await jobCompleted(src.projectId, ids[1])), 20_000);
    expect(await eventsCount(src.projectId)).toBe(1);
  });

  it('a redelivered message counts once, even after its first job is gone', async () => {
    const src = await registeredSource('redel');
    const batcher = s.ctx.ingestion.ingest.events;
    const queue = s.ctx.ingestion.ingest.eventsQueue;
    const real = batcher.enqueue.bind(batcher);
    const calls: string[] = [];
    vi.spyOn(batcher, 'enqueue').mockImplementation(async (data: SingleEventsJob, opts?: { jobId?: string }) => {
      if (data.projectId !== src.projectId) return real(data, opts);
      const jobId = opts?.jobId;
      calls.push(jobId!);
      await real(data, opts);
      if (calls.length > 1) return;
      // The first delivery is queued and processed, its job removed (removeOnComplete), and
      // then the intake is told the enqueue failed: it nacks, Pub/Sub redelivers.
      await waitUntil(() => completions().completed(jobId!), 20_000);
      expect(await queue.getJobState(jobId!)).toBe('unknown');
      throw new UnavailableError('test: pretend the queue did not answer');
    });
    // No insert_id: only the message id and position tell the copies apart.
    const messageId = await publishEvents(src.topic, {
      projectId: src.projectId,
      userId: 'u1',
      events: [{ eventName: 'view', clientEventTimestamp: at(-1000), userProperties: { seen: { booleanValue: true } } }],
    });
    // both deliveries' jobs (one id) completed
    await waitUntil(
      async () => calls.length >= 2 && (await completions().since()).filter((id) => id === pubsubJobId(src.projectId, messageId)).length === 2,
      30_000,
    );
    expect(new Set(calls)).toEqual(new Set([pubsubJobId(src.projectId, messageId)]));
    expect(await eventsCount(src.projectId)).toBe(1);
    expect((await profileProperties(src.projectId, 'u1')).seen).toBe(true);
  });

  it('acknowledges nothing before it is queued: a message whose enqueue failed comes back and is stored once', async () => {
    const src = await registeredSource('noack');
    const batcher = s.ctx.ingestion.ingest.events;
    const real = batcher.enqueue.bind(batcher);
    let attempts = 0;
    vi.spyOn(batcher, 'enqueue').mockImplementation(async (data: SingleEventsJob, opts?: { jobId?: string }) => {
      if (data.projectId !== src.projectId) return real(data, opts);
      attempts += 1;
      // Redis down for the first two deliveries: had the intake acked, the message would be lost.
      if (attempts <= 2) throw new UnavailableError('test: the ingestion queue is unavailable');
      return real(data, opts);
    });
    await publishEvents(src.topic, { projectId: src.projectId, userId: 'u1', events: [{ eventName: 'purchase', clientEventTimestamp: at(-1000) }] });
    await waitUntil(async () => (await eventsCount(src.projectId)) === 1, 30_000);
    expect(attempts).toBe(3);
  });
});

describe('dead letters and stopping', () => {
  it('undecodable, untyped, invalid and foreign-project messages become dead letters with their reason', async () => {
    const src = await registeredSource('dl');
    const garbage = Buffer.from('garbage data, not a protobuf \xff\xff');
    const valid = codec.encodeLogEventsRequest({ projectId: src.projectId, userId: 'u1', events: [{ eventName: 'purchase', clientEventTimestamp: at(0) }] });
    const ids = {
      garbage: await src.topic.publishMessage({ data: garbage, attributes: { data_type: 'EventData' } }),
      untyped: await src.topic.publishMessage({ data: Buffer.from(valid) }),
      foreign: await publishEvents(src.topic, { projectId: 'someone-else', userId: 'u1', events: [{ eventName: 'purchase', clientEventTimestamp: at(0) }] }),
      invalid: await publishEvents(src.topic, { projectId: src.projectId, userId: 'u1', events: [{ eventName: '', clientEventTimestamp: at(0) }] }),
    };
    let letters: { messageId: string; source: string; reason: string; dataType: string; payloadBase64: string }[] = [];
    await waitUntil(async () => {
      letters = (await s.admin('ListDeadLetters', { projectId: src.projectId })).body.deadLetters;
      return letters.length === 4;
    }, 20_000);
    const byId = new Map(letters.map((l) => [l.messageId, l]));
    expect(byId.get(ids.garbage)).toMatchObject({ source: 'pubsub', dataType: 'EventData', payloadBase64: garbage.toString('base64') });
    expect(byId.get(ids.garbage)!.reason).toMatch(/^undecodable EventData: /);
    expect(byId.get(ids.untyped)).toMatchObject({ dataType: '', reason: 'missing data_type attribute; expected EventData or UserAttribute' });
    expect(byId.get(ids.foreign)!.reason).toBe(`the payload names project "someone-else", but the topic belongs to project "${src.projectId}"`);
    expect(byId.get(ids.invalid)!.reason).toMatch(/^invalid EventData: events\[0\]\.eventName: /);
    expect(await eventsCount(src.projectId)).toBe(0);
  });

  it('acks at Pub/Sub what it queued or dead-lettered: after shutdown nothing of it is delivered again', async () => {
    const { projectId, topic, subscription } = await unregisteredTopic('ack');
    expect((await s.admin('CreateProject', { projectId })).status).toBe(200);
    // Its own intake with a short close: anything still unacked would be nacked at close and show up below.
    const intake = standaloneIntake(projectId, topic.name, s.ctx.ingestion.ingest.events);
    await intake.start();
    await publishEvents(topic, { projectId, userId: 'u1', events: [{ eventName: 'purchase', clientEventTimestamp: at(0) }] });
    await topic.publishMessage({ data: Buffer.from('not a protobuf'), attributes: { data_type: 'EventData' } });
    await topic.publishMessage({ data: Buffer.from('no type') });
    await waitUntil(async () => (await eventsCount(projectId)) === 1, 20_000);
    await waitUntil(async () => (await s.admin('ListDeadLetters', { projectId })).body.deadLetters.length === 2, 20_000);
    await intake.close();
    expect((await drain(subscription, 3000)).map((m) => m.id)).toEqual([]);
    expect(await chCount('SELECT count() AS n FROM dead_letters WHERE project_id = {p:String}', { p: projectId })).toBe(2);
  });

  it('ClearPubSubSource stops pulling; what is published afterwards waits in the subscription', async () => {
    const src = await registeredSource('clr');
    await publishEvents(src.topic, { projectId: src.projectId, userId: 'u1', events: [{ eventName: 'before', clientEventTimestamp: at(0) }] });
    await waitUntil(async () => (await eventsCount(src.projectId)) === 1, 20_000);

    const cleared = await s.admin('ClearPubSubSource', { projectId: src.projectId });
    expect(cleared.body).toEqual({ pubSubSource: { projectId: src.projectId, topic: src.topicPath, subscription: src.subscription } });
    expect((await s.admin('GetPubSubSource', { projectId: src.projectId })).status).toBe(404);
    // The invalidation reaches the intake at once; give its subscription a moment to close.
    await sleep(1500);
    const after = await publishEvents(src.topic, { projectId: src.projectId, userId: 'u1', events: [{ eventName: 'after', clientEventTimestamp: at(0) }] });
    await sleep(3000);
    expect(await eventsCount(src.projectId)).toBe(1);
    const waiting = await drain(src.subscription, 3000);
    expect(waiting.map((m) => m.id)).toEqual([after]);
  });

  it('closing the intake acks nothing it has not queued: the message in hand is redelivered', async () => {
    const { projectId, topic, subscription } = await unregisteredTopic('close');
    const held: string[] = [];
    // A queue that never answers: the message stays in hand until shutdown.
    const intake = standaloneIntake(projectId, topic.name, { enqueue: (_data, { jobId }) => (held.push(jobId), new Promise<void>(() => undefined)) });
    await intake.start();
    expect(intake.activeProjects).toEqual([projectId]);
    const messageId = await publishEvents(topic, { projectId, userId: 'u1', events: [{ eventName: 'purchase', clientEventTimestamp: at(0) }] });
    await waitUntil(() => held.length === 1, 20_000);
    // the held enqueue never settles: a close that waited for it would never return
    await within(intake.close(), 20_000, 'close with an enqueue held');
    await intake.close(); // idempotent
    const redelivered = await drain(subscription, 3000);
    expect(redelivered.map((m) => m.id)).toEqual([messageId]);
  });

  it('ensureSubscription reports an unreachable Pub/Sub as retryable', async () => {
    const dead = new PubSub({ projectId: 'x', apiEndpoint: '127.0.0.1:9', emulatorMode: true, universeDomain: 'googleapis.com' });
    try {
      await expect(
        ensureSubscription(dead, { topic: 'projects/c/topics/events', subscription: 'projects/x/subscriptions/tds-p' }, { replace: false, timeoutMs: 1000 }),
      ).rejects.toBeInstanceOf(UnavailableError);
    } finally {
      await dead.close();
    }
  });
});
