import type { Redis } from 'ioredis';
import type { RedisKeys } from '../platform/redis/redis-keys.js';
import { UnrecoverableError } from 'bullmq';
import { redisScript } from '../platform/redis/script-loader.js';
import { sendsCommandsTogether } from '../platform/redis/redis.js';
import { insertMarkerDays } from './insert-markers.js';
import { IN_FLIGHT_APPLIED, IN_FLIGHT_TTL_MS, MERGE_RULES, parseProfile, PROFILE_FIELDS, type StoredProfile } from './profile-layout.js';
import { applyArgs, type ProfileEvent } from './profile-ops.js';

// The field names the scripts write come from the profile layout, as arguments.
const APPLY = redisScript(new URL('./apply-events.lua', import.meta.url));
const CLAIM = redisScript(new URL('./claim-alias-1.lua', import.meta.url));
const MARK_SIGNED_IN = redisScript(new URL('./mark-signed-in-1.lua', import.meta.url));
const MERGE = redisScript(new URL('./merge-profile.lua', import.meta.url));
const CLEAR = redisScript(new URL('./clear-merged-1.lua', import.meta.url));

const ALIAS_FIELD = PROFILE_FIELDS.alias;
/** The in-flight hash's stamp field and TTL (ms), as the profile scripts take them (stamp-applied.lua). */
const STAMP_ARGS = [IN_FLIGHT_APPLIED, String(IN_FLIGHT_TTL_MS)] as const;
/** Alias hops followed at most (an alias of an alias: a pre-login id merged into a user later merged again). */
const MAX_ALIAS_HOPS = 4;

export interface ProfileStoreOptions {
  /** An untouched profile expires after this many days (RETENTION_DAYS). @defaultValue 400 */
  retentionDays?: number;
  /** Wall clock (ms) naming the arrival day of markers; Redis expires them by its own clock. @defaultValue Date.now */
  wallClock?: () => number;
}

/** A job (or one request of a merged job) as applied to one user: the identity of its marker. */
export interface AppliedUnit {
  projectId: string;
  userId: string;
  id: string;
}

/** The in-flight unit of the merge of a pre-login id into a user (no job id has this form: they are UUIDs or queue ids). */
const mergeUnitId = (tempUserId: string): string => `merge:${tempUserId}`;

/** Why a pre-login id cannot be claimed: it is a user of its own. */
export type AliasRefusal = 'signed-in' | 'has-merged-ids';

/** The outcome of an identity merge's claim (step (a)). */
export type AliasClaim = { owner: string; pending: boolean } | { refused: AliasRefusal };

export class ProfileStore {
  private readonly profileTtl: number;
  private readonly wallClock: () => number;

  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    opts: ProfileStoreOptions = {},
  ) {
    this.profileTtl = (opts.retentionDays ?? 400) * 86_400;
    this.wallClock = opts.wallClock ?? Date.now;
  }

  /**
   * Applies the events of one job to one user's profile exactly once. Returns the number of
   * events applied (duplicates by insertId are skipped), or -1 when the job was applied before.
   */
  async applyEvents(projectId: string, userId: string, jobId: string, events: ProfileEvent[]): Promise<number> {
    return (await this.applyEventsTo(projectId, userId, jobId, events)).applied;
  }

  /**
   * `applyEvents`, also saying whose profile the job went to: a user merged into another one
   * is an alias, and the job is applied (with its marker) to the profile it points to,
   * after `onAlias` (which stores what the caller keeps per user, e.g. its rows) has run.
   */
  async applyEventsTo(
    projectId: string,
    userId: string,
    jobId: string,
    events: ProfileEvent[],
    onAlias?: (userId: string) => Promise<void>,
  ): Promise<{ applied: number; userId: string }> {
    const { days, expireAt } = insertMarkerDays(this.wallClock());
    const { needsMarkers, args } = applyArgs(events, { profileTtl: this.profileTtl, markersExpireAt: expireAt });
    args.push(...STAMP_ARGS, String(this.wallClock()));
    let user = userId;
    for (let hop = 0; ; hop++) {
      const keys = [this.keys.profile(projectId, user), this.keys.jobMarker(projectId, user, jobId), this.keys.ingestInFlight(projectId, user)];
      if (needsMarkers) for (const day of days) keys.push(this.keys.insertMarkers(projectId, user, day));
      const res = Number(await APPLY.run(this.redis, keys, args));
      if (res !== -2) return { applied: res, userId: user };
      const next = await this.redis.hget(this.keys.profile(projectId, user), ALIAS_FIELD);
      // a cycle (two ids merged into each other by racing first events) can never be applied
      if (next === null || next === user || hop >= MAX_ALIAS_HOPS)
        throw new UnrecoverableError(`profile of user "${user}" is an alias that cannot be followed (a cycle of merged ids)`);
      user = next;
      // before the marker commits there: whatever the caller stores under the user (its rows)
      await onAlias?.(user);
    }
  }

  /**
   * Says that the unit's rows are about to be stored and its profile update will follow: until
   * that update (`applyEvents*`, which clears it atomically) a recompute of the user's data
   * fields cannot tell whether its read of the warehouse counted those rows, and reads the user
   * again later instead of counting them twice. Call it before the rows are written; it lapses
   * after IN_FLIGHT_TTL_MS should the job never come back.
   */
  async markInFlight(projectId: string, userId: string, jobId: string): Promise<void> {
    const key = this.keys.ingestInFlight(projectId, userId);
    await Promise.all([
      this.redis.hset(key, this.keys.jobMarker(projectId, userId, jobId), String(this.wallClock())),
      this.redis.pexpire(key, IN_FLIGHT_TTL_MS),
    ]);
  }

  /**
   * The user each unit's id stands for (its alias, followed) and whether the unit was
   * applied there, in one round trip when no id is an alias (one more per hop otherwise).
   */
  async resolveUnits(units: readonly AppliedUnit[]): Promise<{ unit: AppliedUnit; applied: boolean }[]> {
    const out = units.map((unit) => ({ unit, applied: false }));
    let todo = out.map((_, i) => i);
    for (let hop = 0; todo.length > 0; hop++) {
      const answers = await this.markersAndAliases(todo.map((i) => out[i].unit));
      const next: number[] = [];
      todo.forEach((i, j) => {
        const [applied, alias] = answers[j];
        out[i].applied = applied;
        if (!applied && alias !== null && alias !== out[i].unit.userId && hop < MAX_ALIAS_HOPS) {
          out[i].unit = { ...out[i].unit, userId: alias };
          next.push(i);
        }
      });
      todo = next;
    }
    return out;
  }

  private async markersAndAliases(units: readonly AppliedUnit[]): Promise<[boolean, string | null][]> {
    if (units.length === 0) return [];
    if (sendsCommandsTogether(this.redis)) {
      return Promise.all(
        units.map(async (u) => {
          const [n, alias] = await Promise.all([
            this.redis.exists(this.keys.jobMarker(u.projectId, u.userId, u.id)),
            this.redis.hget(this.keys.profile(u.projectId, u.userId), ALIAS_FIELD),
          ]);
          return [n === 1, alias] as [boolean, string | null];
        }),
      );
    }
    const p = this.redis.pipeline();
    for (const u of units) {
      p.exists(this.keys.jobMarker(u.projectId, u.userId, u.id));
      p.hget(this.keys.profile(u.projectId, u.userId), ALIAS_FIELD);
    }
    const res = (await p.exec()) ?? [];
    for (const [err] of res) if (err) throw err;
    return units.map((_, i) => [res[2 * i][1] === 1, (res[2 * i + 1][1] as string | null) ?? null]);
  }

  /** The user an id stands for: itself, or the user it was merged into (followed). */
  async canonicalUser(projectId: string, userId: string): Promise<string> {
    let user = userId;
    for (let hop = 0; hop < MAX_ALIAS_HOPS; hop++) {
      const next = await this.redis.hget(this.keys.profile(projectId, user), ALIAS_FIELD);
      if (next === null || next === user) break;
      user = next;
    }
    return user;
  }

  /**
   * The pre-login ids merged into the user (its `merged:<id>` markers) that still stand for it:
   * their alias, followed, leads to the user. A marker outlives an expired alias, after which the
   * id may have started anew or been merged into someone else: such an id is not the user's.
   */
  async mergedIds(projectId: string, userId: string): Promise<string[]> {
    const prefix = PROFILE_FIELDS.merged;
    const ids = new Set<string>();
    let cursor = '0';
    do {
      const [next, flat] = await this.redis.hscan(this.keys.profile(projectId, userId), cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      for (let i = 0; i < flat.length; i += 2) ids.add(flat[i].slice(prefix.length));
    } while (cursor !== '0');
    const candidates = [...ids].filter((id) => id !== userId);
    const owners = await Promise.all(candidates.map((id) => this.canonicalUser(projectId, id)));
    return candidates.filter((_, i) => owners[i] === userId);
  }

  /**
   * Identity merge, before (a): records that the user is the signed-in side of a merge, so no
   * later claim makes it another user's pre-login id. Returns the user it is an alias of instead
   * when it was merged into one (a race with another merge; nothing is marked then).
   */
  async markSignedIn(projectId: string, userId: string): Promise<string | undefined> {
    const alias = await MARK_SIGNED_IN.run(
      this.redis,
      [this.keys.profile(projectId, userId)],
      [this.profileTtl, PROFILE_FIELDS.alias, PROFILE_FIELDS.signedIn, this.wallClock()],
    );
    return typeof alias === 'string' ? alias : undefined;
  }

  /**
   * Identity merge (a): claims `tempUserId` for `userId`; returns the owner (the first claim's
   * user) and whether the merge is still to be finished, or why the id is not claimable: it has
   * been the signed-in side of a merge, or has merged ids of its own (a user, not a pre-login id).
   */
  async claimAlias(projectId: string, tempUserId: string, userId: string): Promise<AliasClaim> {
    const args = [userId, this.profileTtl, PROFILE_FIELDS.alias, PROFILE_FIELDS.done, PROFILE_FIELDS.signedIn, PROFILE_FIELDS.merged];
    const [owner, left, refused] = (await CLAIM.run(this.redis, [this.keys.profile(projectId, tempUserId)], args)) as [string, number, string?];
    if (refused !== undefined) return { refused: refused as AliasRefusal };
    return { owner, pending: Number(left) > 0 };
  }

  /**
   * Identity merge, before (b): the user's in-flight mark for the merge of `tempUserId`, like an
   * ingest job's (`markInFlight`): a recompute reading the user between the copy of the pre-login
   * rows and `mergeProfile` (which clears the mark) cannot tell whether it counted them, and
   * reads the user again later instead of counting them twice.
   */
  async markMergeInFlight(projectId: string, tempUserId: string, userId: string): Promise<void> {
    await this.markInFlight(projectId, userId, mergeUnitId(tempUserId));
  }

  /** Identity merge (b)+(c): reads the pre-login id's profile and insert markers and applies them to the user's profile once. True: applied now. */
  async mergeProfile(projectId: string, tempUserId: string, userId: string): Promise<boolean> {
    const { days, expireAt } = insertMarkerDays(this.wallClock());
    const [raw, ...sets] = await Promise.all([
      this.redis.hgetall(this.keys.profile(projectId, tempUserId)),
      ...days.map((d) => this.redis.smembers(this.keys.insertMarkers(projectId, tempUserId, d))),
    ]);
    const { merged, userProperty, userPropertyTime, alias, done } = PROFILE_FIELDS;
    const args: string[] = [
      tempUserId,
      String(this.profileTtl),
      String(this.wallClock()),
      merged,
      userProperty,
      userPropertyTime,
      alias,
      done,
      this.keys.jobMarker(projectId, userId, mergeUnitId(tempUserId)),
      ...STAMP_ARGS,
      String(MERGE_RULES.length),
    ];
    for (const [prefix, rule] of MERGE_RULES) args.push(prefix, rule);
    args.push(String(days.length));
    days.forEach((_, i) => {
      // a day's set expires 8 days after that day ends, like the user's own (today's: expireAt)
      args.push(String(expireAt - i * 86_400), String(sets[i].length), ...sets[i]);
    });
    for (const [f, v] of Object.entries(raw)) if (f !== ALIAS_FIELD) args.push(f, v);
    const keys = [
      this.keys.profile(projectId, userId),
      this.keys.ingestInFlight(projectId, userId),
      ...days.map((d) => this.keys.insertMarkers(projectId, userId, d)),
    ];
    return Number(await MERGE.run(this.redis, keys, args)) === 1;
  }

  /** Identity merge (d): leaves only the alias in the pre-login id's profile. */
  async clearMerged(projectId: string, tempUserId: string): Promise<void> {
    await CLEAR.run(this.redis, [this.keys.profile(projectId, tempUserId)], [this.profileTtl, PROFILE_FIELDS.alias, PROFILE_FIELDS.done]);
  }

  /**
   * Which of these units were applied already (their marker exists), in one round trip: a retried
   * job skips the ClickHouse insert of those (their rows were stored before their script ran).
   */
  async applied(units: readonly AppliedUnit[]): Promise<boolean[]> {
    if (units.length === 0) return [];
    // On a cluster the markers are in their users' slots (on several nodes): one command each,
    // which ioredis sends to the right node (a Cluster pipeline must stay on one node); with
    // auto-pipelining too (sendsCommandsTogether).
    if (sendsCommandsTogether(this.redis))
      return Promise.all(units.map(async (u) => (await this.redis.exists(this.keys.jobMarker(u.projectId, u.userId, u.id))) === 1));
    const p = this.redis.pipeline();
    for (const u of units) p.exists(this.keys.jobMarker(u.projectId, u.userId, u.id));
    const res = (await p.exec()) ?? [];
    return res.map(([err, n]) => {
      if (err) throw err;
      return n === 1;
    });
  }

  /**
   * Shortens the markers of completed units to `graceSeconds` (best effort: their TTL is the
   * backstop). Not an immediate DEL: a job whose lock was lost (a worker blocked past its lock)
   * may still be running its first execution after another worker completed the job, and its
   * script must still find the marker; the grace covers that overlap.
   */
  async expireJobMarkers(units: readonly AppliedUnit[], extraKeys: readonly string[], graceSeconds: number): Promise<void> {
    if (units.length === 0 && extraKeys.length === 0) return;
    if (sendsCommandsTogether(this.redis)) {
      const keys = [...units.map((u) => this.keys.jobMarker(u.projectId, u.userId, u.id)), ...extraKeys];
      await Promise.all(keys.map((k) => this.redis.expire(k, graceSeconds)));
      return;
    }
    const p = this.redis.pipeline();
    // One command per key: each key is in its own user's slot (Redis Cluster forbids multi-slot commands).
    for (const u of units) p.expire(this.keys.jobMarker(u.projectId, u.userId, u.id), graceSeconds);
    for (const k of extraKeys) p.expire(k, graceSeconds);
    await p.exec();
  }

  /** The user's profile; for an id merged into another user, that user's (one more read, only then). */
  async get(projectId: string, userId: string): Promise<StoredProfile> {
    let raw = await this.redis.hgetall(this.keys.profile(projectId, userId));
    let mergedInto: string | undefined;
    for (let hop = 0; raw[ALIAS_FIELD] !== undefined && hop < MAX_ALIAS_HOPS; hop++) {
      mergedInto = raw[ALIAS_FIELD];
      raw = await this.redis.hgetall(this.keys.profile(projectId, mergedInto));
    }
    const profile = parseProfile(raw);
    if (mergedInto !== undefined) profile.mergedInto = mergedInto;
    return profile;
  }
}
