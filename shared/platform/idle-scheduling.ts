import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
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

/** Where bash may be: the helper watches for starvation only with it (dash's `read` has no timeout). */
const BASH = ['/bin/bash', '/usr/bin/bash'];

/** The class after a tick: `lateMs` is how late the timer fired, `inClassMs` how long the current class has held. */
export function nextCpuClass(current: CpuClass, lateMs: number, inClassMs: number, o: Required<IdleSchedulingOptions>): CpuClass {
  if (current === 'idle') return lateMs > o.starvedAfterMs ? 'normal' : 'idle';
  return inClassMs >= o.holdMs ? 'idle' : 'normal';
}

/**
 * Puts every thread of this process in the idle class now (the threads started later inherit it)
 * and keeps it there while it is not starving. Undefined when the class cannot be set (no
 * `chrt`, not Linux): the process keeps its nice value, as before.
 *
 * The switches back and forth are made by a small shell started before the process goes idle: a
 * `chrt` started from an idle thread would be idle too, and on the saturated machine it is meant
 * to rescue the process from it would wait for a CPU as long as the process does. The shell also
 * watches the process (with bash, whose `read` takes a timeout): the timer sends it a beat each
 * tick, and when none has come for `starvedAfterMs` the shell, in the normal class, moves the
 * process there itself. The process's own timer could not be relied on for that: starved, an idle
 * thread gets a slice so seldom that with every core busy the timer first ran about 10 s late.
 */
export function startIdleScheduling(log: Logger, opts: IdleSchedulingOptions = {}): { current(): CpuClass } | undefined {
  const o: Required<IdleSchedulingOptions> = { checkMs: opts.checkMs ?? 250, starvedAfterMs: opts.starvedAfterMs ?? 1000, holdMs: opts.holdMs ?? 5000 };
  const pid = String(process.pid);
  let helper: ChildProcess;
  const watch = BASH.some((b) => existsSync(b));
  try {
    // reads `idle` or `other`, sets that class on every thread of `pid`, answers with the class
    // and chrt's status; with bash it also takes `beat` (sent only then), and no line for $2 s
    // (the process is starved) moves the process to the normal class and answers `starved`
    const script = watch
      ? 'while :; do read -r -t "$2" c; s=$?; if [ $s -gt 128 ]; then chrt --other --all-tasks --pid 0 "$1" >/dev/null 2>&1; echo "starved $?"; continue; fi; [ $s -eq 0 ] || exit 0; [ "$c" = beat ] && continue; chrt "--$c" --all-tasks --pid 0 "$1" >/dev/null 2>&1; echo "$c $?"; done'
      : 'while read c; do chrt "--$c" --all-tasks --pid 0 "$1" >/dev/null 2>&1; echo "$c $?"; done';
    // --norc: stdin is a socket (node's pipes are socketpairs), so bash would take itself for a
    // remote shell and run ~/.bashrc first (here, a pyenv set-up that kept it busy for seconds)
    helper = spawn(watch ? 'bash' : 'sh', [...(watch ? ['--norc', '--noprofile'] : []), '-c', script, 'sh', pid, String(o.starvedAfterMs / 1000)], {
      stdio: ['pipe', 'pipe', 'ignore'],
      // none of the service's settings (ROLE, secrets): it only runs chrt
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    });
    helper.on('error', () => undefined);
    execFileSync('chrt', ['--idle', '--all-tasks', '--pid', '0', pid], { stdio: 'ignore', timeout: 5000 });
  } catch (err) {
    log.warn({ err }, 'could not put the background process in the idle CPU class (chrt); it keeps its nice value');
    return undefined;
  }
  log.info('background process runs in the idle CPU class while it keeps up');
  let current: CpuClass = 'idle';
  let since = Date.now();
  let last = performance.now();
  let asked: { to: CpuClass; lateMs: number } | undefined;
  /** `how`: the timer's lateness (its own measure), or the helper's: no beat for at least the limit. */
  const starved = (how: { lateMs: number } | { noBeatForMs: number }) => {
    current = 'normal';
    since = Date.now();
    last = performance.now();
    log.info(how, 'background process starved in the idle CPU class: back to its nice value for a while');
  };
  createInterface({ input: helper.stdout! }).on('line', (line) => {
    const [what, status] = line.split(' ');
    if (what === 'starved') {
      // the shell saw no beat: the process is in the normal class now (nothing to say if it was already)
      if (status === '0' && current === 'idle') starved({ noBeatForMs: o.starvedAfterMs });
      return;
    }
    const answer = asked;
    asked = undefined;
    if (answer === undefined) return;
    if (status !== '0') return log.warn({ to: answer.to, status }, 'could not change the CPU class of the background process');
    // already moved there by the shell, which saw no beat: said then
    if (answer.to === 'normal') return current === 'normal' ? undefined : starved({ lateMs: Math.round(answer.lateMs) });
    current = 'idle';
    since = Date.now();
    last = performance.now();
    log.debug('background process back in the idle CPU class');
  });
  const timer = setInterval(() => {
    const now = performance.now();
    const late = now - last - o.checkMs;
    last = now;
    const next = nextCpuClass(current, late, Date.now() - since, o);
    if (next === current || asked !== undefined) {
      if (watch) helper.stdin!.write('beat\n');
      return;
    }
    asked = { to: next, lateMs: late };
    helper.stdin!.write(`${next === 'idle' ? 'idle' : 'other'}\n`);
  }, o.checkMs);
  timer.unref();
  // Without its helper the process could not leave the idle class when starved: should the shell
  // die, the process returns to the normal class (at its nice value) for good.
  helper.stdin!.on('error', () => undefined);
  let exiting = false;
  helper.once('exit', (_code, signal) => {
    clearInterval(timer);
    if (exiting) return;
    try {
      execFileSync('chrt', ['--other', '--all-tasks', '--pid', '0', pid], { stdio: 'ignore', timeout: 5000 });
      current = 'normal';
      // a stop of the whole process group (systemd, `timeout`, Ctrl-C) reaches the helper too: the
      // process stops in the normal class, and that is no news
      if (signal === 'SIGTERM' || signal === 'SIGINT' || signal === 'SIGHUP')
        log.info({ signal }, 'the idle CPU class helper stopped with its process group: background process back to its nice value');
      else log.warn({ signal }, 'the idle CPU class helper stopped: background process back to its nice value for good');
    } catch (err) {
      log.error({ err }, 'the idle CPU class helper stopped and the background process could not leave the idle class');
    }
  });
  helper.unref();
  (helper.stdin as unknown as { unref?: () => void }).unref?.();
  (helper.stdout as unknown as { unref?: () => void }).unref?.();
  process.once('exit', () => {
    exiting = true;
    helper.kill();
  });
  return { current: () => current };
}
