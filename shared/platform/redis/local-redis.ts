import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';

const LOCAL_HOSTS = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

async function answers(url: string): Promise<boolean> {
  const probe = new Redis(url, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, connectTimeout: 500, retryStrategy: () => null });
  probe.on('error', () => undefined);
  try {
    await probe.connect();
    await probe.ping();
    return true;
  } catch {
    return false;
  } finally {
    probe.disconnect();
  }
}

export class RedisBinaryMissingError extends Error {
  constructor() {
    super('redis-server is not installed and nothing answers at REDIS_URL; install it with: apt-get update && apt-get install -y redis-server');
    this.name = 'RedisBinaryMissingError';
  }
}

/**
 * If nothing answers at a REDIS_URL that points at this machine, start a `redis-server` child
 * with its data under `dataDir` (append-only file on), so the all-in-one service runs on a fresh
 * machine. Returns the child (to stop at shutdown) or undefined when Redis was already there.
 */
export async function ensureLocalRedis(url: string, dataDir: string, log: Logger, opts: { detached?: boolean } = {}): Promise<ChildProcess | undefined> {
  if (await answers(url)) return undefined;
  const u = new URL(url);
  if (!LOCAL_HOSTS.has(u.hostname)) return undefined;
  if (spawnSync('redis-server', ['--version']).error) throw new RedisBinaryMissingError();
  const dir = resolve(dataDir, 'redis');
  mkdirSync(dir, { recursive: true });
  const port = u.port || '6379';
  const child = spawn(
    'redis-server',
    ['--port', port, '--bind', '127.0.0.1', '--dir', dir, '--appendonly', 'yes', '--appendfsync', 'everysec', '--maxmemory-policy', 'noeviction', '--save', ''],
    // detached: a signal to the supervisor's process group leaves Redis up until the services
    // that use it have stopped; the supervisor stops it last.
    { stdio: 'ignore', detached: opts.detached ?? false },
  );
  log.info({ port, dir }, 'started a local redis-server (append-only file on) because nothing answered at REDIS_URL');
  for (let i = 0; i < 50; i++) {
    if (await answers(url)) return child;
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill();
  throw new Error(`started redis-server on port ${port} but it did not answer within 5 s`);
}
