import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { freePort, portAnswers } from '../helpers/child-service.js';
import { ADMIN_TOKEN, uniquePrefix, waitUntil, within } from '../helpers/context.js';
import { deletePrefix } from '../helpers/redis-cleanup.js';

/**
 * An exception nothing catches, or a promise rejection nothing handles, in a process entry
 * (service process, supervisor, admin CLI): logged by pino at fatal with the error under `err`,
 * then the same ordered stop as SIGTERM, and a non-zero exit. The fault is raised from outside
 * the service's code by a preloaded test module (test/helpers/fault-injector.ts), in real
 * processes on the real Redis.
 */

const ROOT = new URL('../../', import.meta.url).pathname;
const prefixes: string[] = [];
const running: ChildProcess[] = [];

interface Run {
  proc: ChildProcess;
  port: number;
  lines: () => Record<string, any>[];
  output: () => string;
  exited: Promise<number | null>;
}

async function run(entry: string, fault: 'exception' | 'rejection', env: Record<string, string> = {}, args: string[] = []): Promise<Run> {
  const port = await freePort();
  const prefix = uniquePrefix('crash');
  prefixes.push(prefix);
  const proc = spawn(process.execPath, ['--import', 'tsx', '--import', './test/helpers/fault-injector.ts', entry, ...args], {
    cwd: ROOT,
    env: {
      ...process.env,
      ROLE: 'api',
      PORT: String(port),
      ALT_PORT: String(await freePort()),
      OPS_PORT: '0',
      REDIS_PREFIX: prefix,
      ADMIN_TOKEN,
      LOG_LEVEL: 'info',
      AUTO_START_REDIS: 'false',
      DATA_DIR: mkdtempSync(join(tmpdir(), 'tds-crash-')),
      TDS_TEST_FAULT: fault,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.push(proc);
  // kept apart: a chunk of one stream must not land inside a line of the other
  let stdout = '';
  let stderr = '';
  proc.stdout!.on('data', (d) => (stdout += d));
  proc.stderr!.on('data', (d) => (stderr += d));
  // 'close', not 'exit': every line written before the exit has been read
  const exited = new Promise<number | null>((resolve) => proc.on('close', (code) => resolve(code)));
  // the log's JSON lines (a CLI's answer, pretty-printed JSON on stdout, is not one)
  const lines = () =>
    `${stdout}\n${stderr}`.split('\n').flatMap((l) => {
      try {
        const v = JSON.parse(l) as unknown;
        return v !== null && typeof v === 'object' && 'level' in v ? [v as Record<string, any>] : [];
      } catch {
        return [];
      }
    });
  return { proc, port, lines, output: () => `${stdout.slice(-5000)}\n${stderr.slice(-3000)}`, exited };
}

const indexOf = (lines: Record<string, any>[], msg: RegExp) => lines.findIndex((l) => msg.test(String(l.msg)));

afterEach(() => {
  for (const p of running.splice(0)) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
});

afterAll(async () => {
  const redis = new Redis();
  for (const p of prefixes) await deletePrefix(redis, p);
  redis.disconnect();
});

describe('a service process (api/server.ts)', { timeout: 60_000 }, () => {
  for (const [fault, msg] of [
    ['exception', /^uncaught exception; stopping in order$/],
    ['rejection', /^unhandled promise rejection; stopping in order$/],
  ] as const) {
    it(`an uncaught ${fault}: logged at fatal with err, the ordered stop, exit 1`, async () => {
      const r = await run('api/server.ts', fault);
      await waitUntil(() => indexOf(r.lines(), /^service ready$/) >= 0, 45_000, 100);
      expect(await portAnswers(r.port)).toBe(true);
      r.proc.kill('SIGUSR2');
      expect(await within(r.exited, 30_000, 'exit after the fault'), r.output()).toBe(1);
      const lines = r.lines();
      const fatal = lines[indexOf(lines, msg)];
      expect(fatal, r.output()).toBeDefined();
      expect(fatal.level).toBe(60);
      expect(fatal.err).toMatchObject({ type: 'Error', message: `injected fault (${fault})` });
      expect(fatal.err.stack).toContain('fault-injector');
      // then the SIGTERM path, to its end
      const stopping = indexOf(lines, /^shutting down$/);
      expect(lines[stopping]?.signal).toBe(fault === 'exception' ? 'uncaughtException' : 'unhandledRejection');
      expect(stopping, r.output()).toBeGreaterThan(indexOf(lines, msg));
      expect(lines[indexOf(lines, /^stopped$/)]).toMatchObject({ exitCode: 1 });
      expect(await portAnswers(r.port)).toBe(false);
    });
  }
});

describe('the supervisor (api/supervisor.ts)', { timeout: 90_000 }, () => {
  it('an uncaught exception: logged at fatal, its children stopped in order, exit 1', async () => {
    const r = await run('api/supervisor.ts', 'exception', { API_PROCESSES: '2' });
    await waitUntil(() => r.lines().filter((l) => l.msg === 'service ready').length === 2, 60_000, 100);
    r.proc.kill('SIGUSR2');
    expect(await within(r.exited, 45_000, 'exit after the fault'), r.output()).toBe(1);
    const lines = r.lines();
    const fatal = indexOf(lines, /^uncaught exception; stopping in order$/);
    expect(lines[fatal], r.output()).toMatchObject({ level: 60, role: 'supervisor', err: { message: 'injected fault (exception)' } });
    const stopping = indexOf(lines, /^stopping: API processes/);
    expect(stopping).toBeGreaterThan(fatal);
    expect(lines[stopping].signal).toBe('uncaughtException');
    // both children ran their own ordered stop and stopped cleanly
    expect(lines.filter((l) => l.msg === 'stopped' && l.exitCode === 0)).toHaveLength(2);
    expect(lines[indexOf(lines, /^supervisor stopped$/)]).toMatchObject({ clean: true });
    expect(r.output()).not.toMatch(/restarting it|did not stop cleanly/);
    expect(await portAnswers(r.port)).toBe(false);
  });
});

describe('the admin CLI (api/cli/admin-cli.ts)', { timeout: 60_000 }, () => {
  it('a rejection nothing handles: logged at fatal on stderr, exit 1 even though the command answered', async () => {
    const r = await run('api/cli/admin-cli.ts', 'rejection', { TDS_TEST_FAULT_WHEN: 'output' }, ['list-projects']);
    expect(await within(r.exited, 30_000, 'the CLI exits'), r.output()).toBe(1);
    const fatal = r.lines().find((l) => l.msg === 'unhandled promise rejection; stopping in order');
    expect(fatal, r.output()).toMatchObject({ level: 60, name: 'tds-admin', err: { message: 'injected fault (rejection)' } });
  });
});
