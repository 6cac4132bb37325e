import type { Redis } from 'ioredis';
import type { TreatmentRecord } from './types.js';
import type { TreatmentType } from '../catalog/index.js';
import { AlreadyExistsError, FailedPreconditionError, NotFoundError } from '../platform/errors.js';
import type { RedisKeys } from '../platform/redis/redis-keys.js';
import { compareIds } from '../platform/ids.js';
import { atomicWrite, withOptimisticRetry, type AtomicWriteSpec } from '../platform/redis/atomic-write.js';
import { changeFields } from '../projects/index.js';

/** Who made a change and through which operation, for the change log. */
export interface ChangeMeta {
  actor: string;
  operation: string;
}

/**
 * What an update computes from the current record and the current state of its type (undefined
 * if the type is gone); `changed: false` skips the write. It may throw to refuse the update.
 */
export type TreatmentTransition = (current: TreatmentRecord, type: TreatmentType | undefined) => { treatment: TreatmentRecord; changed: boolean };

/**
 * Treatments of a project: hash `keys.treatments(projectId)`, field = treatmentId → JSON
 * TreatmentRecord, plus the index `keys.externalTreatmentIds(projectId)`, externalTreatmentId →
 * treatmentId. Every write compares-and-sets the JSON it read, so concurrent updates of one
 * treatment are applied one after the other and none is lost.
 */
export class TreatmentStore {
  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    private readonly now: () => number,
  ) {}

  async get(projectId: string, treatmentId: string): Promise<TreatmentRecord | undefined> {
    const raw = await this.redis.hget(this.keys.treatments(projectId), treatmentId);
    return raw ? (JSON.parse(raw) as TreatmentRecord) : undefined;
  }

  /** Every treatment of the project, ascending treatmentId. */
  async list(projectId: string): Promise<TreatmentRecord[]> {
    const raw = await this.redis.hvals(this.keys.treatments(projectId));
    return raw.map((r) => JSON.parse(r) as TreatmentRecord).sort((a, b) => compareIds(a.treatmentId, b.treatmentId));
  }

  async idByExternalId(projectId: string, externalTreatmentId: string): Promise<string | undefined> {
    return (await this.redis.hget(this.keys.externalTreatmentIds(projectId), externalTreatmentId)) ?? undefined;
  }

  /**
   * Assigns the next treatmentId and stores what `build` makes of it and of the current state of
   * type `treatmentTypeId` (`build` may throw to refuse). 409 on a taken externalTreatmentId. The
   * write checks the type is still the one `build` saw: a concurrent UpdateTreatmentType
   * makes the attempt run again against the new type.
   */
  async insert(
    projectId: string,
    treatmentTypeId: string,
    build: (treatmentId: string, type: TreatmentType) => TreatmentRecord,
    meta: ChangeMeta,
  ): Promise<TreatmentRecord> {
    let treatmentId: string | undefined;
    return withOptimisticRetry<TreatmentRecord>(meta.operation, async () => {
      const typeRaw = await this.redis.hget(this.keys.treatmentTypes(projectId), treatmentTypeId);
      if (!typeRaw) throw new FailedPreconditionError(`treatment type ${treatmentTypeId} no longer exists`);
      // Allocated once per request, so a retried attempt does not burn another id.
      treatmentId ??= String(await this.redis.incr(this.keys.seq('treatment')));
      const record = build(treatmentId, JSON.parse(typeRaw) as TreatmentType);
      const spec = this.writeSpec(projectId, meta, undefined, record);
      spec.checks.push({ key: this.keys.treatments(projectId), field: treatmentId, expect: null }, this.typeCheck(projectId, treatmentTypeId, typeRaw));
      spec.writes.push({ key: this.keys.treatments(projectId), field: treatmentId, value: JSON.stringify(record) });
      if (await atomicWrite(this.redis, spec)) return { done: true as const, value: record };
      const ext = record.externalTreatmentId;
      if (ext !== undefined && (await this.idByExternalId(projectId, ext)) !== undefined) throw externalIdTaken(ext);
      return { done: false as const };
    });
  }

  /**
   * Read → `transition` → compare-and-set, retried on conflict; `transition` sees the freshest
   * record and type each time and may throw (404, FAILED_PRECONDITION ...) to abort. The write
   * checks both, so content validated against a type is never stored under a changed type.
   */
  async update(projectId: string, treatmentId: string, transition: TreatmentTransition, meta: ChangeMeta): Promise<TreatmentRecord> {
    const key = this.keys.treatments(projectId);
    return withOptimisticRetry<TreatmentRecord>(meta.operation, async () => {
      const raw = await this.redis.hget(key, treatmentId);
      if (!raw) throw new NotFoundError(`treatment ${treatmentId} does not exist in project ${projectId}`);
      const before = JSON.parse(raw) as TreatmentRecord;
      const typeRaw = await this.redis.hget(this.keys.treatmentTypes(projectId), before.treatmentTypeId);
      const { treatment: after, changed } = transition(before, typeRaw ? (JSON.parse(typeRaw) as TreatmentType) : undefined);
      if (!changed) return { done: true as const, value: before };
      await this.assertExternalIdFree(projectId, before, after);
      const spec = this.writeSpec(projectId, meta, before, after);
      spec.checks.push({ key, field: treatmentId, expect: raw }, this.typeCheck(projectId, before.treatmentTypeId, typeRaw));
      spec.writes.push({ key, field: treatmentId, value: JSON.stringify(after) });
      const ok = await atomicWrite(this.redis, spec);
      return ok ? { done: true as const, value: after } : { done: false as const };
    });
  }

  private typeCheck(projectId: string, treatmentTypeId: string, typeRaw: string | null): AtomicWriteSpec['checks'][number] {
    return { key: this.keys.treatmentTypes(projectId), field: treatmentTypeId, expect: typeRaw };
  }

  private async assertExternalIdFree(projectId: string, before: TreatmentRecord, after: TreatmentRecord): Promise<void> {
    const ext = after.externalTreatmentId;
    if (ext === undefined || ext === before.externalTreatmentId) return;
    const owner = await this.idByExternalId(projectId, ext);
    if (owner !== undefined && owner !== after.treatmentId) throw externalIdTaken(ext);
  }

  /** Index maintenance, change-log entry, catalogue version bump and invalidation of one change. */
  private writeSpec(projectId: string, meta: ChangeMeta, before: TreatmentRecord | undefined, after: TreatmentRecord): AtomicWriteSpec {
    const extKey = this.keys.externalTreatmentIds(projectId);
    const spec: AtomicWriteSpec = { checks: [], writes: [] };
    const oldExt = before?.externalTreatmentId;
    const newExt = after.externalTreatmentId;
    if (newExt !== oldExt) {
      if (oldExt !== undefined) spec.writes.push({ key: extKey, field: oldExt, value: null });
      if (newExt !== undefined) {
        spec.checks.push({ key: extKey, field: newExt, expect: null });
        spec.writes.push({ key: extKey, field: newExt, value: after.treatmentId });
      }
    }
    spec.change = {
      key: this.keys.changes(projectId),
      entry: changeFields({
        time: new Date(this.now()).toISOString(),
        actor: meta.actor,
        operation: meta.operation,
        resourceKind: 'treatment',
        resourceId: after.treatmentId,
        before: before ?? null,
        after,
      }),
    };
    spec.versionKey = this.keys.catalogVersion(projectId);
    spec.publish = { channel: this.keys.invalidationChannel(), message: JSON.stringify({ kind: 'catalog', projectId }) };
    return spec;
  }
}

function externalIdTaken(externalTreatmentId: string): AlreadyExistsError {
  return new AlreadyExistsError(`externalTreatmentId "${externalTreatmentId}" is already used by another treatment of the project`);
}
