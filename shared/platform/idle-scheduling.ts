import { execFile, execFileSync } from 'node:child_process';
import type { Logger } from 'pino';

/**
 * The background process's CPU class (`WORKERS_SCHED_IDLE`, Linux). Below a nice value, a thread
 * of Linux's idle class (SCHED_IDLE) runs only on a core no other thread wants: the API processes
 * answer at once, and the workers store what was accepted with the CPU left over, which on a
 * machine below capacity is plenty. A nice-10 thread instead takes about a tenth of a contended
 * core, in slices long enough to stall an API process's request.
 *
 * Idle threads can starve while the machine is saturated. The process watches its own timer: when
 * it fires more than `starvedAfterMs` late, the process returns to the normal class (at its nice
 * value) for `holdMs`, then tries the idle class again. So a saturated machine ingests as it did
 * at nice 10 (after a second), and the ingestion backlog stays bounded by INGEST_MAX_BACKLOG.
 */
export interface IdleSchedulingOptions {
  /** How often the timer runs (ms). @defaultValue 250 */
  checkMs?: number;
  /** Lateness of the timer that counts as starving (ms). @defaultValue 1000 */
  starvedAfterMs?: number;
  /** How long the process stays in the normal class once it starved (ms). @defaultValue 5000 */
  holdMs?: number;
}

export type CpuClass = 'idle' | 'normal';

/** The class after a tick: `lateMs` is how late the timer fired, `inClassMs` how long the current class has held. */
export function nextCpuClass(current: CpuClass, lateMs: number, inClassMs: number, o: Required<IdleSchedulingOptions>): CpuClass {
  if (current === 'idle') return lateMs > o.starvedAfterMs ? 'normal' : 'idle';
  return inClassMs >= o.holdMs ? 'idle' : 'normal';
}

const CHRT_FLAG: Record<CpuClass, string> = { idle: '--idle', normal: '--other' };

/**
 * Puts every thread of this process in the idle class now (the threads started later inherit it)
 * and keeps it there while it is not starving. Undefined when the class cannot be set (no
 * `chrt`, not Linux): the process keeps its nice value, as before.
 */
export function startIdleScheduling(log: Logger, opts: IdleSchedulingOptions = {}): { stop(): void; current(): CpuClass } | undefined {
  const o: Required<IdleSchedulingOptions> = { checkMs: opts.checkMs ?? 250, starvedAfterMs: opts.starvedAfterMs ?? 1000, holdMs: opts.holdMs ?? 5000 };
  const pid = String(process.pid);
  try {
    execFileSync('chrt', [CHRT_FLAG.idle, '--all-tasks', '--pid', '0', pid], { stdio: 'ignore', timeout: 5000 });
  } catch (err) {
    log.warn({ err }, 'could not put the background process in the idle CPU class (chrt); it keeps its nice value');
    return undefined;
  }
  log.info('background process runs in the idle CPU class while it keeps up');
  let current: CpuClass = 'idle';
  let since = Date.now();
  let last = performance.now();
  let switching = false;
  const timer = setInterval(() => {
    const now = performance.now();
    const late = now - last - o.checkMs;
    last = now;
    const next = nextCpuClass(current, late, Date.now() - since, o);
    if (next === current || switching) return;
    switching = true;
    execFile('chrt', [CHRT_FLAG[next], '--all-tasks', '--pid', '0', pid], { timeout: 10_000 }, (err) => {
      switching = false;
      if (err) return log.warn({ err, to: next }, 'could not change the CPU class of the background process');
      current = next;
      since = Date.now();
      last = performance.now();
      if (next === 'normal') log.info({ lateMs: Math.round(late) }, 'background process starved in the idle CPU class: back to its nice value for a while');
      else log.debug('background process back in the idle CPU class');
    });
  }, o.checkMs);
  timer.unref();
  return { stop: () => clearInterval(timer), current: () => current };
}
