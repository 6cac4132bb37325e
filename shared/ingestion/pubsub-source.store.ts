import type { Redis } from 'ioredis';
import { NotFoundError } from '../platform/errors.js';
import type { RedisKeys } from '../platform/redis/redis-keys.js';
import { checkTopicPath } from '../platform/pubsub/pubsub.js';
import { atomicWrite, withOptimisticRetry } from '../platform/redis/atomic-write.js';
import { changeFields } from '../projects/index.js';

/** A project's registered topic and the service's subscription on it. */
export interface PubSubSource {
  projectId: string;
  /** `projects/<project>/topics/<topic>` */
  topic: string;
  /** `projects/<PUBSUB_PROJECT_ID>/subscriptions/tds-<projectId>` */
  subscription: string;
}

const RESOURCE_KIND = 'pubSubSource';

/**
 * The sources live in one hash (projectId → JSON) that every workers process reads when it
 * reconciles its subscriptions. Each change is written together with its change-log entry and
 * the `pubsubSource` invalidation, so every process reconciles at once.
 */
export class PubSubSourceStore {
  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    private readonly now: () => number,
  ) {}

  async get(projectId: string): Promise<PubSubSource | undefined> {
    const raw = await this.redis.hget(this.keys.pubSubSources(), projectId);
    return raw ? (JSON.parse(raw) as PubSubSource) : undefined;
  }

  async require(projectId: string): Promise<PubSubSource> {
    const source = await this.get(projectId);
    if (!source) throw new NotFoundError(`project "${projectId}" has no Pub/Sub source`);
    return source;
  }

  /** Every source, by project id order. */
  async list(): Promise<PubSubSource[]> {
    const all = await this.redis.hgetall(this.keys.pubSubSources());
    return Object.keys(all)
      .sort()
      .map((id) => JSON.parse(all[id]) as PubSubSource);
  }

  /** Sets (or replaces) the project's source; setting the same source again changes nothing. */
  async set(source: PubSubSource, actor: string): Promise<PubSubSource> {
    checkTopicPath(source.topic);
    const after: PubSubSource = { projectId: source.projectId, topic: source.topic, subscription: source.subscription };
    return withOptimisticRetry<PubSubSource>('SetPubSubSource', async () => {
      const raw = await this.redis.hget(this.keys.pubSubSources(), source.projectId);
      if (raw === JSON.stringify(after)) return { done: true, value: after };
      const ok = await this.write(source.projectId, raw, JSON.stringify(after), 'SetPubSubSource', actor);
      return ok ? { done: true, value: after } : { done: false };
    });
  }

  /** @throws NotFoundError when the project has no source. */
  async clear(projectId: string, actor: string): Promise<PubSubSource> {
    return withOptimisticRetry<PubSubSource>('ClearPubSubSource', async () => {
      const raw = await this.redis.hget(this.keys.pubSubSources(), projectId);
      if (!raw) throw new NotFoundError(`project "${projectId}" has no Pub/Sub source`);
      const ok = await this.write(projectId, raw, null, 'ClearPubSubSource', actor);
      return ok ? { done: true, value: JSON.parse(raw) as PubSubSource } : { done: false };
    });
  }

  private write(projectId: string, before: string | null, after: string | null, operation: string, actor: string): Promise<boolean> {
    const key = this.keys.pubSubSources();
    return atomicWrite(this.redis, {
      checks: [{ key, field: projectId, expect: before }],
      writes: [{ key, field: projectId, value: after }],
      change: {
        key: this.keys.changes(projectId),
        entry: changeFields({
          time: new Date(this.now()).toISOString(),
          actor,
          operation,
          resourceKind: RESOURCE_KIND,
          resourceId: projectId,
          before: before === null ? null : JSON.parse(before),
          after: after === null ? null : JSON.parse(after),
        }),
      },
      publish: { channel: this.keys.invalidationChannel(), message: JSON.stringify({ kind: 'pubsubSource', projectId }) },
    });
  }
}
