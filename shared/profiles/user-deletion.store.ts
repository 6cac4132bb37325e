import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { RedisKeys } from '../platform/redis/redis-keys.js';
import { isCluster, sendsCommandsTogether } from '../platform/redis/redis.js';
import { INSERT_MARKER_DAYS, JOB_MARKER_TTL_SECONDS } from './insert-markers.js';
import { redisScript } from '../platform/redis/script-loader.js';
import { changeFields } from '../projects/index.js';
import { CHANGE_LOG_MAX_ENTRIES } from '../platform/redis/atomic-write.js';
import { ProfileStore } from './profile.store.js';

/**
 * A user's data erased on request, and never brought back: the user's own, and that of the
 * pre-login ids merged into the user (identity merge), each id like a user of its own.
 *
 * Two records per project, in the project's slot `{<project>}`:
 * - `deleted-users`, a sorted set user id → deletion time (ms): the tombstones. An ingestion job
 *   that was accepted (queued) before the deletion and runs after it is dropped for that user
 *   (its rows are not written, its profile changes not applied), and a recompute that read
 *   ClickHouse before the deletion does not write that user. Entries live TOMBSTONE_TTL_SECONDS
 *   (as long as a queued job can still be retried, JOB_MARKER_TTL_SECONDS), pruned on every
 *   deletion, so the set holds at most the deletions of that period.
 * - `pending-deletions`, a hash user id → deletion time (ms): users whose ClickHouse rows may not
 *   be gone yet. Every recompute excludes their rows ingested up to the deletion time; the
 *   deletion job removes the entry once its mutations have finished. It holds only deletions in
 *   progress.
 */
export const TOMBSTONE_TTL_SECONDS = JOB_MARKER_TTL_SECONDS;

const DAY_MS = 86_400_000;

/** Compare-and-delete of a pending deletion, in one script (one key). */
const HDEL_IF_EQUAL = redisScript(new URL('./hdel-if-equal-1.lua', import.meta.url));

/** The change log names a deleted user by this digest, never by the id itself. */
export function userIdDigest(userId: string): string {
  return createHash('sha256').update(userId).digest('hex');
}

/** A glob pattern matching exactly the keys that start with `prefix` (SCAN MATCH). */
export function globLiteral(prefix: string): string {
  return prefix.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}

export interface UserRef {
  projectId: string;
  userId: string;
}

export class UserDeletionStore {
  /** Reads merge markers and aliases only (no profile lifetime involved). */
  private readonly profiles: ProfileStore;

  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
  ) {
    this.profiles = new ProfileStore(redis, keys);
  }

  /**
   * The tombstones: from now on jobs of these users accepted up to `deletedAtMs` are dropped, and
   * recomputes leave out their rows ingested up to `rowsUpToMs` (default: the same time).
   * Idempotent; a later call moves the times forward. One transaction (the project's slot).
   */
  async tombstone(projectId: string, userIds: readonly string[], deletedAtMs: number, rowsUpToMs = deletedAtMs): Promise<void> {
    const tomb = this.keys.deletedUsers(projectId);
    const pending = this.keys.pendingUserDeletions(projectId);
    const m = this.redis.multi();
    for (const userId of userIds) m.zadd(tomb, String(deletedAtMs), userId).hset(pending, userId, String(rowsUpToMs));
    await m
      .zremrangebyscore(tomb, '-inf', String(deletedAtMs - TOMBSTONE_TTL_SECONDS * 1000))
      .expire(tomb, TOMBSTONE_TTL_SECONDS)
      .expire(pending, TOMBSTONE_TTL_SECONDS)
      .exec();
  }

  /**
   * Tombstones the user, then the pre-login ids merged into it (see `ProfileStore.mergedIds`)
   * and the `known` ones (found by an earlier erasure, whose markers are gone). Returns every id
   * to erase, the user first.
   */
  async tombstoneWithMerged(projectId: string, userId: string, deletedAtMs: number, known: readonly string[] = []): Promise<string[]> {
    await this.tombstone(projectId, [userId], deletedAtMs);
    const merged = new Set([...known, ...(await this.profiles.mergedIds(projectId, userId))]);
    merged.delete(userId);
    if (merged.size > 0) await this.tombstone(projectId, [...merged], deletedAtMs);
    return [userId, ...merged];
  }

  /** Moves the recompute's cut-off of pending deletions (the rows the ClickHouse job deletes). */
  async setRowsCutoff(projectId: string, userIds: readonly string[], rowsUpToMs: number): Promise<void> {
    const pending = this.keys.pendingUserDeletions(projectId);
    const m = this.redis.multi();
    for (const userId of userIds) m.hset(pending, userId, String(rowsUpToMs));
    await m.expire(pending, TOMBSTONE_TTL_SECONDS).exec();
  }

  /** Deletes every key of each of these users (see `deleteUserKeys`), user by user: each its own slot. */
  async deleteKeys(projectId: string, userIds: readonly string[], nowMs: number): Promise<number> {
    let deleted = 0;
    for (const userId of userIds) deleted += await this.deleteUserKeys(projectId, userId, nowMs);
    return deleted;
  }

  /**
   * Deletes every key of the user: the computable ones (profile, insertId marker sets of the
   * arrival days that can still exist) and then whatever else carries the user's prefix (job
   * markers), found by SCAN on each primary (all of them are in one slot).
   */
  private async deleteUserKeys(projectId: string, userId: string, nowMs: number): Promise<number> {
    const computed = [this.keys.profile(projectId, userId)];
    // marker sets of arrival days: today (and tomorrow, for a clock ahead) back to the oldest that can still exist
    const today = Math.floor(nowMs / DAY_MS) * DAY_MS;
    for (let i = -1; i <= INSERT_MARKER_DAYS; i++)
      computed.push(this.keys.insertMarkers(projectId, userId, new Date(today - i * DAY_MS).toISOString().slice(0, 10)));
    // every key carries the user's hash tag: one slot, so one DEL even on a cluster
    const deleted = await this.redis.del(...computed);
    return deleted + (await this.deleteMatching(this.keys.userKeyPrefix(projectId, userId)));
  }

  /** Tombstones, then every key of the user and of its merged pre-login ids (see `tombstoneWithMerged` and `deleteKeys`). */
  async erase(projectId: string, userId: string, deletedAtMs: number, known: readonly string[] = []): Promise<{ userIds: string[]; keysDeleted: number }> {
    const userIds = await this.tombstoneWithMerged(projectId, userId, deletedAtMs, known);
    return { userIds, keysDeleted: await this.deleteKeys(projectId, userIds, deletedAtMs) };
  }

  /**
   * Deletes the keys starting with `prefix` (one user's: one hash tag). On a cluster all of them
   * are in one slot: each primary is asked for the keys of that slot (only its owner has any),
   * which costs the slot's keys, not the whole keyspace. On a single Redis: SCAN of the prefix.
   */
  private async deleteMatching(prefix: string): Promise<number> {
    if (isCluster(this.redis)) {
      const cluster = this.redis as unknown as { nodes(role: 'master'): Redis[] };
      let deleted = 0;
      for (const node of cluster.nodes('master')) {
        const slot = Number(await node.call('CLUSTER', 'KEYSLOT', prefix));
        const count = Number(await node.call('CLUSTER', 'COUNTKEYSINSLOT', String(slot)));
        if (count === 0) continue;
        const keys = (await node.call('CLUSTER', 'GETKEYSINSLOT', String(slot), String(count))) as string[];
        const mine = keys.filter((k) => k.startsWith(prefix));
        if (mine.length > 0) deleted += await this.redis.del(...mine);
      }
      return deleted;
    }
    const match = `${globLiteral(prefix)}*`;
    let deleted = 0;
    let cursor = '0';
    do {
      const [next, found] = await this.redis.scan(cursor, 'MATCH', match, 'COUNT', 10_000);
      cursor = next;
      // only keys of this user's prefix (SCAN MATCH is a glob; check the literal prefix again)
      const mine = found.filter((k) => k.startsWith(prefix));
      if (mine.length > 0) deleted += await this.redis.del(...mine);
    } while (cursor !== '0');
    return deleted;
  }

  /** Appends the change-log entry of a deletion: the user only as a SHA-256 digest, no data. */
  async recordChange(projectId: string, userId: string, deletedAtMs: number, actor: string): Promise<void> {
    const entry = changeFields({
      time: new Date(deletedAtMs).toISOString(),
      actor,
      operation: 'DeleteUserData',
      resourceKind: 'user',
      resourceId: userIdDigest(userId),
      before: null,
      after: null,
    });
    const args: string[] = [];
    for (const [k, v] of Object.entries(entry)) args.push(k, v);
    await this.redis.xadd(this.keys.changes(projectId), 'MAXLEN', '~', String(CHANGE_LOG_MAX_ENTRIES), '*', ...args);
  }

  /**
   * The deletion time of each (project, user), undefined when it was not deleted: one round trip
   * on a single Redis (one command per key on a cluster or an auto-pipelined connection, in parallel).
   */
  async deletedAt(refs: readonly UserRef[]): Promise<(number | undefined)[]> {
    if (refs.length === 0) return [];
    const parse = (v: string | null | undefined) => (v === null || v === undefined ? undefined : Number(v));
    // Most projects have no deleted user: one EXISTS per project of the batch first, and a
    // ZSCORE per user only in the projects that have some (a job of 500 users costs one command,
    // not 500). Both reads are of the moment, as one ZSCORE per user was: a deletion recorded just
    // after either is the same race as one recorded just after the ZSCORE.
    const projects = [...new Set(refs.map((r) => r.projectId))];
    const keys = projects.map((p) => this.keys.deletedUsers(p));
    // one by one where they go out together anyway (a cluster's nodes, auto-pipelining), else one pipeline
    const oneByOne = sendsCommandsTogether(this.redis);
    const exists = oneByOne ? await Promise.all(keys.map((k) => this.redis.exists(k))) : await this.pipelined(keys.map((k) => ['exists', k]));
    const withDeletions = new Set(projects.filter((_, i) => Number(exists[i]) === 1));
    if (withDeletions.size === 0) return refs.map(() => undefined);
    const asked = refs.map((r, i) => ({ r, i })).filter(({ r }) => withDeletions.has(r.projectId));
    const scores = oneByOne
      ? await Promise.all(asked.map(({ r }) => this.redis.zscore(this.keys.deletedUsers(r.projectId), r.userId)))
      : await this.pipelined(asked.map(({ r }) => ['zscore', this.keys.deletedUsers(r.projectId), r.userId]));
    const out: (number | undefined)[] = refs.map(() => undefined);
    asked.forEach(({ i }, j) => (out[i] = parse(scores[j] as string | null)));
    return out;
  }

  /** One round trip of commands on a single Redis (a Cluster pipeline must stay on one node). */
  private async pipelined(commands: string[][]): Promise<unknown[]> {
    const res = (await this.redis.pipeline(commands).exec()) ?? [];
    return res.map(([err, v]) => {
      if (err) throw err;
      return v;
    });
  }

  /** Users of the project deleted after `sinceMs` (exclusive), with their deletion times. */
  async deletedSince(projectId: string, sinceMs: number): Promise<Map<string, number>> {
    const flat = await this.redis.zrangebyscore(this.keys.deletedUsers(projectId), `(${sinceMs}`, '+inf', 'WITHSCORES');
    const out = new Map<string, number>();
    for (let i = 0; i < flat.length; i += 2) out.set(flat[i], Number(flat[i + 1]));
    return out;
  }

  /** Deleted users whose ClickHouse rows may remain, with their deletion times. */
  async pending(projectId: string): Promise<Map<string, number>> {
    const raw = await this.redis.hgetall(this.keys.pendingUserDeletions(projectId));
    return new Map(Object.entries(raw).map(([u, ms]) => [u, Number(ms)]));
  }

  /** The deletion's rows are gone: removes the users' pending entries, except those a later deletion replaced. */
  async finished(projectId: string, userIds: readonly string[], deletedAtMs: number): Promise<void> {
    const key = this.keys.pendingUserDeletions(projectId);
    for (const userId of userIds) await HDEL_IF_EQUAL.run(this.redis, [key], [userId, String(deletedAtMs)]);
  }
}
