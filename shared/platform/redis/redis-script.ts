import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

/**
 * A Lua script run by its SHA1 (EVALSHA): the body crosses the wire and is hashed by Redis only
 * when Redis does not know it yet (first use, or after a restart flushed the script cache), not
 * on every call as with EVAL. The hot ingest path runs one script per job. Nothing is registered
 * per client or per node: on a Redis Cluster each node that lacks the script answers NOSCRIPT
 * and gets the body once, the same way. Scripts come from `script-loader.ts`.
 */
export class RedisScript {
  readonly sha: string;

  /** @param numberOfKeys - the keys every call passes; undefined when the caller decides */
  constructor(
    readonly name: string,
    readonly lua: string,
    readonly numberOfKeys?: number,
  ) {
    this.sha = createHash('sha1').update(lua).digest('hex');
  }

  /** `keys` and `args` go as one array (not spread into the call), so tens of thousands of arguments are fine. */
  async run(redis: Redis, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    if (this.numberOfKeys !== undefined && keys.length !== this.numberOfKeys) {
      throw new Error(`Lua script ${this.name} takes ${this.numberOfKeys} keys, got ${keys.length}`);
    }
    try {
      return await redis.call('evalsha', [this.sha, keys.length, ...keys].concat(args));
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
      return await redis.call('eval', [this.lua, keys.length, ...keys].concat(args));
    }
  }
}
