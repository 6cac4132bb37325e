import type { Redis } from 'ioredis';
import { openQueueHandle } from '../platform/metrics.js';
import { QUEUE } from '../platform/queues.js';
import type { RedisKeys } from '../platform/redis/redis-keys.js';
import { aggregationTarget } from './data-field-ops.js';
import type { DataFieldRecord } from './types.js';
import { BACKFILL_GROUP, backfillJobId } from './jobs.js';

/**
 * Where a data field's backfill from history stands. NOT_APPLICABLE: a user property (nothing to
 * fill). PENDING: not started yet, or waiting for a retry. RUNNING, FAILED (every attempt failed;
 * the hourly recompute still covers the field). COMPLETE: done, or its job record has expired.
 */
export type BackfillStatus = 'NOT_APPLICABLE' | 'PENDING' | 'RUNNING' | 'COMPLETE' | 'FAILED';

export interface BackfillStatusDeps {
  redis: Redis;
  keys: RedisKeys;
  redisPrefix: string;
}

const STATE_STATUS: Record<string, BackfillStatus> = {
  completed: 'COMPLETE',
  failed: 'FAILED',
  active: 'RUNNING',
  waiting: 'PENDING',
  delayed: 'PENDING',
  prioritized: 'PENDING',
  'waiting-children': 'PENDING',
};

/** Only what the recompute aggregates is filled from history; user properties (however registered) are not. */
function isBackfilled(f: DataFieldRecord): boolean {
  return aggregationTarget(f) !== undefined;
}

/** The backfill status of each field, by dataFieldId. */
export async function backfillStatuses(deps: BackfillStatusDeps, projectId: string, fields: DataFieldRecord[]): Promise<Map<string, BackfillStatus>> {
  const out = new Map<string, BackfillStatus>();
  const filled = fields.filter(isBackfilled);
  for (const f of fields) if (!isBackfilled(f)) out.set(f.dataFieldId, 'NOT_APPLICABLE');
  if (filled.length === 0) return out;
  const queue = openQueueHandle(deps.redis, deps.redisPrefix, QUEUE.aggregations);
  try {
    const states = await Promise.all(filled.map((f) => queue.getJobState(backfillJobId(projectId, f.dataFieldId))));
    const jobless = filled.filter((_, i) => STATE_STATUS[states[i]] === undefined);
    filled.forEach((f, i) => STATE_STATUS[states[i]] && out.set(f.dataFieldId, STATE_STATUS[states[i]]));
    if (jobless.length > 0) {
      const unread = await unreadFields(deps.redis, deps.keys.dataFieldCreated(), projectId);
      for (const f of jobless) out.set(f.dataFieldId, unread(f) ? 'PENDING' : 'COMPLETE');
    }
  } finally {
    await queue.close();
  }
  return out;
}

/** Reads the fields of a flat `[k, v, k, v]` reply (RESP2) or an object (RESP3). */
function record(reply: unknown): Record<string, unknown> {
  if (!Array.isArray(reply)) return (reply ?? {}) as Record<string, unknown>;
  const r: Record<string, unknown> = {};
  for (let i = 0; i + 1 < reply.length; i += 2) r[String(reply[i])] = reply[i + 1];
  return r;
}

const SCAN_LIMIT = 1000;

/**
 * Whether a field without a backfill job has yet to be picked up: its stream entry is unread by
 * the worker's group, or read but not acknowledged (its job is being added). Everything else was
 * picked up and its job record has since expired (after a day, or 1,000 newer jobs).
 */
async function unreadFields(redis: Redis, stream: string, projectId: string): Promise<(f: DataFieldRecord) => boolean> {
  if ((await redis.exists(stream)) === 0) return () => false;
  const groups = ((await redis.call('XINFO', 'GROUPS', stream)) as unknown[]).map(record);
  const group = groups.find((g) => String(g.name) === BACKFILL_GROUP);
  // no worker has read the stream yet
  if (group === undefined) return () => true;
  const pending = (await redis.call('XPENDING', stream, BACKFILL_GROUP)) as [number, string | null, ...unknown[]];
  const lastRead = String(group['last-delivered-id']);
  const from = Number(pending[0]) > 0 && pending[1] ? String(pending[1]) : `(${lastRead}`;
  const entries = (await redis.call('XRANGE', stream, from, '+', 'COUNT', SCAN_LIMIT)) as [string, string[]][];
  const ids = new Set(
    entries
      .map(([, kv]) => record(kv))
      .filter((e) => e.projectId === projectId)
      .map((e) => String(e.dataFieldId)),
  );
  // More unread entries than scanned: a field created after the last read one counts as unread.
  const sinceMs = entries.length === SCAN_LIMIT ? Number(lastRead.split('-')[0]) : Infinity;
  return (f) => ids.has(f.dataFieldId) || Date.parse(f.createTime) >= sinceMs;
}
