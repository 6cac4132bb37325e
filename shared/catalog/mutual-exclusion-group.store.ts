import type { Redis } from 'ioredis';
import type { MutualExclusionGroup } from './types.js';
import { AbortedError } from '../platform/errors.js';
import type { RedisKeys } from '../platform/redis/redis-keys.js';
import { atomicWrite } from '../platform/redis/atomic-write.js';
import { changeFields } from '../projects/index.js';

/**
 * Mutual exclusion groups of a project: hash `keys.mutualExclusionGroups(projectId)`, field = group
 * name → JSON group. Treatments name a group; it is created on first use and never deleted, so a
 * name keeps its id for ever. A project has few groups: lookups by id read the whole hash.
 */
export class MutualExclusionGroupStore {
  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    private readonly now: () => number,
  ) {}

  /** Ascending id order. */
  async list(projectId: string): Promise<MutualExclusionGroup[]> {
    const raw = await this.redis.hvals(this.keys.mutualExclusionGroups(projectId));
    return raw.map((r) => JSON.parse(r) as MutualExclusionGroup).sort((a, b) => Number(a.mutualExclusionGroupId) - Number(b.mutualExclusionGroupId));
  }

  async get(projectId: string, mutualExclusionGroupId: string): Promise<MutualExclusionGroup | undefined> {
    return (await this.list(projectId)).find((g) => g.mutualExclusionGroupId === mutualExclusionGroupId);
  }

  async getByName(projectId: string, name: string): Promise<MutualExclusionGroup | undefined> {
    const raw = await this.redis.hget(this.keys.mutualExclusionGroups(projectId), name);
    return raw ? (JSON.parse(raw) as MutualExclusionGroup) : undefined;
  }

  /** The group of that name, created on first use. Concurrent first uses agree on one group. */
  async getOrCreate(projectId: string, name: string, actor: string): Promise<MutualExclusionGroup> {
    const existing = await this.getByName(projectId, name);
    if (existing) return existing;
    const id = String(await this.redis.incr(this.keys.seq('mutualExclusionGroup')));
    const group: MutualExclusionGroup = { projectId, mutualExclusionGroupId: id, name };
    const key = this.keys.mutualExclusionGroups(projectId);
    const created = await atomicWrite(this.redis, {
      checks: [{ key, field: name, expect: null }],
      writes: [{ key, field: name, value: JSON.stringify(group) }],
      change: {
        key: this.keys.changes(projectId),
        entry: changeFields({
          time: new Date(this.now()).toISOString(),
          actor,
          operation: 'CreateMutualExclusionGroup',
          resourceKind: 'mutualExclusionGroup',
          resourceId: id,
          before: null,
          after: group,
        }),
      },
      versionKey: this.keys.catalogVersion(projectId),
      publish: { channel: this.keys.invalidationChannel(), message: JSON.stringify({ kind: 'catalog', projectId }) },
    });
    if (created) return group;
    // Another request created it between our read and write; its id wins (ours stays unused).
    const winner = await this.getByName(projectId, name);
    if (!winner) throw new AbortedError(`mutual exclusion group "${name}": concurrent change, retry the request`);
    return winner;
  }
}
