import type { Redis } from 'ioredis';
import type { RedisKeys } from './redis-keys.js';

/** What a feature's Redis stores are built from: the connection of the role, the key layout and the clock of change stamps. */
export interface StoreDeps {
  redis: Redis;
  keys: RedisKeys;
  now: () => number;
}
