import { createServer, connect, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Invalidation } from '../../shared/platform/redis/invalidation-bus.js';
import { parseApiKey } from '../../shared/projects/api-key.store.js';
import { admin, call, callOk, createProjectWithKeys, createTestApp, uniquePrefix, waitUntil, type ProjectKeys, type TestApp } from '../helpers/context.js';

/**
 * A half-open invalidation subscriber (the TCP connection stays up, nothing flows: a NAT or
 * firewall that dropped the flow, a frozen peer) must not leave a process trusting its caches.
 * Process A reaches Redis through a proxy that can black-hole the subscriber's connection (the one
 * named `invalidation`); process B changes things directly, so A hears of them only over the bus.
 */
class BlackHoleProxy {
  stalled = false;
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {
    this.server = createServer((client) => this.pipe(client));
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  private pipe(client: Socket): void {
    const upstream = connect(this.target.port, this.target.host);
    this.sockets.add(client).add(upstream);
    // ioredis names the connection first thing (CLIENT SETNAME invalidation)
    let bus = false;
    client.on('data', (d: Buffer) => {
      if (!bus && d.includes('invalidation')) bus = true;
      if (!(bus && this.stalled)) upstream.write(d);
    });
    upstream.on('data', (d: Buffer) => {
      if (!(bus && this.stalled)) client.write(d);
    });
    const end = (): void => {
      client.destroy();
      upstream.destroy();
      this.sockets.delete(client);
      this.sockets.delete(upstream);
    };
    for (const s of [client, upstream]) {
      s.on('close', end);
      s.on('error', end);
    }
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

const redisUrl = new URL(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const prefix = uniquePrefix('heartbeat');
const proxy = new BlackHoleProxy({ host: redisUrl.hostname || '127.0.0.1', port: Number(redisUrl.port || 6379) });
let a: TestApp;
let b: TestApp;
let p: ProjectKeys;
const heard: Invalidation[] = [];

const ok = callOk;

const getTreatments = (key: string) => call(a, 'GetTreatments', key, { projectId: p.projectId, userId: 'u1', surfaces: [{ surface: 'home' }] });

function insertTreatment(name: string): Promise<unknown> {
  return ok(b, 'InsertTreatment', p.management, {
    projectId: p.projectId,
    name,
    description: 'd',
    treatmentTypeName: 'card',
    lastModifiedBy: 'alice',
    startTimestamp: new Date(Date.now() - 60_000).toISOString(),
    shouldPublish: true,
    content: { contentByLanguage: [{ languageCode: { languageCode: 'en' }, contentFields: [{ fieldName: 'title', stringValue: name }] }] },
  });
}

async function newDeliveryKey(): Promise<{ key: string; keyId: string }> {
  const r = await admin(b, 'CreateApiKey', { projectId: p.projectId, permissions: ['DELIVERY'] });
  return { key: r.body.key, keyId: parseApiKey(r.body.key)!.keyId };
}

beforeAll(async () => {
  await proxy.listen();
  const proxied = new URL(redisUrl);
  proxied.hostname = '127.0.0.1';
  proxied.port = String(proxy.port);
  a = await createTestApp({ REDIS_PREFIX: prefix, REDIS_URL: proxied.toString() });
  b = await createTestApp({ REDIS_PREFIX: prefix });
  p = await createProjectWithKeys(b);
  await ok(b, 'InsertSurface', p.management, { projectId: p.projectId, name: 'home' });
  await ok(b, 'InsertTreatmentType', p.management, {
    projectId: p.projectId,
    treatmentTypeName: 'card',
    lastModifiedBy: 'setup',
    surfaces: [{ surfaceName: 'home' }],
    contentFieldTypes: [{ fieldName: 'title', maximumLengthAllowed: 100, isPerLanguage: true }],
  });
  await insertTreatment('first');
  a.ctx.bus.on((m) => heard.push(m));
}, 60_000);

afterAll(async () => {
  await b?.close();
  await a?.close();
  await proxy.close();
});

describe('invalidation bus heartbeat', () => {
  it('a silent subscriber is detected; meanwhile revocations and catalogue changes still apply; it recovers', async () => {
    const spare = await newDeliveryKey();
    // warm A's caches: the key is verified once, the catalogue compiled once
    expect((await getTreatments(p.delivery)).status).toBe(200);
    expect((await getTreatments(spare.key)).status).toBe(200);
    await waitUntil(() => a.ctx.bus.isListening, 5000);
    heard.length = 0;

    proxy.stalled = true;
    // detection takes about 2 s (silence 1.5 s + a heartbeat tick); the wait is generous, as the
    // machine is shared: a subscriber that never noticed the silence would fail it
    await waitUntil(() => !a.ctx.bus.isListening, 20_000, 5);
    expect(heard).toContainEqual({ kind: 'all' });

    // B revokes the key while A hears nothing: A reads the store, so the key is refused at once
    expect((await admin(b, 'RevokeApiKey', { projectId: p.projectId, keyId: spare.keyId })).status).toBe(200);
    expect((await getTreatments(spare.key)).status).toBe(401);
    // delivery keeps answering, and a catalogue change made elsewhere reaches it by version polling
    await insertTreatment('second');
    await waitUntil(
      async () => {
        const r = await getTreatments(p.delivery);
        expect(r.status).toBe(200);
        return JSON.stringify(r.body).includes('second');
      },
      10_000,
      50,
    );
    // reconnecting through the black hole does not make the bus trust itself again
    await new Promise((r) => setTimeout(r, 2000));
    expect(a.ctx.bus.isListening).toBe(false);

    proxy.stalled = false;
    await waitUntil(() => a.ctx.bus.isListening, 15_000, 20);
    // listening again: B's changes arrive over the bus
    heard.length = 0;
    const later = await newDeliveryKey();
    expect((await getTreatments(later.key)).status).toBe(200);
    expect((await admin(b, 'RevokeApiKey', { projectId: p.projectId, keyId: later.keyId })).status).toBe(200);
    await waitUntil(() => heard.some((m) => m.kind === 'apiKey' && m.id === later.keyId), 5000);
    expect((await getTreatments(later.key)).status).toBe(401);
  }, 60_000);

  it('a healthy subscriber stays listening across many heartbeats', async () => {
    await waitUntil(() => a.ctx.bus.isListening, 15_000);
    heard.length = 0;
    await new Promise((r) => setTimeout(r, 3000));
    expect(a.ctx.bus.isListening).toBe(true);
    expect(heard.filter((m) => m.kind === 'all')).toEqual([]);
  }, 20_000);
});
