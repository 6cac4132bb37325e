import { Queue } from 'bullmq';
import type { Cluster } from 'ioredis';
import type { Logger } from 'pino';
import { isCluster, type Redis } from '../../shared/platform/redis/redis.js';
import { bullPrefix, QUEUE } from '../../shared/platform/queues.js';

export interface RedisRestartWatchOptions {
  /** A waiting connection (worker profile): its reconnections trigger a check. */
  connection: Redis;
  /** Hash of the `run_id` last seen per Redis node (`host:port` → run_id). */
  key: string;
  log: Logger;
  /** Told once per restart seen, with the new run ids; a failure is retried at the next check. */
  onRestart(runIds: string[]): Promise<void>;
  /**
   * Resolves once the work that was under way at the restart is done, before `onRestart` is told
   * (`stopped` says the watch was closed meanwhile). See `ingestBacklogSettled`.
   */
  settle?: (stopped: () => boolean) => Promise<void>;
  /** Checks between reconnections (a failover behind one address). @defaultValue 30000 */
  everyMs?: number;
}

export interface RedisRestartWatch {
  /** One check now (concurrent calls share it); true when a restart was seen. */
  check(): Promise<boolean>;
  close(): void;
}

/** `run_id` (INFO server) of each primary: the Redis itself, or every primary of a cluster. */
async function runIds(redis: Redis): Promise<Map<string, string>> {
  const nodes = isCluster(redis) ? (redis as unknown as Cluster).nodes('master') : [redis];
  const out = new Map<string, string>();
  for (const node of nodes) {
    const id = /^run_id:(\w+)/m.exec(await node.info('server'))?.[1];
    if (id) out.set(`${node.options.host ?? 'localhost'}:${node.options.port ?? 6379}`, id);
  }
  return out;
}

/**
 * Notices that Redis restarted: its `run_id` differs from the one recorded in Redis at the last
 * check (at start-up, on every reconnection and every `everyMs`). A restarted Redis may have lost
 * its last second of writes (`appendfsync everysec` and a power cut): profile counts of events
 * that are in ClickHouse then read low until they are recomputed, which `onRestart` sets going at
 * once. The record lives in Redis, so a restart while the service was stopped is seen too; a
 * Redis restarted empty (no persistence) has no record and is not reported.
 */
export function watchRedisRestarts(o: RedisRestartWatchOptions): RedisRestartWatch {
  let checking: Promise<boolean> | undefined;
  let closed = false;
  const checkOnce = async (): Promise<boolean> => {
    const current = await runIds(o.connection);
    const seen = await o.connection.hgetall(o.key);
    const restarted = [...current].filter(([node, id]) => seen[node] !== undefined && seen[node] !== id);
    if (restarted.length > 0) {
      o.log.warn(
        { nodes: restarted.map(([node]) => node) },
        'Redis restarted (its run_id changed): the profiles are recomputed from ClickHouse, in case it lost its last writes, once the jobs queued before the restart are done',
      );
      await o.settle?.(() => closed);
      // A watch closed meanwhile records nothing: the next start checks (and recomputes) again.
      if (closed) return false;
      await o.onRestart(restarted.map(([, id]) => id));
    }
    // Recorded after the recompute was queued: a failure to queue it is retried at the next check.
    if (current.size > 0) await o.connection.hset(o.key, Object.fromEntries(current));
    return restarted.length > 0;
  };
  const check = () => {
    checking ??= checkOnce().finally(() => {
      checking = undefined;
    });
    return checking;
  };
  const checkInBackground = () => {
    if (closed) return;
    check().catch((err: unknown) => o.log.debug({ err }, 'could not compare the Redis run_id; retrying at the next check'));
  };
  o.connection.on('ready', checkInBackground);
  const timer = setInterval(checkInBackground, o.everyMs ?? 30_000);
  timer.unref();
  return {
    check,
    close: () => {
      closed = true;
      clearInterval(timer);
      o.connection.off('ready', checkInBackground);
    },
  };
}

/** The queues whose jobs write rows to ClickHouse and then update profiles. */
const INGEST_QUEUES = [QUEUE.events, QUEUE.interactions, QUEUE.decisions, QUEUE.isolated];
const PENDING_LISTS = ['wait', 'active', 'paused'];
const PENDING_SETS = ['delayed', 'prioritized'];

/**
 * Waits until every ingestion job pending when it is called (waiting, active, delayed) has
 * finished, at most `timeoutMs`. A job interrupted by the crash may have stored its rows in
 * ClickHouse without updating the profiles yet; a recompute that read those rows before the job's
 * retry updates the profiles would count them twice (today keeps the larger count, finished days
 * take ClickHouse's), so the restart's recompute waits for them. Reads job ids only (no payloads).
 */
export async function ingestBacklogSettled(
  connection: Redis,
  redisPrefix: string,
  log: Logger,
  stopped: () => boolean,
  opts: { timeoutMs?: number; pollMs?: number } = {},
): Promise<void> {
  const queues = INGEST_QUEUES.map(
    (name) => new Queue(name, { connection, prefix: bullPrefix(redisPrefix, connection), skipVersionCheck: true, skipMetasUpdate: true }),
  );
  for (const q of queues) q.on('error', () => undefined);
  const pending = async (): Promise<Set<string>> => {
    const ids = new Set<string>();
    for (const q of queues) {
      for (const list of PENDING_LISTS) for (const id of await connection.lrange(q.keys[list], 0, -1)) ids.add(`${q.name}:${id}`);
      for (const set of PENDING_SETS) for (const id of await connection.zrange(q.keys[set], '0', '-1')) ids.add(`${q.name}:${id}`);
    }
    return ids;
  };
  try {
    let left = await pending();
    const total = left.size;
    const end = Date.now() + (opts.timeoutMs ?? 15 * 60_000);
    while (left.size > 0 && !stopped()) {
      if (Date.now() > end) {
        log.warn({ jobs: total, unfinished: left.size }, 'jobs queued before the Redis restart are still pending; recomputing now');
        return;
      }
      await new Promise((r) => setTimeout(r, opts.pollMs ?? 1000));
      const now = await pending();
      left = new Set([...left].filter((id) => now.has(id)));
    }
  } finally {
    await Promise.all(queues.map((q) => q.close().catch(() => undefined)));
  }
}
