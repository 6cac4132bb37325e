import { expect } from 'vitest';
import type { Warehouse } from '../../shared/platform/warehouse/warehouse.js';
import type { RecomputeDeps } from '../../workers/aggregation/recompute.js';
import { waitUntil } from './context.js';
import type { projectWithKeys, TestService } from './service.js';

/** The data-field calls of the aggregation tests, against a test service and project. */

export const DAY = 86_400_000;
export const iso = (ms: number) => new Date(ms).toISOString();

export const countOf = (eventSchemaName: string, windowName: string, extra: object = {}) => ({
  eventDataFieldParams: { eventSchemaName, dailyCountAggregation: { windowName }, ...extra },
});
export const eventAgg = (eventSchemaName: string, aggregation: string) => ({ eventDataFieldParams: { eventSchemaName, [aggregation]: {} } });

/** A promise with its resolver: a gate a test opens when it is ready. */
export function gate(): { opened: Promise<void>; open(): void } {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { opened, open };
}

type ProjectKeys = Awaited<ReturnType<typeof projectWithKeys>>;

/** The calls, bound to the service and project `current` gives when each is made (set in a beforeAll). */
export function aggregationApi(current: () => { s: TestService; keys: ProjectKeys }) {
  async function ok(path: string, key: string, body: Record<string, unknown>): Promise<any> {
    const { s, keys } = current();
    const res = await s.post(path, { projectId: keys.projectId, ...body }, { 'x-api-key': key });
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  }

  /** GetDataFields with the management key; returns the ids in request order. */
  async function dataFieldIds(...params: object[]): Promise<string[]> {
    const body = await ok('/v1/GetDataFields', current().keys.management, { dataFieldParams: params });
    return body.dataFields.map((f: { dataFieldId: string }) => f.dataFieldId);
  }

  function logEvents(userId: string, events: object[]) {
    return ok('/v1/LogEvents', current().keys.logEvents, { userId, events });
  }

  async function dataFields(userId: string): Promise<Record<string, unknown>> {
    const { s, keys } = current();
    const res = await s.admin('GetUserProfile', { projectId: keys.projectId, userId });
    expect(res.status).toBe(200);
    return res.body.profile.dataFields;
  }

  /** Polls the profile until `expected` (a subset of its dataFields) holds. */
  async function expectFields(userId: string, expected: Record<string, unknown>, timeoutMs: number): Promise<void> {
    let last: Record<string, unknown> = {};
    try {
      await waitUntil(async () => {
        last = await dataFields(userId);
        return Object.entries(expected).every(([k, v]) => last[k] === v);
      }, timeoutMs);
    } catch {
      expect(last).toMatchObject(expected);
    }
  }

  async function queuesIdle(): Promise<boolean> {
    const { ingest } = current().s.ctx.ingestion;
    const counts = await ingest.eventsQueue.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
    const ic = await ingest.interactionsQueue.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
    return Object.values(counts).every((n) => n === 0) && Object.values(ic).every((n) => n === 0);
  }

  /** What a recompute run of the test service needs, reading through `warehouse`. */
  function recomputeDeps(warehouse: Pick<Warehouse, 'query'>): RecomputeDeps {
    const { ctx } = current().s;
    return {
      warehouse,
      redis: ctx.redis,
      keys: ctx.keys,
      dataFields: ctx.aggregation.dataFields,
      deletions: ctx.profiles.userDeletions,
      log: ctx.log,
      now: ctx.now,
    };
  }

  return { ok, dataFieldIds, logEvents, dataFields, expectFields, queuesIdle, recomputeDeps };
}
