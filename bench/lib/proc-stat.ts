import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second of /proc's CPU times (USER_HZ, 100 on Linux). */
export const CLOCK_TICKS = 100;

/**
 * The fields of a /proc `stat` file after the parenthesised command name (which may hold spaces):
 * [0] is the state, [11] utime and [12] stime in clock ticks. A process's own file
 * (`/proc/<pid>/stat`) sums the times of all its threads; `/proc/<pid>/task/<tid>/stat` is one thread's.
 */
export function statFields(path: string): string[] {
  const s = readFileSync(path, 'utf8');
  return s.slice(s.lastIndexOf(') ') + 2).split(' ');
}

/** User and kernel CPU seconds of a process (all its threads) or, with `tid`, of one thread, and its name. */
export function cpuTimes(pid: number, tid?: number): { name: string; user: number; sys: number } {
  const s = readFileSync(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`, 'utf8');
  const f = s.slice(s.lastIndexOf(') ') + 2).split(' ');
  return { name: s.slice(s.indexOf('(') + 1, s.lastIndexOf(')')), user: Number(f[11]) / CLOCK_TICKS, sys: Number(f[12]) / CLOCK_TICKS };
}

/**
 * CPU seconds of a process per thread group (thread names without their numbers: V8's, libuv's,
 * the embedded ClickHouse engine's pools). The main thread is `main`; with `splitMainKernel` its
 * time in the kernel (system calls, wake-ups) is `main in the kernel`, apart from its own code.
 */
export function threadCpuOf(pid: number, opts: { splitMainKernel?: boolean } = {}): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const t = cpuTimes(pid, Number(tid));
      if (Number(tid) === pid && opts.splitMainKernel) {
        out.set('main', t.user);
        out.set('main in the kernel', t.sys);
        continue;
      }
      const group = Number(tid) === pid ? 'main' : t.name.replace(/[\d_-]+$/, '');
      out.set(group, (out.get(group) ?? 0) + t.user + t.sys);
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return out;
}

/**
 * µs of CPU per unit (request, event, row) of each thread group between two readings of
 * threadCpuOf, largest first, leaving out groups under `minMicros`. A thread that ended between
 * the readings drops out of the second one, and so of the figures.
 */
export function threadCpuPer(before: Map<string, number>, after: Map<string, number>, units: number, minMicros: number): [string, number][] {
  return [...after]
    .map(([group, s]): [string, number] => [group, ((s - (before.get(group) ?? 0)) * 1e6) / units])
    .filter(([, us]) => us >= minMicros)
    .sort((a, b) => b[1] - a[1]);
}
