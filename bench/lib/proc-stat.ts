import { readFileSync } from 'node:fs';

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
