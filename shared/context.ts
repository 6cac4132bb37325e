import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Config } from './platform/config.js';
import type { InvalidationBus } from './platform/redis/invalidation-bus.js';
import type { RedisKeys } from './platform/redis/redis-keys.js';
import type { Authenticator } from './projects/index.js';
import type { ProjectStore } from './projects/index.js';
import type { ApiKeyStore } from './projects/index.js';
import type { RequestLimits } from './platform/limits/request-limits.js';

/**
 * The typed dependency object built once by a composition root and passed down.
 * (catalogue, ingestion, delivery) add their members to `extensions` typed in their own modules,
 * so this file does not become a god object everybody edits.
 */
export interface CoreContext {
  config: Readonly<Config>;
  log: Logger;
  /** Fail-fast connection for the request path (producer profile). */
  redis: Redis;
  keys: RedisKeys;
  bus: InvalidationBus;
  now: () => number;
  projects: ProjectStore;
  apiKeys: ApiKeyStore;
  auth: Authenticator;
  /** Per-key and per-address request limits of this process (D45). */
  limits: RequestLimits;
  /** Readiness: false while starting and once shutdown began. */
  lifecycle: { ready: boolean };
}
