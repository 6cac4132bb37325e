import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import { ApiError } from '../../shared/platform/errors.js';
import type { EventSchemaStore } from '../../shared/catalog/index.js';
import type { EventOpsProvider } from '../ingestion/events.processor.js';

/**
 * The event names that workers store become event schemas. Cheap on the ingest path: a
 * per-process cache of the names known per project (bounded, least recently used out), so an
 * event of a known name costs nothing and only a name this process has not seen costs a Redis
 * read (and, for a name new to the project, one atomic write). Contributes no profile ops; it is
 * an op provider so that it runs for every events job, on the API and the Pub/Sub path alike,
 * before the job's profile script (a failure retries the job, which registers again: idempotent).
 */
export function eventSchemaRegistrar(schemas: EventSchemaStore, log: Logger, opts: { maxNames?: number } = {}): EventOpsProvider {
  const known = new LRUCache<string, true>({ max: opts.maxNames ?? 100_000 });
  // Concurrent jobs with the same new name share one registration.
  const inFlight = new Map<string, Promise<void>>();
  const register = (projectId: string, name: string, key: string): Promise<void> => {
    let p = inFlight.get(key);
    if (!p) {
      p = schemas
        .ensure(projectId, name, 'ingestion')
        .then(
          () => undefined,
          (err) => {
            // The project is at its bound of event schemas: the events are stored, the name gets no id.
            if (!(err instanceof ApiError)) throw err;
            log.warn({ projectId, errMessage: err.message }, 'event name not registered as an event schema');
          },
        )
        .then(() => {
          known.set(key, true);
        })
        .finally(() => inFlight.delete(key));
      inFlight.set(key, p);
    }
    return p;
  };
  return async (projectId, _userId, events) => {
    // each name of the job once (a job's events repeat a few names): no key string per event
    const names = new Set<string>();
    for (const e of events) names.add(e.eventName);
    const fresh: Promise<void>[] = [];
    for (const name of names) {
      const key = `${projectId}\n${name}`;
      if (!known.has(key)) fresh.push(register(projectId, name, key));
    }
    if (fresh.length > 0) await Promise.all(fresh);
    // no profile ops: a job's array of holes, no empty array per event
    return new Array<undefined>(events.length);
  };
}
