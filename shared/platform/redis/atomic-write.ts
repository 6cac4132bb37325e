import type { Redis } from 'ioredis';
import { AbortedError } from '../errors.js';
import { redisScript } from './script-loader.js';
import { deliverLocally } from './invalidation-bus.js';

/**
 * Optimistic, atomic writes of management state. A writer reads what it wants to change, computes
 * the new records in TypeScript, then applies them with one Lua script that first checks every
 * value it read is still the same (compare-and-set). On a conflict the whole read-compute-write
 * is retried, so two concurrent writers of one treatment both succeed, in some order, and neither
 * change is lost. The change-log entry, the catalogue version bump and the invalidation message
 * are part of the same script: a change is either fully recorded or not at all.
 */
export interface AtomicWriteSpec {
  /** HGET key field must equal `expect` (null: the field must not exist). */
  checks: { key: string; field: string; expect: string | null }[];
  /**
   * GET key must equal `value` (null: the key must not exist). Used with the project's catalogue
   * version, which every management write bumps: a writer that validated against many records
   * (every treatment of a type) learns that none of them changed without checking each.
   */
  expectString?: { key: string; value: string | null };
  /** HSET (or HDEL when value is null) applied in order once every check passed. */
  writes: { key: string; field: string; value: string | null }[];
  /** Appended to a stream (the operator-readable change log). */
  change?: { key: string; entry: Record<string, string> };
  /** INCR'd when present (catalogue version of a project). */
  versionKey?: string;
  /** PUBLISH'd when present. */
  publish?: { channel: string; message: string };
}

/** Entries kept in a project's change stream (approximate trim); each entry is at most CHANGE_ENTRY_MAX_BYTES of before/after. */
export const CHANGE_LOG_MAX_ENTRIES = 100_000;

/*
 * Every key arrives in KEYS (the spec names them by index), so the script is Redis Cluster-ready
 * once a change's keys share one hash tag.
 */
const SCRIPT = redisScript(new URL('./atomic-write.lua', import.meta.url));

export async function atomicWrite(redis: Redis, spec: AtomicWriteSpec): Promise<boolean> {
  const keys: string[] = [];
  const index = new Map<string, number>();
  const k = (key: string) => {
    let i = index.get(key);
    if (i === undefined) index.set(key, (i = keys.push(key)));
    return i;
  };
  const body = {
    checks: spec.checks.map((c) => ({ key: k(c.key), field: c.field, expect: c.expect ?? null })),
    expectString: spec.expectString ? { key: k(spec.expectString.key), value: spec.expectString.value ?? null } : undefined,
    writes: spec.writes.map((w) => ({ key: k(w.key), field: w.field, value: w.value })),
    change: spec.change && { key: k(spec.change.key), entry: spec.change.entry, maxlen: String(CHANGE_LOG_MAX_ENTRIES) },
    versionKey: spec.versionKey === undefined ? undefined : k(spec.versionKey),
    publish: spec.publish,
  };
  const res = await SCRIPT.run(redis, keys, [JSON.stringify(body)]);
  if (res !== 1) return false;
  if (spec.publish) deliverLocally(spec.publish.channel, spec.publish.message);
  return true;
}

/**
 * Runs `attempt` until it reports success; `attempt` re-reads state each time. After
 * `maxAttempts` conflicts the caller gets 409 ABORTED and may retry the same request.
 */
export async function withOptimisticRetry<T>(what: string, attempt: () => Promise<{ done: true; value: T } | { done: false }>, maxAttempts = 20): Promise<T> {
  for (let i = 0; i < maxAttempts; i++) {
    const r = await attempt();
    if (r.done) return r.value;
    await new Promise((res) => setTimeout(res, Math.random() * 5 * (i + 1)));
  }
  throw new AbortedError(`${what}: too many concurrent changes, retry the request`);
}
