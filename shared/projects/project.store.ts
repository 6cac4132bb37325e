import type { Redis } from 'ioredis';
import type { DeliveryEndpoint, Project } from './types.js';
import { AlreadyExistsError, NotFoundError } from '../platform/errors.js';
import type { RedisKeys } from '../platform/redis/redis-keys.js';
import { atomicWrite, withOptimisticRetry } from '../platform/redis/atomic-write.js';
import { changeFields } from './change-entry.js';

const FIELD = 'record';

export class ProjectStore {
  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    private readonly now: () => number,
  ) {}

  async get(projectId: string): Promise<Project | undefined> {
    const raw = await this.redis.hget(this.keys.project(projectId), FIELD);
    return raw ? (JSON.parse(raw) as Project) : undefined;
  }

  async require(projectId: string): Promise<Project> {
    const p = await this.get(projectId);
    if (!p) throw new NotFoundError(`project "${projectId}" does not exist`);
    return p;
  }

  async list(): Promise<Project[]> {
    const ids = (await this.redis.smembers(this.keys.projects())).sort();
    const out: Project[] = [];
    for (const id of ids) {
      const p = await this.get(id);
      if (p) out.push(p);
    }
    return out;
  }

  async create(
    input: { projectId: string; displayName?: string; deliveryEndpoint?: DeliveryEndpoint; globalHoldoutPercentage?: number },
    actor: string,
  ): Promise<Project> {
    const project: Project = {
      projectId: input.projectId,
      displayName: input.displayName ?? input.projectId,
      deliveryEndpoint: input.deliveryEndpoint ?? 'BASE',
      createTime: new Date(this.now()).toISOString(),
      ...(input.globalHoldoutPercentage ? { globalHoldoutPercentage: input.globalHoldoutPercentage } : {}),
    };
    const json = JSON.stringify(project);
    const ok = await atomicWrite(this.redis, {
      checks: [{ key: this.keys.project(project.projectId), field: FIELD, expect: null }],
      writes: [{ key: this.keys.project(project.projectId), field: FIELD, value: json }],
      change: {
        key: this.keys.changes(project.projectId),
        entry: changeFields({
          time: project.createTime,
          actor,
          operation: 'CreateProject',
          resourceKind: 'project',
          resourceId: project.projectId,
          before: null,
          after: project,
        }),
      },
      publish: { channel: this.keys.invalidationChannel(), message: JSON.stringify({ kind: 'project', projectId: project.projectId }) },
    });
    if (!ok) throw new AlreadyExistsError(`project "${project.projectId}" already exists`);
    await this.redis.sadd(this.keys.projects(), project.projectId);
    return project;
  }

  async update(
    input: { projectId: string; displayName?: string; deliveryEndpoint?: DeliveryEndpoint; globalHoldoutPercentage?: number },
    actor: string,
  ): Promise<Project> {
    return withOptimisticRetry<Project>('UpdateProject', async () => {
      const key = this.keys.project(input.projectId);
      const raw = await this.redis.hget(key, FIELD);
      if (!raw) throw new NotFoundError(`project "${input.projectId}" does not exist`);
      const before = JSON.parse(raw) as Project;
      const after: Project = {
        ...before,
        displayName: input.displayName ?? before.displayName,
        deliveryEndpoint: input.deliveryEndpoint ?? before.deliveryEndpoint,
      };
      if (input.globalHoldoutPercentage === 0) delete after.globalHoldoutPercentage;
      else if (input.globalHoldoutPercentage !== undefined) after.globalHoldoutPercentage = input.globalHoldoutPercentage;
      const ok = await atomicWrite(this.redis, {
        checks: [{ key, field: FIELD, expect: raw }],
        writes: [{ key, field: FIELD, value: JSON.stringify(after) }],
        change: {
          key: this.keys.changes(input.projectId),
          entry: changeFields({
            time: new Date(this.now()).toISOString(),
            actor,
            operation: 'UpdateProject',
            resourceKind: 'project',
            resourceId: input.projectId,
            before,
            after,
          }),
        },
        // the compiled delivery plan carries the global holdout: a missed message is caught by the version check
        versionKey: this.keys.catalogVersion(input.projectId),
        publish: { channel: this.keys.invalidationChannel(), message: JSON.stringify({ kind: 'project', projectId: input.projectId }) },
      });
      return ok ? { done: true as const, value: after } : { done: false as const };
    });
  }
}
