import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { InteractionJob } from '../ingestion/index.js';
import type { RedisKeys } from '../platform/redis/redis-keys.js';
import { actionsField, EMPTY_STATS_VIEW, statsViewFromHash, viewsField, type RankingStatsView } from './ranking/ranking-policy.js';
import { JOB_MARKER_TTL_SECONDS } from '../profiles/index.js';
import { redisScript } from '../platform/redis/script-loader.js';

/** Interactions that count as the target action of a view. */
const ACTION_TYPES: ReadonlySet<string> = new Set(['CLICKED', 'CTA_COMPLETED']);

/** A ranking counter update: HINCRBY `field` of the project's ranking hash by `by`. */
export type RankingDelta = [field: string, by: number];

/**
 * The counter updates of one interaction, for the interactions worker (applied exactly once by
 * `RankingCounterStore.apply`, guarded by the job's ranking marker). The API admits only
 * interactions on surfaces and treatments of the catalogue, so the hash holds at most
 * 2 fields per (surface, treatment) pair of the project.
 */
export function rankingOps(job: InteractionJob): RankingDelta[] {
  if (job.interactionType === 'VIEWED') return [[viewsField(job.surface, job.treatmentId), 1]];
  if (ACTION_TYPES.has(job.interactionType)) return [[actionsField(job.surface, job.treatmentId), 1]];
  return [];
}

/*
 * The ranking counters of one job, exactly once: the marker and the counters are in the project's
 * ranking slot (`{<project>}`), apart from the user's profile script, so each script touches one
 * hash slot (Redis Cluster).
 */
const APPLY_RANKING = redisScript(new URL('./apply-ranking-2.lua', import.meta.url));

export class RankingCounterStore {
  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
  ) {}

  /** Applies a job's counter updates once; -1 when they had been applied before. */
  async apply(projectId: string, jobId: string, deltas: readonly RankingDelta[]): Promise<number> {
    if (deltas.length === 0) return 0;
    const args: (string | number)[] = [JOB_MARKER_TTL_SECONDS];
    for (const [field, by] of deltas) args.push(field, by);
    return Number(await APPLY_RANKING.run(this.redis, [this.keys.rankingStats(projectId), this.keys.rankingJobMarker(projectId, jobId)], args));
  }

  markerKey(projectId: string, jobId: string): string {
    return this.keys.rankingJobMarker(projectId, jobId);
  }
}

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
