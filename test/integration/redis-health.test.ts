import { once } from 'node:events';
import { createServer, type Server, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createRedis, redisOptions } from '../../shared/platform/redis/redis.js';
import { RedisHealth, isRedisConnectionError } from '../../shared/platform/redis/redis-health.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A logger whose lines are kept, parsed. */
function capturedLog() {
  const lines: Array<{ level: number; msg: string }> = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l) as { level: number; msg: string });
      done();
    },
  });
  return { log: pino({ level: 'debug' }, stream), lines };
}

/** Blocks this process's event loop, as a process starved of CPU is blocked. */
function starve(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

/** A command's failure, as a request handler sees it. */
async function failure(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('the command succeeded');
}

/** The names of the commands in a chunk of RESP arrays (each `*N` array's first bulk string). */
function commandNames(chunk: string): string[] {
  const lines = chunk.split('\r\n');
  const names: string[] = [];
  for (let i = 0; i < lines.length; i++) if (lines[i]!.startsWith('*')) names.push(lines[i + 2]!.toUpperCase());
  return names;
}

const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('RedisHealth tells an outage from a process that was late', () => {
  const clients: Redis[] = [];
  const healths: RedisHealth[] = [];
  let silent: Server | undefined;
  const sockets: Socket[] = [];
  /** A `RedisHealth` of `redis`, with the lines it logs and the changes it tells. */
  function watch(redis: Redis, opts: { confirmMs?: number } = {}) {
    const { log, lines } = capturedLog();
    const changes: boolean[] = [];
    const health = new RedisHealth(redis, log, { ...opts, onChange: (up) => changes.push(up) });
    healths.push(health);
    return { health, lines, changes };
  }
  afterEach(async () => {
    for (const h of healths.splice(0)) h.close();
    for (const c of clients.splice(0)) c.disconnect();
    for (const s of sockets.splice(0)) s.destroy();
    await new Promise<void>((r) => (silent ? silent.close(() => r()) : r()));
    silent = undefined;
  });

  it('a command that "timed out" because the process was starved (the reply was waiting on the socket) is no outage: a warning, no error, no outage counted', async () => {
    const redis = createRedis(REDIS_URL, 'producer', 'health-starved');
    clients.push(redis);
    await once(redis, 'ready');
    const { health, lines, changes } = watch(redis);

    // the command is sent, then the process is starved past the command's timeout: its timer
    // fires before the reply, which Redis sent at once, is read
    const pending = failure(redis.get('health-starved-key'));
    // the corked socket writes it in this turn's check phase; starving right after it (before the
    // next poll phase reads the reply) leaves its timer due first when the loop wakes
    await new Promise((r) => setImmediate(r));
    starve(1300);
    const err = await pending;
    expect(err.message).toMatch(/Command timed out/);
    expect(isRedisConnectionError(err)).toBe(true);
    health.failed(err.message);
    health.failed(err.message); // the burst of timeouts of every command in flight
    await settle(300);

    expect(health.isDown).toBe(false);
    expect(changes).toEqual([]);
    expect(lines.filter((l) => l.level >= 50)).toEqual([]);
    const warnings = lines.filter((l) => l.level === 40);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.msg).toMatch(/timed out but Redis answers/);
    // a second starved moment within the minute is not logged again
    health.failed('Command timed out');
    await settle(300);
    expect(lines.filter((l) => l.level === 40)).toHaveLength(1);
  });

  it('a connection attempt that "timed out" because the process was starved is no outage either: Redis answers once reconnected', async () => {
    const redis = createRedis(REDIS_URL, 'producer', 'health-starved-connect');
    clients.push(redis);
    const { health, lines, changes } = watch(redis);
    // the connection is asked for, then the process is starved past the connect timeout (1 s):
    // ioredis opens the socket in a tick of its own, and the starving begins before the event
    // loop's next poll phase could see it connected (its connect timer is due first on waking)
    for (let i = 0; i < 10 && redis.stream?.connecting !== true; i++) await new Promise((r) => process.nextTick(r));
    expect(redis.stream?.connecting).toBe(true);
    starve(1300);
    await settle(2500);
    const timedOut = lines.find((l) => l.level === 40 && /timed out but Redis answers/.test(l.msg));
    expect(timedOut, JSON.stringify(lines)).toBeDefined();
    expect(lines.filter((l) => l.level >= 50)).toEqual([]);
    expect(changes).toEqual([]);
    expect(health.isDown).toBe(false);
    expect(await redis.ping()).toBe('PONG');
  });

  it('a Redis that accepts the connection but answers nothing: the timeout is confirmed by a PING that times out too, and the outage begins (logged once as an error)', async () => {
    silent = createServer((s) => {
      sockets.push(s);
      s.on('data', (d) => {
        // the connection's hand-shake is answered; the commands of the service are not
        for (const name of commandNames(d.toString())) if (name !== 'GET' && name !== 'PING') s.write('+OK\r\n');
      });
    });
    await new Promise<void>((r) => silent!.listen(0, '127.0.0.1', () => r()));
    const port = (silent.address() as AddressInfo).port;
    // the producer's options without the ready check (whose INFO would want a real reply)
    const redis = new Redis(`redis://127.0.0.1:${port}`, { ...redisOptions('producer'), enableReadyCheck: false });
    clients.push(redis);
    await once(redis, 'ready');
    const { health, lines, changes } = watch(redis, { confirmMs: 500 });

    const err = await failure(redis.get('never-answered'));
    expect(err.message).toMatch(/Command timed out/);
    health.failed(err.message);
    expect(health.isDown).toBe(true); // while the PING confirms it, 503s are logged as part of the outage
    await settle(1800);
    expect(health.isDown).toBe(true);
    expect(changes).toEqual([false]);
    const errors = lines.filter((l) => l.level >= 50);
    expect(errors).toHaveLength(1);
    expect(errors[0]!.msg).toMatch(/Redis unreachable/);
  });

  it('a refused connection begins the outage at once, without waiting for a PING', async () => {
    const redis = createRedis(REDIS_URL, 'producer', 'health-refused');
    clients.push(redis);
    await once(redis, 'ready');
    const { health, lines, changes } = watch(redis);
    health.failed('connect ECONNREFUSED 127.0.0.1:6379');
    expect(changes).toEqual([false]);
    expect(lines.filter((l) => l.level >= 50).map((l) => l.msg)).toEqual([expect.stringMatching(/Redis unreachable/)]);
    // Redis does answer, and nothing fails any more: the outage ends after the settle time
    await settle(1600);
    expect(health.isDown).toBe(false);
    expect(changes).toEqual([false, true]);
  });
});
