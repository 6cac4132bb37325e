import type { Redis } from 'ioredis';
import type { Surface } from './types.js';
import type { RedisKeys } from '../platform/redis/redis-keys.js';
import { atomicWrite, withOptimisticRetry } from '../platform/redis/atomic-write.js';
import { changeFields } from '../projects/index.js';

/** Surfaces of a project: one hash, field = surface name (case-sensitive), value = Surface JSON. Never deleted. */
export class SurfaceStore {
  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    private readonly now: () => number,
  ) {}

  async get(projectId: string, name: string): Promise<Surface | undefined> {
    const raw = await this.redis.hget(this.keys.surfaces(projectId), name);
    return raw ? (JSON.parse(raw) as Surface) : undefined;
  }

  /** Sorted by name (code-point order, so the order does not depend on a locale). */
  async list(projectId: string): Promise<Surface[]> {
    const all = await this.redis.hvals(this.keys.surfaces(projectId));
    return all.map((raw) => JSON.parse(raw) as Surface).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  async names(projectId: string): Promise<Set<string>> {
    return new Set(await this.redis.hkeys(this.keys.surfaces(projectId)));
  }

  /** Inserting an existing name returns the stored surface unchanged (idempotent). */
  async insert(projectId: string, input: { name: string; description?: string }, actor: string): Promise<Surface> {
    const key = this.keys.surfaces(projectId);
    return withOptimisticRetry<Surface>('InsertSurface', async () => {
      const existing = await this.get(projectId, input.name);
      if (existing) return { done: true as const, value: existing };
      const surface: Surface = { projectId, name: input.name, description: input.description ?? '', createTime: new Date(this.now()).toISOString() };
      const ok = await atomicWrite(this.redis, {
        checks: [{ key, field: input.name, expect: null }],
        writes: [{ key, field: input.name, value: JSON.stringify(surface) }],
        change: {
          key: this.keys.changes(projectId),
          entry: changeFields({
            time: surface.createTime,
            actor,
            operation: 'InsertSurface',
            resourceKind: 'surface',
            resourceId: surface.name,
            before: null,
            after: surface,
          }),
        },
        versionKey: this.keys.catalogVersion(projectId),
        publish: { channel: this.keys.invalidationChannel(), message: JSON.stringify({ kind: 'catalog', projectId }) },
      });
      // A concurrent insert of the same name won: the retry returns its surface.
      return ok ? { done: true as const, value: surface } : { done: false as const };
    });
  }
}
