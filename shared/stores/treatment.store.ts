import type { Redis } from 'ioredis';
import type { TreatmentRecord } from '../domain/types.js';
import { AbortedError, AlreadyExistsError, NotFoundError } from '../errors.js';
import type { RedisKeys } from '../redis-keys.js';
import { compareIds } from '../domain/ids.js';
import { atomicWrite, withOptimisticRetry, type AtomicWriteSpec } from './atomic-write.js';
import { changeFields } from './change-log.js';

/** Who made a change and through which operation, for the change log. */
export interface ChangeMeta {
  actor: string;
  operation: string;
}

/** What an update computes from the current record; `changed: false` skips the write. */
export type TreatmentTransition = (current: TreatmentRecord) => { treatment: TreatmentRecord; changed: boolean };

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

  /** Assigns the next treatmentId and stores what `build` makes of it. 409 on a taken externalTreatmentId. */
  async insert(projectId: string, build: (treatmentId: string) => TreatmentRecord, meta: ChangeMeta): Promise<TreatmentRecord> {
    const treatmentId = String(await this.redis.incr(this.keys.seq('treatment')));
    const record = build(treatmentId);
    const json = JSON.stringify(record);
    const spec = this.writeSpec(projectId, meta, undefined, record);
    spec.checks.push({ key: this.keys.treatments(projectId), field: treatmentId, expect: null });
    spec.writes.push({ key: this.keys.treatments(projectId), field: treatmentId, value: json });
    if (await atomicWrite(this.redis, spec)) return record;
    // The id is fresh, so only the externalTreatmentId check can have failed.
    if (record.externalTreatmentId !== undefined) throw externalIdTaken(record.externalTreatmentId);
    throw new AbortedError('InsertTreatment: concurrent change, retry the request');
  }

  /**
   * Read → `transition` → compare-and-set, retried on conflict; `transition` sees the freshest
   * record each time and may throw (404, FAILED_PRECONDITION ...) to abort.
   */
  async update(projectId: string, treatmentId: string, transition: TreatmentTransition, meta: ChangeMeta): Promise<TreatmentRecord> {
    const key = this.keys.treatments(projectId);
    return withOptimisticRetry<TreatmentRecord>(meta.operation, async () => {
      const raw = await this.redis.hget(key, treatmentId);
      if (!raw) throw new NotFoundError(`treatment ${treatmentId} does not exist in project ${projectId}`);
      const before = JSON.parse(raw) as TreatmentRecord;
      const { treatment: after, changed } = transition(before);
      if (!changed) return { done: true as const, value: before };
      await this.assertExternalIdFree(projectId, before, after);
      const spec = this.writeSpec(projectId, meta, before, after);
      spec.checks.push({ key, field: treatmentId, expect: raw });
      spec.writes.push({ key, field: treatmentId, value: JSON.stringify(after) });
      const ok = await atomicWrite(this.redis, spec);
      return ok ? { done: true as const, value: after } : { done: false as const };
    });
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
      entry: changeFields({ time: new Date(this.now()).toISOString(), actor: meta.actor, operation: meta.operation, resourceKind: 'treatment', resourceId: after.treatmentId, before: before ?? null, after }),
    };
    spec.versionKey = this.keys.catalogVersion(projectId);
    spec.publish = { channel: this.keys.invalidationChannel(), message: JSON.stringify({ kind: 'catalog', projectId }) };
    return spec;
  }
}

function externalIdTaken(externalTreatmentId: string): AlreadyExistsError {
  return new AlreadyExistsError(`externalTreatmentId "${externalTreatmentId}" is already used by another treatment of the project`);
}

