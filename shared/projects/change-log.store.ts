import type { Redis } from 'ioredis';
import type { RedisKeys } from '../platform/redis/redis-keys.js';
import type { ChangeEntry } from './change-entry.js';

function parseEntry(id: string, flat: string[]): ChangeEntry {
  const m: Record<string, string> = {};
  for (let i = 0; i < flat.length; i += 2) m[flat[i]] = flat[i + 1];
  const entry: ChangeEntry = {
    changeId: id,
    time: m.time,
    actor: m.actor,
    operation: m.operation,
    resourceKind: m.resourceKind,
    resourceId: m.resourceId,
    before: JSON.parse(m.before ?? 'null'),
    after: JSON.parse(m.after ?? 'null'),
  };
  if (m.truncated === '1') entry.truncated = true;
  return entry;
}

/** Newest first; `pageToken` is the id of the last entry of the previous page. */
export async function listChanges(
  redis: Redis,
  keys: RedisKeys,
  projectId: string,
  pageSize: number,
  pageToken?: string,
): Promise<{ changes: ChangeEntry[]; nextPageToken?: string }> {
  const end = pageToken ? `(${pageToken}` : '+';
  const rows = (await redis.xrevrange(keys.changes(projectId), end, '-', 'COUNT', pageSize + 1)) as [string, string[]][];
  const page = rows.slice(0, pageSize).map(([id, flat]) => parseEntry(id, flat));
  return { changes: page, nextPageToken: rows.length > pageSize ? page[page.length - 1].changeId : undefined };
}
