import type { Redis } from 'ioredis';
import type { RedisKeys } from '../redis-keys.js';

export class MutualExclusionGroupStore {
  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    private readonly now: () => number,
  ) {}
}
