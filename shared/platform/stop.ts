import type { Worker } from 'bullmq';
import type { Logger } from 'pino';

/**
 * Bounded waits for the ordered stop. Every await of a stop that talks to Redis can hang while
 * Redis is down (a waiting connection queues its commands until Redis returns), so each step is
 * given a share of one deadline and left behind when it does not finish: what was queued is in
 * Redis already, and a job a worker could not finish is retried once its lock expires.
 */

/** True when `work` settled (resolved or rejected) within `ms`; the work itself is not cancelled. */
export async function settlesWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), Math.max(0, ms));
  });
  try {
    return await Promise.race([
      work.then(
        () => true,
        () => true,
      ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** The time an ordered stop has left: each step takes its share and never runs past the end. */
export class StopBudget {
  private readonly endsAt: number;

  constructor(totalMs: number) {
    this.endsAt = performance.now() + totalMs;
  }

  remainingMs(): number {
    return Math.max(0, this.endsAt - performance.now());
  }

  /** What a step may take: at most `maxMs`, leaving `reserveMs` for the steps after it. */
  allow(maxMs: number, reserveMs = 0): number {
    return Math.max(0, Math.min(maxMs, this.remainingMs() - reserveMs));
  }

  /** Runs one step within `allow(maxMs, reserveMs)`; a step that fails or runs late is logged and left behind. */
  async step(log: Logger, name: string, work: () => Promise<unknown>, maxMs = Infinity, reserveMs = 0): Promise<boolean> {
    const ms = this.allow(maxMs, reserveMs);
    let failed: unknown;
    const done = await settlesWithin(
      work().catch((err: unknown) => {
        failed = err;
      }),
      ms,
    );
    if (failed !== undefined) log.warn({ err: failed, step: name }, 'a step of the stop failed; going on');
    else if (!done) log.warn({ step: name, waitedMs: Math.round(ms) }, 'a step of the stop did not finish in time; going on without it');
    return done && failed === undefined;
  }
}

/** A live connection: ready (a standalone Redis or a cluster). */
function live(client: { status: string } | undefined): boolean {
  return client?.status === 'ready';
}

/** Whether both connections of a worker (commands, blocking fetch) are up right now. */
async function workerConnected(worker: Worker): Promise<boolean> {
  const backend = worker.getBackend();
  const clients = Promise.all([backend.client, backend.blockingClient ?? Promise.resolve(undefined)]);
  clients.catch(() => undefined);
  // A connection that never became ready has a pending client: not connected.
  const got = await Promise.race([clients, new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 50).unref())]).catch(() => undefined);
  return got !== undefined && got.every((c) => c === undefined || live(c));
}

/**
 * Closes BullMQ workers within `graceMs`, whatever Redis does. With Redis reachable, each worker
 * finishes its active jobs (BullMQ's graceful close) within the grace; with Redis unreachable
 * their jobs cannot finish, so they are closed with `force` at once. A job left unfinished stays
 * active in Redis and is retried after its lock expires (the jobs are safe to retry: markers and
 * collapsing tables). The grace is a hard bound rather than a hint because a graceful close waits
 * for its blocking connection to end, which never happens while that connection is reconnecting
 * (Redis back less than the reconnect delay ago), and BullMQ offers no force after a graceful
 * close began. Resolves true when every worker closed cleanly; one line is logged otherwise.
 */
export async function closeWorkers(workers: readonly Worker[], graceMs: number, log: Logger): Promise<boolean> {
  const outcomes = await Promise.all(
    workers.map(async (w): Promise<'clean' | 'forced' | 'late'> => {
      if (!(await workerConnected(w))) {
        // force: no waiting on jobs or connections; bounded all the same
        await settlesWithin(w.close(true), Math.min(graceMs, 1000));
        return 'forced';
      }
      return (await settlesWithin(w.close(), graceMs)) ? 'clean' : 'late';
    }),
  );
  const forced = workers.filter((_, i) => outcomes[i] === 'forced').map((w) => w.name);
  const late = workers.filter((_, i) => outcomes[i] === 'late').map((w) => w.name);
  if (forced.length > 0)
    log.info({ workers: forced }, 'Redis unreachable at stop: workers closed without waiting; their active jobs are retried when their locks expire');
  if (late.length > 0)
    log.warn(
      { workers: late, graceMs: Math.round(graceMs) },
      'workers did not finish their active jobs in time; those jobs are retried when their locks expire',
    );
  return forced.length === 0 && late.length === 0;
}
