import { createHash } from 'node:crypto';
import { Command, type Redis } from 'ioredis';

/**
 * Arguments from which a script call is sent as a command built here rather than through
 * `redis.call`. ioredis flattens every command's arguments with `Array.prototype.flat` (once
 * more to route an autopipelined command on a Cluster), which V8 runs at about 70 ns an argument
 * against 4 ns for a copy: the recompute's writes of a backfill over 100,000 users (about 50
 * arguments a user) spent 0.5 s of the background process's 3.4 s of CPU there. A command this
 * large is a socket write of its own anyway, so it loses nothing by leaving the autopipeline; the
 * scripts of the hot paths (a job's profile update) stay below it.
 */
export const LARGE_SCRIPT_CALL_ARGS = 2000;

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
      return await send(redis, 'evalsha', [this.sha, keys.length, ...keys].concat(args));
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
      return await send(redis, 'eval', [this.lua, keys.length, ...keys].concat(args));
    }
  }
}

/** `redis.call(name, argv)`, without ioredis's flattening of `argv` when it is large (see LARGE_SCRIPT_CALL_ARGS). */
function send(redis: Redis, name: 'evalsha' | 'eval', argv: (string | number)[]): Promise<unknown> {
  // a key prefix is applied by the Command's constructor to the arguments it is given: the
  // service sets none, but a client with one keeps the plain path
  if (argv.length < LARGE_SCRIPT_CALL_ARGS || (redis.options as { keyPrefix?: string } | undefined)?.keyPrefix) return redis.call(name, argv);
  // the constructor turns its arguments into strings: these are given after it, so here
  for (let i = 0; i < argv.length; i++) if (typeof argv[i] !== 'string') argv[i] = String(argv[i]);
  const command = new Command(name, [], { replyEncoding: 'utf8' });
  command.args = argv;
  // a Cluster routes it by its keys, which it reads from these arguments (EVALSHA's numkeys)
  return redis.sendCommand(command) as Promise<unknown>;
}
