import { Redis, type RedisOptions } from 'ioredis';

/**
 * Two connection profiles (conventions point 4). Producers on the request path fail fast, so a
 * Redis outage is a prompt 503 and never a hung request; workers and background loops wait for
 * Redis to come back (`maxRetriesPerRequest: null`, as BullMQ requires for workers).
 */
export type RedisProfile = 'producer' | 'worker';

export function redisOptions(profile: RedisProfile): RedisOptions {
  if (profile === 'producer') {
    return {
      // Commands issued in one event-loop turn (the profile reads of concurrent GetTreatments
      // requests) go out in one socket write instead of one write system call each.
      enableAutoPipelining: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      connectTimeout: 1000,
      commandTimeout: 1000,
      retryStrategy: (times) => Math.min(times * 100, 1000),
    };
  }
  return {
    maxRetriesPerRequest: null,
    enableReadyCheck: true,
    retryStrategy: (times) => Math.min(times * 200, 2000),
  };
}

/** A database index in the URL (`redis://host:6379/3`) is honoured by ioredis itself. */
export function createRedis(url: string, profile: RedisProfile, name?: string): Redis {
  return new Redis(url, { ...redisOptions(profile), connectionName: name, lazyConnect: false });
}

/** Resolves when the client is ready, rejects after `timeoutMs`. */
export async function waitForRedis(client: Redis, timeoutMs: number): Promise<void> {
  if (client.status === 'ready') return;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`Redis did not become ready within ${timeoutMs} ms`));
    }, timeoutMs);
    const onReady = () => {
      cleanup();
      resolve();
    };
    const cleanup = () => {
      clearTimeout(timer);
      client.off('ready', onReady);
    };
    client.on('ready', onReady);
  });
}

export type { Redis };
