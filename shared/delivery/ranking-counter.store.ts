import type { Redis } from 'ioredis';
import type { RedisKeys } from '../platform/redis/redis-keys.js';
import { JOB_MARKER_TTL_SECONDS } from '../profiles/index.js';
import { redisScript } from '../platform/redis/script-loader.js';
import type { RankingDelta } from './ranking-ops.js';

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
