import type { Redis } from 'ioredis';
import type { ContentFieldType, DeliveryType, TreatmentType } from './types.js';
import type { ModificationSource } from '../projects/index.js';
import { AlreadyExistsError, InvalidArgumentError, NotFoundError } from '../platform/errors.js';
import type { RedisKeys } from '../platform/redis/redis-keys.js';
import { compareIds } from '../platform/ids.js';
import { atomicWrite, withOptimisticRetry, type AtomicWriteSpec } from '../platform/redis/atomic-write.js';
import { changeFields } from '../projects/index.js';

export interface TreatmentTypeInput {
  treatmentTypeName: string;
  contentFieldTypes: ContentFieldType[];
  /** surface names, unique, in the order given */
  surfaces: string[];
  deliveryType: DeliveryType;
  lastModifiedBy: string;
  /** Default API */
  modificationSource?: ModificationSource;
}

export interface TreatmentTypePatch {
  /** unset: unchanged */
  treatmentTypeName?: string;
  contentFieldTypes: ContentFieldType[];
  /** unset: unchanged; an array replaces the list (empty: detach every surface) */
  surfaces?: string[];
  /** unset: unchanged */
  deliveryType?: DeliveryType;
  lastModifiedBy: string;
  /** Default API */
  modificationSource?: ModificationSource;
}

/**
 * Treatment types of a project: hash `treatmentTypes` (id → TreatmentType JSON) plus the unique
 * name index `treatmentTypeNames` (name → id), always written together by one atomic script.
 */
export class TreatmentTypeStore {
  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    private readonly now: () => number,
  ) {}

  async get(projectId: string, treatmentTypeId: string): Promise<TreatmentType | undefined> {
    const raw = await this.redis.hget(this.keys.treatmentTypes(projectId), treatmentTypeId);
    return raw ? (JSON.parse(raw) as TreatmentType) : undefined;
  }

  async getByName(projectId: string, name: string): Promise<TreatmentType | undefined> {
    const id = await this.redis.hget(this.keys.treatmentTypeNames(projectId), name);
    return id ? this.get(projectId, id) : undefined;
  }

  /** Ascending numeric id. */
  async list(projectId: string): Promise<TreatmentType[]> {
    const all = await this.redis.hvals(this.keys.treatmentTypes(projectId));
    return all.map((raw) => JSON.parse(raw) as TreatmentType).sort((a, b) => compareIds(a.treatmentTypeId, b.treatmentTypeId));
  }

  async insert(projectId: string, input: TreatmentTypeInput): Promise<TreatmentType> {
    let id: string | undefined;
    return withOptimisticRetry<TreatmentType>('InsertTreatmentType', async () => {
      await this.requireSurfaces(projectId, input.surfaces);
      const names = this.keys.treatmentTypeNames(projectId);
      if (await this.redis.hexists(names, input.treatmentTypeName)) throw this.nameTaken(input.treatmentTypeName);
      // Allocated once per request, so a retried attempt does not burn another id.
      id ??= String(await this.redis.incr(this.keys.seq('treatmentType')));
      const time = new Date(this.now()).toISOString();
      const record: TreatmentType = {
        treatmentTypeId: id,
        projectId,
        treatmentTypeName: input.treatmentTypeName,
        deliveryType: input.deliveryType,
        contentFieldTypes: input.contentFieldTypes,
        surfaces: input.surfaces,
        lastModifiedBy: input.lastModifiedBy,
        lastModifiedTimestamp: time,
        modificationSource: input.modificationSource ?? 'API',
        createTime: time,
      };
      const ok = await atomicWrite(this.redis, {
        checks: [{ key: names, field: input.treatmentTypeName, expect: null }],
        writes: [
          { key: this.keys.treatmentTypes(projectId), field: id, value: JSON.stringify(record) },
          { key: names, field: input.treatmentTypeName, value: id },
        ],
        ...this.recorded(projectId, 'InsertTreatmentType', null, record),
      });
      return ok ? { done: true as const, value: record } : { done: false as const };
    });
  }

  /**
   * 404 when the id is not a type of this project; 409 when renamed onto another type's name.
   * `guard` may throw to refuse the change after reading whatever it needs (the project's
   * treatments); the write then also requires the project's catalogue version to be the one read
   * before the guard ran. Every treatment write bumps that version, so a treatment changed between
   * the guard's read and this write makes the attempt conflict and run again with fresh data, and a
   * treatment write checks the type it validated against (TreatmentStore): neither side can
   * slip a value past the other.
   */
  async update(
    projectId: string,
    treatmentTypeId: string,
    patch: TreatmentTypePatch,
    guard?: (before: TreatmentType, after: TreatmentType) => Promise<void>,
  ): Promise<TreatmentType> {
    return withOptimisticRetry<TreatmentType>('UpdateTreatmentType', async () => {
      const key = this.keys.treatmentTypes(projectId);
      // Read before anything the guard reads, so a change in between is caught by the write.
      const catalogVersion = guard ? await this.redis.get(this.keys.catalogVersion(projectId)) : null;
      const raw = await this.redis.hget(key, treatmentTypeId);
      if (!raw) throw new NotFoundError(`treatment type ${treatmentTypeId} does not exist in project "${projectId}"`);
      const before = JSON.parse(raw) as TreatmentType;
      if (patch.surfaces) await this.requireSurfaces(projectId, patch.surfaces);
      const after: TreatmentType = {
        ...before,
        treatmentTypeName: patch.treatmentTypeName ?? before.treatmentTypeName,
        contentFieldTypes: patch.contentFieldTypes,
        surfaces: patch.surfaces ?? before.surfaces,
        deliveryType: patch.deliveryType ?? before.deliveryType,
        lastModifiedBy: patch.lastModifiedBy,
        lastModifiedTimestamp: new Date(this.now()).toISOString(),
        modificationSource: patch.modificationSource ?? 'API',
      };
      if (guard) await guard(before, after);
      const checks: AtomicWriteSpec['checks'] = [{ key, field: treatmentTypeId, expect: raw }];
      const writes: AtomicWriteSpec['writes'] = [{ key, field: treatmentTypeId, value: JSON.stringify(after) }];
      if (after.treatmentTypeName !== before.treatmentTypeName) {
        const names = this.keys.treatmentTypeNames(projectId);
        if (await this.redis.hexists(names, after.treatmentTypeName)) throw this.nameTaken(after.treatmentTypeName);
        checks.push({ key: names, field: after.treatmentTypeName, expect: null });
        writes.push({ key: names, field: before.treatmentTypeName, value: null }, { key: names, field: after.treatmentTypeName, value: treatmentTypeId });
      }
      const expectString = guard ? { key: this.keys.catalogVersion(projectId), value: catalogVersion } : undefined;
      const ok = await atomicWrite(this.redis, { checks, expectString, writes, ...this.recorded(projectId, 'UpdateTreatmentType', before, after) });
      return ok ? { done: true as const, value: after } : { done: false as const };
    });
  }

  /** Every named surface must be registered (spec: otherwise 400); details name each missing one. */
  private async requireSurfaces(projectId: string, surfaces: string[]): Promise<void> {
    if (surfaces.length === 0) return;
    const found = await this.redis.hmget(this.keys.surfaces(projectId), ...surfaces);
    const details = surfaces
      .map((name, i) => ({ name, i }))
      .filter(({ i }) => found[i] === null)
      .map(({ name, i }) => ({
        field: `surfaces[${i}].surfaceName`,
        description: `surface "${name}" does not exist in this project; create it with InsertSurface first`,
      }));
    if (details.length > 0) throw new InvalidArgumentError(details.map((d) => `${d.field}: ${d.description}`).join('; '), details);
  }

  private nameTaken(name: string): AlreadyExistsError {
    return new AlreadyExistsError(`a treatment type named "${name}" already exists in this project`);
  }

  private recorded(
    projectId: string,
    operation: string,
    before: TreatmentType | null,
    after: TreatmentType,
  ): Pick<AtomicWriteSpec, 'change' | 'versionKey' | 'publish'> {
    return {
      change: {
        key: this.keys.changes(projectId),
        entry: changeFields({
          time: after.lastModifiedTimestamp,
          actor: after.lastModifiedBy,
          operation,
          resourceKind: 'treatmentType',
          resourceId: after.treatmentTypeId,
          before,
          after,
        }),
      },
      versionKey: this.keys.catalogVersion(projectId),
      publish: { channel: this.keys.invalidationChannel(), message: JSON.stringify({ kind: 'catalog', projectId }) },
    };
  }
}
