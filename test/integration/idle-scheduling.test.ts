import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import { nextCpuClass } from '../../shared/platform/idle-scheduling.js';

/** Field 41 of /proc/<pid>/task/<tid>/stat: a thread's scheduling policy (0 SCHED_OTHER, 5 SCHED_IDLE). */
function policies(pid: number): number[] {
  return readdirSync(`/proc/${pid}/task`).map((tid) =>
    Number(
      readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8')
        .replace(/^.*\) /s, '')
        .split(' ')[38],
    ),
  );
}

const O = { checkMs: 250, starvedAfterMs: 1000, holdMs: 5000 };

describe('the background process CPU class (WORKERS_SCHED_IDLE)', () => {
  it('leaves the idle class only when its timer ran later than the limit, and comes back after the hold', () => {
    expect(nextCpuClass('idle', 999, 60_000, O)).toBe('idle');
    expect(nextCpuClass('idle', 1001, 0, O)).toBe('normal');
    expect(nextCpuClass('normal', 5000, 4999, O)).toBe('normal');
    expect(nextCpuClass('normal', 0, 5000, O)).toBe('idle');
  });

  let child: ChildProcess | undefined;
  afterEach(() => child?.kill('SIGKILL'));

  it('puts every thread in the idle class, returns to the normal class when starved, then goes back', { timeout: 30_000 }, async () => {
    child = spawn(process.execPath, ['--import', 'tsx', 'test/helpers/idle-scheduling-child.ts'], { stdio: ['pipe', 'pipe', 'inherit'] });
    const lines: string[] = [];
    const waiters: (() => void)[] = [];
    createInterface({ input: child.stdout! }).on('line', (l) => {
      lines.push(l);
      waiters.splice(0).forEach((w) => w());
    });
    const next = async (): Promise<string> => {
      const seen = lines.length;
      const deadline = Date.now() + 10_000;
      while (lines.length === seen) {
        if (Date.now() > deadline) throw new Error(`no line after ${JSON.stringify(lines)}`);
        await new Promise<void>((r) => {
          waiters.push(r);
          setTimeout(r, 200);
        });
      }
      return lines[seen];
    };
    expect(await next()).toBe('ready');
    const pid = child.pid!;
    expect(new Set(policies(pid))).toEqual(new Set([5]));
    // 600 ms without its timer: starved (limit 200 ms)
    child.stdin!.write('600\n');
    expect(await next()).toBe('normal');
    expect(new Set(policies(pid))).toEqual(new Set([0]));
    // after the hold (1.5 s) it tries the idle class again
    expect(await next()).toBe('idle');
    expect(new Set(policies(pid))).toEqual(new Set([5]));
  });
});
