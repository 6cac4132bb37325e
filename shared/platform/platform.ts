import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import { createRedis, queueConnection } from './redis/redis.js';
import { InvalidationBus } from './redis/invalidation-bus.js';
import { RedisHealth } from './redis/redis-health.js';
import { redisKeys, type RedisKeys } from './redis/redis-keys.js';
import { createMetrics, type Metrics } from './metrics.js';
import { RequestLimits } from './limits/request-limits.js';

/** What every role of a process shares: configuration, logging, the request-path Redis connection, the bus, metrics. */
export interface Platform {
  config: Readonly<Config>;
  log: Logger;
  /** Fail-fast connection for the request path (producer profile). */
  redis: Redis;
  /** Whether this process reaches Redis: an outage is logged once when it begins and once when it ends. */
  redisHealth: RedisHealth;
  keys: RedisKeys;
  bus: InvalidationBus;
  now: () => number;
  /** Counters and gauges of this process, served at `GET /metrics` of the ops listener (`OPS_PORT`). */
  metrics: Metrics;
  /** Per-key and per-address request limits of this process. */
  limits: RequestLimits;
  /** Readiness: false while starting and once shutdown began. */
  lifecycle: { ready: boolean };
}

export interface PlatformOptions {
  /** Injectable clock for tests. */
  now?: () => number;
}

export function createPlatform(config: Readonly<Config>, log: Logger, opts: PlatformOptions = {}): Platform {
  const now = opts.now ?? Date.now;
  const redis = createRedis(config, 'producer', 'tds-api');
  redis.on('error', (err) => log.debug({ err }, 'redis (producer) error'));
  // the BullMQ queues' own connection, made now so that waiting for `redis` waits for it too
  queueConnection(redis);
  const keys = redisKeys(config.redisPrefix);
  const metrics = createMetrics({ now });
  return {
    config,
    log,
    redis,
    redisHealth: new RedisHealth(redis, log, { onChange: (up) => (up ? undefined : metrics.countOutage('redis')) }),
    keys,
    bus: new InvalidationBus(config, keys.invalidationChannel(), log),
    now,
    metrics,
    limits: new RequestLimits(config),
    lifecycle: { ready: false },
  };
}

/** Last to close: every role's connections and subscriptions are gone by then. */
export async function closePlatform(platform: Platform): Promise<void> {
  platform.redisHealth.close();
  await platform.bus.close();
  platform.redis.disconnect();
}
