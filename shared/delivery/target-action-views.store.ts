import type { Redis } from 'ioredis';
import type { RedisKeys } from '../platform/redis/redis-keys.js';
import { redisScript } from '../platform/redis/script-loader.js';

const DAY_MS = 86_400_000;

/** A target-action event converts a view when it happens 0 to 7 days after it. */
export const CONVERSION_WINDOW_MS = 7 * DAY_MS;

/**
 * Views are kept a day longer than the window (events may arrive late): the hash expires this
 * long after the user's last view, and a new view forgets the views this much older than itself.
 */
export const VIEW_KEPT_MS = CONVERSION_WINDOW_MS + DAY_MS;

/** One view of a treatment on a surface that a target-action event converted. */
export interface ConversionClaim {
  treatmentId: string;
  surface: string;
  /** the converted view's time (ms): with the user, the identity of the conversion */
  viewMs: number;
}

/** The user's last view of each (treatment, surface), in the user's slot: field `v:<T>:<S>` = view (record-target-view-1.lua) */
const RECORD_VIEW = redisScript(new URL('./record-target-view-1.lua', import.meta.url));

/** Claims the conversions of target-action events: a view of (T, S) is converted when one of T's (claim-conversions-1.lua) */
const CLAIM = redisScript(new URL('./claim-conversions-1.lua', import.meta.url));

/** Marks claims counted (their ranking actions are in the ranking hash). (finish-conversions-1.lua) */
const FINISH = redisScript(new URL('./finish-conversions-1.lua', import.meta.url));

/**
 * Per user, the last views of treatments that have a target action, and which of them a
 * target-action event converted, so each view is converted (and counted as a ranking action) at
 * most once, however often the event is sent, retried or repeated.
 */
export class TargetActionViewStore {
  private readonly ttlSeconds: number;

  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    opts: { retentionDays?: number } = {},
  ) {
    // a user's data never outlives the retention period, even when it is shorter than the window
    this.ttlSeconds = Math.min(VIEW_KEPT_MS / 1000, (opts.retentionDays ?? 400) * 86_400);
  }

  async recordView(projectId: string, userId: string, treatmentId: string, surface: string, viewMs: number): Promise<void> {
    await RECORD_VIEW.run(
      this.redis,
      [this.keys.targetActionViews(projectId, userId)],
      [`${treatmentId}:${surface}`, Math.floor(viewMs), VIEW_KEPT_MS, this.ttlSeconds],
    );
  }

  /** The conversions of these event times (ms) per treatment: new claims and pending ones. */
  async claim(projectId: string, userId: string, eventTimes: ReadonlyMap<string, readonly number[]>): Promise<ConversionClaim[]> {
    if (eventTimes.size === 0) return [];
    const args: (string | number)[] = [CONVERSION_WINDOW_MS];
    for (const [treatmentId, times] of eventTimes) args.push(treatmentId, times.length, ...times.map(Math.floor));
    const raw = (await CLAIM.run(this.redis, [this.keys.targetActionViews(projectId, userId)], args)) as string[];
    const out: ConversionClaim[] = [];
    for (let i = 0; i < raw.length; i += 2) {
      // treatment ids are digits: the first `:` ends it (surface names may hold `:`)
      const cut = raw[i].indexOf(':');
      out.push({ treatmentId: raw[i].slice(0, cut), surface: raw[i].slice(cut + 1), viewMs: Number(raw[i + 1]) });
    }
    return out;
  }

  async finish(projectId: string, userId: string, claims: readonly ConversionClaim[]): Promise<void> {
    if (claims.length === 0) return;
    const args = claims.flatMap((c) => [`${c.treatmentId}:${c.surface}`, String(c.viewMs)]);
    await FINISH.run(this.redis, [this.keys.targetActionViews(projectId, userId)], args);
  }
}
