import { readFileSync } from 'node:fs';

/** A thread's time on a CPU and waiting for one (s), from /proc/<pid>/task/<tid>/schedstat; zeros when unreadable. */
export function schedTimes(pid: number, tid = pid): { runSec: number; waitSec: number } {
  try {
    const [run, wait] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ').map(Number);
    return { runSec: run / 1e9, waitSec: wait / 1e9 };
  } catch {
    return { runSec: 0, waitSec: 0 };
  }
}

/**
 * How long a process's main thread ran and waited on the run queue (ready, no CPU free) over
 * `fn`. On a machine the load generator, Redis and the background process share, the wait is
 * where an open loop's tail comes from when the server's own work does not explain it.
 */
export async function withRunQueue<T>(pid: number, fn: () => Promise<T>): Promise<{ value: T; runSec: number; waitSec: number }> {
  const before = schedTimes(pid);
  const value = await fn();
  const after = schedTimes(pid);
  return { value, runSec: after.runSec - before.runSec, waitSec: after.waitSec - before.waitSec };
}
