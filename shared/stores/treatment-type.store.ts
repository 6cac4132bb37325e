import type { Redis } from 'ioredis';
import type { RedisKeys } from '../redis-keys.js';

export class TreatmentTypeStore {
  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    private readonly now: () => number,
  ) {}
}
