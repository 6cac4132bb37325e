import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { createTestApp, type TestApp } from '../helpers/context.js';
import { readAnswer } from '../helpers/raw-answer.js';

/**
 * Idle keep-alive connections stay open as long as HTTP_KEEP_ALIVE_TIMEOUT_MS says (72 s by
 * default, Fastify's own default), not node:http's 5 s: the public server is made by the load
 * shedder's server factory, to which Fastify does not apply its connection options itself. A
 * server that closes an idle connection first races the next request a load balancer or a client
 * pool sends on it, and that request fails (a load balancer answers it 502).
 */
let defaults: TestApp;
let short: TestApp;

async function listen(t: TestApp): Promise<number> {
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  return (t.app.server.address() as AddressInfo).port;
}

async function open(port: number): Promise<Socket> {
  const s = connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => s.once('connect', resolve).once('error', reject));
  return s;
}

/** GET /healthz on a kept-alive connection: its answer. */
function healthz(s: Socket): ReturnType<typeof readAnswer> {
  const answer = readAnswer(s);
  s.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
  return answer;
}

const closed = (s: Socket): Promise<void> => new Promise((resolve) => (s.closed ? resolve() : s.once('close', () => resolve())));

beforeAll(async () => {
  defaults = await createTestApp();
  short = await createTestApp({ HTTP_KEEP_ALIVE_TIMEOUT_MS: '300' });
});

afterAll(async () => {
  await defaults?.close();
  await short?.close();
});

describe('idle keep-alive connections', () => {
  it('are kept open 72 s by default: a connection idle past node:http’s 5 s still answers', async () => {
    const port = await listen(defaults);
    expect(defaults.app.server.keepAliveTimeout).toBe(72_000);
    const s = await open(port);
    try {
      const first = await healthz(s);
      expect(first.status).toBe(200);
      expect(first.headers['keep-alive']).toBe('timeout=72');
      await new Promise((r) => setTimeout(r, 5_500));
      expect(s.closed).toBe(false);
      expect((await healthz(s)).status).toBe(200);
    } finally {
      s.destroy();
    }
  }, 15_000);

  it('are closed by the server after HTTP_KEEP_ALIVE_TIMEOUT_MS when it is set', async () => {
    const port = await listen(short);
    const s = await open(port);
    try {
      const first = await healthz(s);
      expect(first.status).toBe(200);
      const answeredAt = performance.now();
      await closed(s);
      const idleMs = performance.now() - answeredAt;
      // closed by the server's timer, not at once and not only when the test ends
      expect(idleMs).toBeGreaterThan(200);
      expect(idleMs).toBeLessThan(3_000);
    } finally {
      s.destroy();
    }
  }, 15_000);
});
