import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, createProjectWithKeys, createTestApp, type ProjectKeys, type TestApp } from '../helpers/context.js';
import { clientAddressKey } from '../../shared/platform/limits/client-address.js';

/**
 * Request-rate limits: per API key (RATE_LIMIT_PER_KEY, burst 2×) and failed
 * authentications per client address (RATE_LIMIT_UNAUTHENTICATED), both 429 RESOURCE_EXHAUSTED
 * with Retry-After. Assertions allow for any slowness of the machine: the number admitted is
 * bounded by burst + rate × elapsed time, never by a wall-clock deadline.
 */

interface Res {
  status: number;
  body: any;
  retryAfter: string | undefined;
}

async function post(t: TestApp, url: string, headers: Record<string, string>, payload: object, remoteAddress = '127.0.0.1', app = t.app): Promise<Res> {
  const res = await app.inject({ method: 'POST', url, headers, payload, remoteAddress });
  return { status: res.statusCode, body: res.json(), retryAfter: res.headers['retry-after'] as string | undefined };
}

function expect429(r: Res): void {
  expect(r.status, JSON.stringify(r.body)).toBe(429);
  expect(r.body).toEqual({ error: { code: 429, status: 'RESOURCE_EXHAUSTED', message: expect.any(String), details: [] } });
  expect(r.retryAfter).toMatch(/^\d+$/);
  expect(Number(r.retryAfter)).toBeGreaterThanOrEqual(1);
}

const randomKey = () => `tds_${randomBytes(8).toString('hex')}_${randomBytes(32).toString('base64url')}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The answer to `probe` sent at once after `block` was refused (429). A token refills every 200 ms at 5/s, so
 * a probe that came later than 150 ms after the refusal proves nothing on a slow machine: the address is
 * blocked again and the probe sent again, until the machine is quick enough to tell.
 */
async function rightAfterBlock(block: () => Promise<Res>, probe: () => Promise<Res>): Promise<Res> {
  for (let attempt = 0; attempt < 10; attempt++) {
    let refusedAt: number | undefined;
    for (let i = 0; i < 100 && refusedAt === undefined; i++) if ((await block()).status === 429) refusedAt = performance.now();
    expect(refusedAt, 'never refused').toBeDefined();
    const r = await probe();
    if (performance.now() - refusedAt! < 150) return r;
  }
  throw new Error('no probe came within 150 ms of a refusal in 10 attempts');
}

describe('per API key (RATE_LIMIT_PER_KEY=5, burst 10)', () => {
  let t: TestApp;
  let p: ProjectKeys;
  let q: ProjectKeys;
  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_PER_KEY: '5' });
    p = await createProjectWithKeys(t);
    q = await createProjectWithKeys(t);
  });
  afterAll(async () => {
    await t?.close();
  });

  const surfaces = (key: string, projectId: string, app?: TestApp['app']) =>
    post(t, '/v1/GetAllSurfaces', { 'x-api-key': key }, { projectId }, '127.0.0.1', app);

  it('answers 429 with Retry-After and the error body past the burst, leaves other keys alone, and recovers', async () => {
    const started = performance.now();
    let admitted = 0;
    let refused: Res | undefined;
    for (let i = 0; i < 500 && !refused; i++) {
      const r = await surfaces(p.management, p.projectId);
      if (r.status === 200) admitted++;
      else refused = r;
    }
    const elapsedS = (performance.now() - started) / 1000;
    expect(refused).toBeDefined();
    expect429(refused!);
    expect(admitted).toBeGreaterThanOrEqual(10);
    expect(admitted).toBeLessThanOrEqual(10 + Math.ceil(5 * elapsedS) + 1);

    // other keys, of the same project and of another one, have buckets of their own
    expect((await surfaces(q.management, q.projectId)).status).toBe(200);
    expect(
      (
        await post(
          t,
          '/v1/LogEvents',
          { 'x-api-key': p.logEvents },
          { projectId: p.projectId, userId: 'u', events: [{ eventName: 'e', clientEventTimestamp: new Date().toISOString() }] },
        )
      ).status,
    ).toBe(200);

    // after Retry-After the key is admitted again
    await sleep(Number(refused!.retryAfter) * 1000 + 100);
    expect((await surfaces(p.management, p.projectId)).status).toBe(200);
  });

  it('counts a key on both listeners together', async () => {
    const alt = await createProjectWithKeys(t, undefined, 'ALT');
    const body = { projectId: alt.projectId, userId: 'u', surfaces: [{ surface: 'none' }] };
    let refused: Res | undefined;
    for (let i = 0; i < 500 && !refused; i++) {
      // the alternate listener serves delivery; the base one answers 401 for this project, but counts the key
      const r = await post(t, '/v1/GetTreatments', { 'x-api-key': alt.delivery }, body, '127.0.0.1', i % 2 ? t.alt : t.app);
      if (r.status === 429) refused = r;
    }
    expect(refused).toBeDefined();
    expect429(refused!);
  });
});

describe('failed authentications per address (RATE_LIMIT_UNAUTHENTICATED=5)', () => {
  let t: TestApp;
  let p: ProjectKeys;
  let redisCommands = 0;
  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_UNAUTHENTICATED: '5' });
    p = await createProjectWithKeys(t);
    // A spy on the request-path connection: every command the API sends to Redis passes here.
    const redis = t.ctx.redis as unknown as { sendCommand: (...a: unknown[]) => unknown };
    const send = redis.sendCommand.bind(redis);
    redis.sendCommand = (...a: unknown[]) => {
      redisCommands++;
      return send(...a);
    };
  });
  afterAll(async () => {
    await t?.close();
  });

  it('refuses a flood of unknown keys from one address with 429 without reading Redis, while a valid key from there works', async () => {
    const attacker = '10.1.2.3';
    const body = { projectId: p.projectId };
    // the valid key is used once before the flood (verified, then known to this process)
    expect((await post(t, '/v1/GetAllSurfaces', { 'x-api-key': p.management }, body, attacker)).status).toBe(200);

    const before = redisCommands;
    const started = performance.now();
    const statuses: number[] = [];
    let last429: Res | undefined;
    for (let i = 0; i < 300; i++) {
      const r = await post(t, '/v1/GetAllSurfaces', { 'x-api-key': randomKey() }, body, attacker);
      statuses.push(r.status);
      if (r.status === 429) last429 = r;
    }
    const elapsedS = (performance.now() - started) / 1000;
    const lookups = redisCommands - before;
    const failures = statuses.filter((s) => s === 401).length;
    // at most the bucket (5) plus what refilled meanwhile got to Redis, one key read each
    const allowed = 5 + Math.ceil(5 * elapsedS) + 1;
    expect(failures).toBeGreaterThanOrEqual(5);
    expect(failures).toBeLessThanOrEqual(allowed);
    expect(lookups).toBeGreaterThan(0); // the spy sees the reads of the first few
    expect(lookups).toBeLessThanOrEqual(allowed);
    expect(statuses.filter((s) => s === 429).length).toBe(300 - failures);
    expect429(last429!);

    // the valid key keeps working from the blocked address, as does anyone elsewhere
    expect((await post(t, '/v1/GetAllSurfaces', { 'x-api-key': p.management }, body, attacker)).status).toBe(200);
    expect((await post(t, '/v1/GetAllSurfaces', { 'x-api-key': randomKey() }, body, '10.9.9.9')).status).toBe(401);
    // missing and malformed keys count too: from a fresh address they run out its bucket as unknown keys do
    // (a fresh address, so the refill since the flood above, on a slow machine, cannot hide the count)
    const other = '10.1.2.4';
    const missingStarted = performance.now();
    const missing: number[] = [];
    for (let i = 0; i < 60 && missing.at(-1) !== 429; i++) {
      const headers: Record<string, string> = i % 2 ? { 'x-api-key': 'not-a-key' } : {};
      missing.push((await post(t, '/v1/GetAllSurfaces', headers, body, other)).status);
    }
    const missingAllowed = 5 + Math.ceil(5 * ((performance.now() - missingStarted) / 1000)) + 1;
    expect(missing.at(-1)).toBe(429);
    expect(missing.slice(0, -1).every((s) => s === 401)).toBe(true);
    expect(missing.length - 1).toBeGreaterThanOrEqual(5);
    expect(missing.length - 1).toBeLessThanOrEqual(missingAllowed);

    // the address recovers once its bucket refills
    await sleep(Number(last429!.retryAfter) * 1000 + 100);
    expect((await post(t, '/v1/GetAllSurfaces', { 'x-api-key': randomKey() }, body, attacker)).status).toBe(401);
  });

  it('bounds the Redis reads of a flood that arrives all at once', async () => {
    const attacker = '10.7.7.7';
    const before = redisCommands;
    const started = performance.now();
    const answers = await Promise.all(
      Array.from({ length: 300 }, () => post(t, '/v1/GetAllSurfaces', { 'x-api-key': randomKey() }, { projectId: p.projectId }, attacker)),
    );
    const elapsedS = (performance.now() - started) / 1000;
    const allowed = 5 + Math.ceil(5 * elapsedS) + 1;
    expect(redisCommands - before).toBeLessThanOrEqual(allowed);
    expect(answers.filter((a) => a.status === 401).length).toBeLessThanOrEqual(allowed);
    expect(answers.filter((a) => a.status === 429).length).toBeGreaterThanOrEqual(300 - allowed);
  });

  it('counts wrong admin tokens too, and a blocked address cannot try more tokens', async () => {
    const attacker = '10.4.5.6';
    let refused: Res | undefined;
    for (let i = 0; i < 100 && !refused; i++) {
      const r = await post(t, '/admin/v1/ListProjects', { authorization: `Bearer wrong-token-${i}-0123456789` }, {}, attacker);
      if (r.status === 429) refused = r;
      else expect(r.status).toBe(401);
    }
    expect429(refused!);
    // the right token is refused too while blocked: no guessing continues, whatever the guess
    let guess = 0;
    const wrongToken = () => post(t, '/admin/v1/ListProjects', { authorization: `Bearer wrong-again-${guess++}-0123456789` }, {}, attacker);
    const rightToken = () => post(t, '/admin/v1/ListProjects', { authorization: `Bearer ${ADMIN_TOKEN}` }, {}, attacker);
    expect((await rightAfterBlock(wrongToken, rightToken)).status).toBe(429);
    const unknownKey = () => post(t, '/v1/GetAllSurfaces', { 'x-api-key': randomKey() }, { projectId: p.projectId }, attacker);
    expect((await rightAfterBlock(wrongToken, unknownKey)).status).toBe(429);
    // elsewhere the admin API works
    expect((await post(t, '/admin/v1/ListProjects', { authorization: `Bearer ${ADMIN_TOKEN}` }, {}, '10.4.5.7')).status).toBe(200);
  });
});

describe('client address key', () => {
  it('groups IPv6 by /64 and unwraps IPv4-mapped addresses', () => {
    expect(clientAddressKey('10.0.0.1')).toBe('10.0.0.1');
    expect(clientAddressKey('::ffff:10.0.0.1')).toBe('10.0.0.1');
    expect(clientAddressKey('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(clientAddressKey('2001:db8:1:2:bbbb:cccc:dddd:eeee')).toBe('2001:db8:1:2::/64');
    expect(clientAddressKey('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(clientAddressKey('::1')).toBe('0:0:0:0::/64');
    expect(clientAddressKey(undefined)).toBe('unknown');
  });
});

describe("a key's own limit (CreateApiKey requestsPerSecond)", () => {
  let t: TestApp;
  let p: ProjectKeys;
  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_PER_KEY: '1000' });
    p = await createProjectWithKeys(t);
  });
  afterAll(async () => {
    await t?.close();
  });
  const admin = (op: string, body: object) => post(t, `/admin/v1/${op}`, { authorization: `Bearer ${ADMIN_TOKEN}` }, body);

  it('is validated, stored on the key, listed, and honoured by its bucket; other keys keep RATE_LIMIT_PER_KEY', async () => {
    for (const requestsPerSecond of [0, -1, 1.5, '5', 10_000_001]) {
      const r = await admin('CreateApiKey', { projectId: p.projectId, permissions: ['TREATMENT_MANAGEMENT'], requestsPerSecond });
      expect(r.status, JSON.stringify(requestsPerSecond)).toBe(400);
      expect(r.body.error.details.map((d: { field: string }) => d.field)).toContain('requestsPerSecond');
    }
    const made = await admin('CreateApiKey', { projectId: p.projectId, permissions: ['TREATMENT_MANAGEMENT'], requestsPerSecond: 5 });
    expect(made.status).toBe(200);
    expect(made.body.apiKey.requestsPerSecond).toBe(5);
    const listed = (await admin('ListApiKeys', { projectId: p.projectId })).body.apiKeys as { keyId: string; requestsPerSecond?: number }[];
    expect(listed.find((k) => k.keyId === made.body.apiKey.keyId)?.requestsPerSecond).toBe(5);
    expect(listed.filter((k) => k.requestsPerSecond === undefined)).toHaveLength(3);

    const started = performance.now();
    let admitted = 0;
    let refused: Res | undefined;
    for (let i = 0; i < 500 && !refused; i++) {
      const r = await post(t, '/v1/GetAllSurfaces', { 'x-api-key': made.body.key }, { projectId: p.projectId });
      if (r.status === 200) admitted++;
      else refused = r;
    }
    const elapsedS = (performance.now() - started) / 1000;
    expect429(refused!);
    expect(admitted).toBeGreaterThanOrEqual(10);
    expect(admitted).toBeLessThanOrEqual(10 + Math.ceil(5 * elapsedS) + 1);
    // the project's other management key (1,000/s, burst 2,000) is not limited by it
    for (let i = 0; i < 50; i++) expect((await post(t, '/v1/GetAllSurfaces', { 'x-api-key': p.management }, { projectId: p.projectId })).status).toBe(200);
  });
});

describe('behind a proxy (TRUST_PROXY)', () => {
  const PROXY = '10.0.0.5';
  let trusting: TestApp;
  let plain: TestApp;
  let p: ProjectKeys;
  beforeAll(async () => {
    trusting = await createTestApp({ RATE_LIMIT_UNAUTHENTICATED: '5', TRUST_PROXY: `${PROXY},10.9.0.0/16` });
    plain = await createTestApp({ RATE_LIMIT_UNAUTHENTICATED: '5' });
    p = await createProjectWithKeys(trusting);
  });
  afterAll(async () => {
    await trusting?.close();
    await plain?.close();
  });

  const viaProxy = (t: TestApp, client: string, headers: Record<string, string> = { 'x-api-key': randomKey() }) =>
    post(t, '/v1/GetAllSurfaces', { ...headers, 'x-forwarded-for': client }, { projectId: p.projectId }, PROXY);
  const flood = async (t: TestApp, send: () => Promise<Res>) => {
    for (let i = 0; i < 100; i++) if ((await send()).status === 429) return true;
    return false;
  };

  it('counts failed authentications per forwarded client: bad keys from one client do not lock out another', async () => {
    const blocked = () => viaProxy(trusting, '203.0.113.7');
    expect((await rightAfterBlock(blocked, blocked)).status).toBe(429);
    // another client behind the same proxy: its failures are its own, its admin token and new keys work
    expect((await viaProxy(trusting, '203.0.113.8')).status).toBe(401);
    expect((await viaProxy(trusting, '203.0.113.8', { 'x-api-key': p.management })).status).toBe(200);
    expect(
      (await post(trusting, '/admin/v1/ListProjects', { authorization: `Bearer ${ADMIN_TOKEN}`, 'x-forwarded-for': '203.0.113.8' }, {}, PROXY)).status,
    ).toBe(200);
    // a chain of proxies inside the trusted range: the client is the first untrusted address from the right
    const chained = () =>
      post(trusting, '/v1/GetAllSurfaces', { 'x-api-key': randomKey(), 'x-forwarded-for': '203.0.113.7, 10.9.1.1' }, { projectId: p.projectId }, PROXY);
    expect((await rightAfterBlock(blocked, chained)).status).toBe(429);
  });

  it('cannot be spoofed: a client that is not a trusted proxy is counted by its own address whatever it forwards', async () => {
    const direct = '198.51.100.9';
    let i = 0;
    const spoofing = () =>
      post(trusting, '/v1/GetAllSurfaces', { 'x-api-key': randomKey(), 'x-forwarded-for': `192.0.2.${i++ % 250}` }, { projectId: p.projectId }, direct);
    const plainly = () => post(trusting, '/v1/GetAllSurfaces', { 'x-api-key': randomKey() }, { projectId: p.projectId }, direct);
    expect((await rightAfterBlock(spoofing, plainly)).status).toBe(429);
  });

  it('without TRUST_PROXY every client behind the proxy shares its address (the header is ignored)', async () => {
    const q = await createProjectWithKeys(plain);
    const send = (client: string) =>
      post(plain, '/v1/GetAllSurfaces', { 'x-api-key': randomKey(), 'x-forwarded-for': client }, { projectId: q.projectId }, PROXY);
    expect(
      (
        await rightAfterBlock(
          () => send('203.0.113.7'),
          () => send('203.0.113.8'),
        )
      ).status,
    ).toBe(429);
  });

  it('a hop count trusts that many proxies in front of the service', async () => {
    const hops = await createTestApp({ RATE_LIMIT_UNAUTHENTICATED: '5', TRUST_PROXY: '2' });
    try {
      const q = await createProjectWithKeys(hops);
      // load balancer (the connection) → proxy (last entry) → client
      const send = (client: string) =>
        post(hops, '/v1/GetAllSurfaces', { 'x-api-key': randomKey(), 'x-forwarded-for': `${client}, 10.1.1.1` }, { projectId: q.projectId }, PROXY);
      expect(await flood(hops, () => send('203.0.113.7'))).toBe(true);
      expect((await send('203.0.113.8')).status).toBe(401);
    } finally {
      await hops.close();
    }
  });
});
