import type { Redis } from 'ioredis';
import { aggregationOf, aggregationResultType, type NormalizedParams } from './data-field-params.js';
import type { DataFieldRecord, DataFieldType } from './types.js';
import { AlreadyExistsError } from '../platform/errors.js';
import type { RedisKeys } from '../platform/redis/redis-keys.js';
import { compareIds } from '../platform/ids.js';
import { atomicWrite, withOptimisticRetry, type AtomicWriteSpec } from '../platform/redis/atomic-write.js';
import { changeFields } from '../projects/index.js';

export type UserPropertyType = 'BOOLEAN' | 'STRING' | 'INTEGER';

/** Registered type of a user attribute that was never registered by InsertDataField. */
const DEFAULT_USER_PROPERTY_TYPE: UserPropertyType = 'STRING';

/**
 * Data fields of a project: hash `dataFields` (id → DataFieldRecord JSON) with two unique
 * indexes written in the same script as the record: `dataFieldNames` (name → id, user-property
 * fields) and `dataFieldParams` (canonical params string → id, aggregation fields). Ids come from
 * one sequence, so they are unique across both kinds and never reused.
 */
export class DataFieldStore {
  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    private readonly now: () => number,
  ) {}

  async get(projectId: string, dataFieldId: string): Promise<DataFieldRecord | undefined> {
    const raw = await this.redis.hget(this.keys.dataFields(projectId), dataFieldId);
    return raw ? (JSON.parse(raw) as DataFieldRecord) : undefined;
  }

  /** Ascending numeric id. */
  async list(projectId: string): Promise<DataFieldRecord[]> {
    const all = await this.redis.hvals(this.keys.dataFields(projectId));
    return all.map((raw) => JSON.parse(raw) as DataFieldRecord).sort((a, b) => compareIds(a.dataFieldId, b.dataFieldId));
  }

  async getByName(projectId: string, name: string): Promise<DataFieldRecord | undefined> {
    const id = await this.redis.hget(this.keys.dataFieldNames(projectId), name);
    return id ? this.get(projectId, id) : undefined;
  }

  /** Idempotent on (project, name); the same name with another type is 409 ALREADY_EXISTS. */
  async insertNamed(projectId: string, name: string, dataType: UserPropertyType, actor: string): Promise<DataFieldRecord> {
    const field = await this.registerNamed(projectId, name, dataType, actor, 'InsertDataField');
    if (field.dataFieldType !== dataType) {
      throw new AlreadyExistsError(`data field "${name}" already exists with dataType ${field.dataFieldType}; it cannot be registered again as ${dataType}`);
    }
    return field;
  }

  /**
   * One data field per params entry, in order (GetDataFields). Known entries are read in two
   * round trips; only new ones take the create path.
   */
  async resolve(projectId: string, entries: NormalizedParams[], actor: string, operation = 'GetDataFields'): Promise<DataFieldRecord[]> {
    const known = await this.lookup(projectId, entries);
    const out: DataFieldRecord[] = [];
    for (const [i, entry] of entries.entries()) {
      out.push(known[i] ?? (await this.resolveOne(projectId, entry, actor, operation)));
    }
    return out;
  }

  private async lookup(projectId: string, entries: NormalizedParams[]): Promise<(DataFieldRecord | undefined)[]> {
    const ids = await Promise.all(
      entries.map((e) => {
        const attr = userAttributeName(e);
        return attr !== undefined ? this.redis.hget(this.keys.dataFieldNames(projectId), attr) : this.redis.hget(this.keys.dataFieldParams(projectId), e.key);
      }),
    );
    const found = ids.filter((id): id is string => id !== null);
    if (found.length === 0) return entries.map(() => undefined);
    const raws = await this.redis.hmget(this.keys.dataFields(projectId), ...found);
    const byId = new Map(found.map((id, i) => [id, raws[i]]));
    return ids.map((id) => {
      const raw = id === null ? null : byId.get(id);
      return raw ? (JSON.parse(raw) as DataFieldRecord) : undefined;
    });
  }

  private async resolveOne(projectId: string, entry: NormalizedParams, actor: string, operation: string): Promise<DataFieldRecord> {
    const attr = userAttributeName(entry);
    if (attr !== undefined) return this.registerNamed(projectId, attr, DEFAULT_USER_PROPERTY_TYPE, actor, operation);
    const { record, created } = await this.registerParams(projectId, entry, actor, operation);
    if (created) {
      // The stream is a hint that makes a new aggregation fill sooner; it cannot be part of the
      // atomic write, so a crash between the two loses only the hint: the scheduler's periodic
      // recompute of every aggregation is the safety net.
      await this.redis.xadd(this.keys.dataFieldCreated(), 'MAXLEN', '~', '100000', '*', 'projectId', projectId, 'dataFieldId', record.dataFieldId);
    }
    return record;
  }

  /** Returns the field registered under `name`, registering it with `dataType` when there is none. */
  private async registerNamed(projectId: string, name: string, dataType: UserPropertyType, actor: string, operation: string): Promise<DataFieldRecord> {
    const names = this.keys.dataFieldNames(projectId);
    let id: string | undefined;
    return withOptimisticRetry<DataFieldRecord>(operation, async () => {
      const existing = await this.getByName(projectId, name);
      if (existing) return { done: true as const, value: existing };
      id ??= await this.nextId();
      const record: DataFieldRecord = { dataFieldId: id, projectId, name, dataFieldType: dataType, createTime: new Date(this.now()).toISOString() };
      const ok = await this.create(projectId, record, { key: names, field: name }, actor, operation);
      return ok ? { done: true as const, value: record } : { done: false as const };
    });
  }

  private async registerParams(
    projectId: string,
    entry: NormalizedParams,
    actor: string,
    operation: string,
  ): Promise<{ record: DataFieldRecord; created: boolean }> {
    const index = this.keys.dataFieldParams(projectId);
    const agg = aggregationOf(entry.canonical);
    if (!agg) throw new Error('registerParams: params entry has no aggregation');
    const dataFieldType: DataFieldType = aggregationResultType(agg.key);
    let id: string | undefined;
    return withOptimisticRetry<{ record: DataFieldRecord; created: boolean }>(operation, async () => {
      const existingId = await this.redis.hget(index, entry.key);
      const existing = existingId ? await this.get(projectId, existingId) : undefined;
      if (existing) return { done: true as const, value: { record: existing, created: false } };
      id ??= await this.nextId();
      const record: DataFieldRecord = { dataFieldId: id, projectId, dataFieldType, params: entry.canonical, createTime: new Date(this.now()).toISOString() };
      const ok = await this.create(projectId, record, { key: index, field: entry.key }, actor, operation);
      return ok ? { done: true as const, value: { record, created: true } } : { done: false as const };
    });
  }

  /** Writes the record and its unique index entry together, or nothing if the index entry appeared meanwhile. */
  private async create(projectId: string, record: DataFieldRecord, index: { key: string; field: string }, actor: string, operation: string): Promise<boolean> {
    const spec: AtomicWriteSpec = {
      checks: [{ ...index, expect: null }],
      writes: [
        { key: this.keys.dataFields(projectId), field: record.dataFieldId, value: JSON.stringify(record) },
        { ...index, value: record.dataFieldId },
      ],
      change: {
        key: this.keys.changes(projectId),
        entry: changeFields({
          time: record.createTime,
          actor,
          operation,
          resourceKind: 'dataField',
          resourceId: record.dataFieldId,
          before: null,
          after: record,
        }),
      },
      versionKey: this.keys.catalogVersion(projectId),
      publish: { channel: this.keys.invalidationChannel(), message: JSON.stringify({ kind: 'catalog', projectId }) },
    };
    return atomicWrite(this.redis, spec);
  }

  private async nextId(): Promise<string> {
    return String(await this.redis.incr(this.keys.seq('dataField')));
  }
}

function userAttributeName(entry: NormalizedParams): string | undefined {
  return 'userAttributeDataFieldParams' in entry.canonical ? entry.canonical.userAttributeDataFieldParams.propertyName : undefined;
}
