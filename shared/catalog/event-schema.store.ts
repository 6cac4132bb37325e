import type { Redis } from 'ioredis';
import type { RedisKeys } from '../platform/redis/redis-keys.js';
import { FailedPreconditionError } from '../platform/errors.js';
import { atomicWrite, withOptimisticRetry } from '../platform/redis/atomic-write.js';
import { changeFields } from '../projects/index.js';

/** A distinct event name of a project and its stable id. */
export interface EventSchema {
  eventId: string;
  eventName: string;
  createTime: string;
}

/**
 * Event schemas per project stay bounded (no request may grow a store without bound): a
 * client that sends random event names registers at most this many. Events with further names
 * are still stored; their names just get no id (InsertEventSchema answers 400 FAILED_PRECONDITION).
 */
export const MAX_EVENT_SCHEMAS_PER_PROJECT = 10_000;

/**
 * Event schemas: one hash per project, field = event name (case-sensitive), value = EventSchema
 * JSON, and its inverse (id → name) for `targetAction.eventId` and the reports. Ids come from one
 * sequence like the other service-assigned ids: positive, unique, never reused. Never deleted.
 */
export class EventSchemaStore {
  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    private readonly now: () => number,
  ) {}

  async getByName(projectId: string, eventName: string): Promise<EventSchema | undefined> {
    const raw = await this.redis.hget(this.keys.eventSchemas(projectId), eventName);
    return raw ? (JSON.parse(raw) as EventSchema) : undefined;
  }

  async getById(projectId: string, eventId: string): Promise<EventSchema | undefined> {
    const name = await this.redis.hget(this.keys.eventSchemaIds(projectId), eventId);
    return name === null ? undefined : this.getByName(projectId, name);
  }

  /** Ascending eventId. */
  async list(projectId: string): Promise<EventSchema[]> {
    const all = (await this.redis.hvals(this.keys.eventSchemas(projectId))).map((raw) => JSON.parse(raw) as EventSchema);
    return all.sort((a, b) => (BigInt(a.eventId) < BigInt(b.eventId) ? -1 : BigInt(a.eventId) > BigInt(b.eventId) ? 1 : 0));
  }

  /**
   * The schema of `eventName`, registered on first sight (idempotent: a known name returns the
   * stored schema, and two concurrent first sights agree on one id). `actor` goes to the change log.
   * @throws FailedPreconditionError when the project already has MAX_EVENT_SCHEMAS_PER_PROJECT names
   */
  async ensure(projectId: string, eventName: string, actor: string): Promise<EventSchema> {
    const key = this.keys.eventSchemas(projectId);
    return withOptimisticRetry<EventSchema>('InsertEventSchema', async () => {
      const existing = await this.getByName(projectId, eventName);
      if (existing) return { done: true as const, value: existing };
      if ((await this.redis.hlen(key)) >= MAX_EVENT_SCHEMAS_PER_PROJECT) {
        throw new FailedPreconditionError(`project ${projectId} already has ${MAX_EVENT_SCHEMAS_PER_PROJECT} event schemas, the most a project may have`);
      }
      const eventId = String(await this.redis.incr(this.keys.seq('eventSchema')));
      const schema: EventSchema = { eventId, eventName, createTime: new Date(this.now()).toISOString() };
      const ok = await atomicWrite(this.redis, {
        checks: [{ key, field: eventName, expect: null }],
        writes: [
          { key, field: eventName, value: JSON.stringify(schema) },
          { key: this.keys.eventSchemaIds(projectId), field: eventId, value: eventName },
        ],
        change: {
          key: this.keys.changes(projectId),
          entry: changeFields({
            time: schema.createTime,
            actor,
            operation: 'InsertEventSchema',
            resourceKind: 'eventSchema',
            resourceId: eventId,
            before: null,
            after: schema,
          }),
        },
      });
      // A concurrent first sight won: the retry returns its schema (this id stays unused).
      return ok ? { done: true as const, value: schema } : { done: false as const };
    });
  }
}
