import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { RedisKeys } from '../platform/redis/redis-keys.js';
import { EMPTY_STATS_VIEW, statsViewFromHash, type RankingStatsView } from './ranking/ranking-policy.js';

export interface RankingStatsStoreOptions {
  /** Minimum age of a snapshot before it is re-read. @defaultValue 1000 */
  refreshMs?: number;
  /** Monotonic clock in ms; the age of a snapshot is process time, not business time. */
  clock?: () => number;
  log?: Logger;
}

interface Snapshot {
  view: RankingStatsView;
  loadedAt: number;
  refreshing: boolean;
}

/**
 * Read side of the project-wide ranking counters (hash `keys.rankingStats(projectId)`). Delivery
 * reads an in-memory snapshot per project; a snapshot older than `refreshMs` is re-read in the
 * background while the old one keeps serving, so only a project's very first request waits for
 * Redis. Counters a second old are fine for a bandit: one view more or less does not move a
 * posterior.
 */
export class RankingStatsStore {
  private readonly snapshots = new Map<string, Snapshot>();
  private readonly firstLoads = new Map<string, Promise<RankingStatsView>>();
  private readonly refreshMs: number;
  private readonly clock: () => number;

  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    private readonly opts: RankingStatsStoreOptions = {},
  ) {
    this.refreshMs = opts.refreshMs ?? 1000;
    this.clock = opts.clock ?? (() => performance.now());
  }

  async view(projectId: string): Promise<RankingStatsView> {
    const snapshot = this.snapshots.get(projectId);
    if (snapshot === undefined) return this.firstLoad(projectId);
    if (!snapshot.refreshing && this.clock() - snapshot.loadedAt >= this.refreshMs) this.refresh(projectId, snapshot);
    return snapshot.view;
  }

  /** The counters as stored now, bypassing the snapshot (explanations, tests). */
  async read(projectId: string): Promise<RankingStatsView> {
    return statsViewFromHash(await this.redis.hgetall(this.keys.rankingStats(projectId)));
  }

  private firstLoad(projectId: string): Promise<RankingStatsView> {
    let pending = this.firstLoads.get(projectId);
    if (pending === undefined) {
      pending = this.read(projectId).then(
        (view) => {
          this.snapshots.set(projectId, { view, loadedAt: this.clock(), refreshing: false });
          return view;
        },
        (err: unknown) => {
          // Ranking is not worth failing a delivery for: rank on the prior, load again next time.
          this.opts.log?.warn({ err, projectId }, 'ranking statistics could not be loaded');
          return EMPTY_STATS_VIEW;
        },
      );
      pending.finally(() => this.firstLoads.delete(projectId)).catch(() => undefined);
      this.firstLoads.set(projectId, pending);
    }
    return pending;
  }

  private refresh(projectId: string, snapshot: Snapshot): void {
    snapshot.refreshing = true;
    this.read(projectId).then(
      (view) => this.snapshots.set(projectId, { view, loadedAt: this.clock(), refreshing: false }),
      (err: unknown) => {
        this.opts.log?.warn({ err, projectId }, 'ranking statistics refresh failed; serving the previous snapshot');
        snapshot.loadedAt = this.clock();
        snapshot.refreshing = false;
      },
    );
  }
}
