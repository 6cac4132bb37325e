import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { freePort, freePorts } from '../helpers/child-service.js';
import { ADMIN_TOKEN, uniquePrefix, waitUntil, within } from '../helpers/context.js';
import { deletePrefix } from '../helpers/redis-cleanup.js';

/**
 * `npm start` is a supervisor: API processes and one background process (workers + scheduler +
 * the embedded ClickHouse). These tests run the real `npm start` and stop it the two ways
 * supervisors do: SIGTERM to npm alone (`docker stop` with npm as PID 1) and SIGTERM to the whole
 * process group (systemd). Either way npm must exit 0 before its own stop deadline, with no crash
 * (its log says when the deadline passed; the test waits generously, the machine is shared).
 */

const ROOT = new URL('../../', import.meta.url).pathname;

interface Started {
  npm: ChildProcess;
  port: number;
  opsPort: number;
  prefix: string;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<{ status: number; body: any }>;
}

const running: Started[] = [];

async function startNpm(env: Record<string, string> = {}, opts: { waitReady?: boolean } = {}): Promise<Started> {
  const port = await freePort();
  // ops listeners: the background process on opsPort, API process i on opsPort + i
  const opsPort = await freePorts(4);
  const prefix = env.REDIS_PREFIX ?? uniquePrefix('sup');
  const npm = spawn('npm', ['start'], {
    cwd: ROOT,
    detached: true, // its own process group, so a test can signal the group as systemd does
    env: {
      ...process.env,
      PORT: String(port),
      ALT_PORT: String(await freePort()),
      DATA_DIR: mkdtempSync(join(tmpdir(), 'tds-sup-')),
      REDIS_PREFIX: prefix,
      OPS_PORT: String(opsPort),
      ADMIN_TOKEN,
      LOG_LEVEL: 'info',
      AUTO_START_REDIS: 'false',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  npm.stdout!.on('data', (d) => (out += d));
  npm.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => npm.on('exit', (code, signal) => resolve({ code, signal })));
  const post = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };
  const s: Started = { npm, port, opsPort, prefix, output: () => out.slice(-6000), exited, post };
  running.push(s);
  if (opts.waitReady === false) return s;
  await waitUntil(
    async () => {
      try {
        return (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200;
      } catch {
        return false;
      }
    },
    60_000,
    200,
  );
  return s;
}

/** The pids of every process below `pid` (the supervisor, its children, tsx's helpers). */
function descendants(pid: number): number[] {
  const out = spawnSync('ps', ['-e', '-o', 'pid=,ppid=']).stdout.toString();
  const children = new Map<number, number[]>();
  for (const line of out.trim().split('\n')) {
    const [p, pp] = line.trim().split(/\s+/).map(Number);
    children.set(pp, [...(children.get(pp) ?? []), p]);
  }
  const all: number[] = [];
  const walk = (p: number) => {
    for (const c of children.get(p) ?? []) {
      all.push(c);
      walk(c);
    }
  };
  walk(pid);
  return all;
}

/** The ROLE a process was started with ('' when it has none or is gone). */
function roleOf(pid: number): string {
  try {
    return (
      readFileSync(`/proc/${pid}/environ`, 'utf8')
        .split('\0')
        .find((v) => v.startsWith('ROLE='))
        ?.slice(5) ?? ''
    );
  } catch {
    return '';
  }
}

/** Field 19 of /proc/<pid>/task/<tid>/stat: a thread's nice value. */
function threadNice(pid: number, tid: number | string): number {
  return Number(
    readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8')
      .replace(/^.*\) /s, '')
      .split(' ')[16],
  );
}
const niceOf = (pid: number) => threadNice(pid, pid);
/** Field 41: each thread's scheduling policy (0 SCHED_OTHER, 5 SCHED_IDLE). */
const threadPolicies = (pid: number) =>
  readdirSync(`/proc/${pid}/task`).map((tid) =>
    Number(
      readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8')
        .replace(/^.*\) /s, '')
        .split(' ')[38],
    ),
  );
const threadNices = (pid: number) => readdirSync(`/proc/${pid}/task`).map((tid) => threadNice(pid, tid));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const admin = (s: Started, op: string, body: unknown) => s.post(`/admin/v1/${op}`, body, { authorization: `Bearer ${ADMIN_TOKEN}` });

afterEach(async () => {
  for (const s of running.splice(0)) {
    if (s.npm.exitCode === null && s.npm.signalCode === null) {
      try {
        process.kill(-s.npm.pid!, 'SIGKILL');
      } catch {
        // gone already
      }
    }
    const r = new Redis();
    await deletePrefix(r, s.prefix);
    r.disconnect();
  }
});

describe('npm start (the supervisor)', () => {
  it('runs an API process and a background process; the API process answers ClickHouse reads through the workers', async () => {
    const s = await startNpm();
    const kids = descendants(s.npm.pid!);
    expect(kids.length).toBeGreaterThanOrEqual(3); // supervisor, API process, background process
    expect((await admin(s, 'CreateProject', { projectId: 'sup' })).status).toBe(200);
    const letters = await admin(s, 'ListDeadLetters', { projectId: 'sup' });
    expect(letters).toMatchObject({ status: 200, body: { deadLetters: [] } });
    // each process answers on its own ops listener: readiness of its own dependencies, its own metrics
    await waitUntil(async () => (await fetch(`http://127.0.0.1:${s.opsPort}/readyz`).catch(() => undefined))?.status === 200, 30_000, 200);
    const background = await (await fetch(`http://127.0.0.1:${s.opsPort}/readyz`)).json();
    expect(JSON.stringify(background)).toContain('clickhouse');
    // WORKERS_NICE (default 10): every thread of the background process (the engine's own
    // threads inherit it) runs below the API process, whose threads keep the default priority
    const byRole = new Map(kids.map((p) => [roleOf(p), p]));
    const backgroundPid = byRole.get('workers,scheduler')!;
    const api = byRole.get('api')!;
    expect(backgroundPid).toBeDefined();
    expect(api).toBeDefined();
    expect(niceOf(backgroundPid)).toBe(10);
    expect(threadNices(backgroundPid).filter((n) => n >= 0 && n < 10)).toEqual([]);
    expect(niceOf(api)).toBe(0);
    // WORKERS_SCHED_IDLE (default on): the background process's threads are in the idle CPU class
    // (back in it within the hold should a busy machine have starved it), the API process's are not
    await waitUntil(() => threadPolicies(backgroundPid).every((p) => p === 5), 15_000, 200);
    expect(threadPolicies(api).every((p) => p === 0)).toBe(true);
    expect((await fetch(`http://127.0.0.1:${s.opsPort + 1}/readyz`)).status).toBe(200);
    expect(await (await fetch(`http://127.0.0.1:${s.opsPort + 1}/metrics`)).text()).toContain('tds_http_requests_total');
    const agg = await admin(s, 'RunAggregations', { projectId: 'sup' });
    expect(agg).toMatchObject({ status: 200, body: { dataFieldsRecomputed: 0 } });
    expect((await admin(s, 'RunAggregations', { projectId: 'nope' })).status).toBe(404);
    process.kill(s.npm.pid!, 'SIGTERM');
    const { code } = await s.exited;
    expect(code, s.output()).toBe(0);
  });

  it('SIGTERM to npm alone (docker stop): exit 0 before the stop deadline, every process gone, no crash', { timeout: 120_000 }, async () => {
    const s = await startNpm();
    const kids = descendants(s.npm.pid!);
    process.kill(s.npm.pid!, 'SIGTERM');
    const { code, signal } = await within(s.exited, 60_000, 'exit after SIGTERM');
    expect({ code, signal }, s.output()).toEqual({ code: 0, signal: null });
    await waitUntil(() => kids.every((p) => !alive(p)), 10_000);
    expect(s.output()).not.toMatch(/SIGSEGV|did not stop cleanly|deadline passed/);
    expect(s.output()).toMatch(/"clean":true/);
  });

  it('SIGTERM to the whole process group (systemd) under ingestion load: exit 0 before the stop deadline', { timeout: 120_000 }, async () => {
    const s = await startNpm();
    expect((await admin(s, 'CreateProject', { projectId: 'load' })).status).toBe(200);
    const key = (await admin(s, 'CreateApiKey', { projectId: 'load', permissions: ['LOG_EVENTS'] })).body.key as string;
    let stop = false;
    let ok = 0;
    const load = (async () => {
      let i = 0;
      while (!stop) {
        const events = Array.from({ length: 20 }, (_, j) => ({ eventName: 'e', clientEventTimestamp: new Date().toISOString(), insertId: `${i}-${j}` }));
        try {
          const r = await s.post('/v1/LogEvents', { projectId: 'load', userId: `u${i % 50}`, events }, { 'x-api-key': key });
          if (r.status === 200) ok++;
        } catch {
          // the listener closed: the stop has begun
        }
        i++;
      }
    })();
    await waitUntil(() => ok >= 50, 30_000);
    process.kill(-s.npm.pid!, 'SIGTERM');
    const { code } = await within(s.exited, 60_000, 'exit after SIGTERM to the group');
    stop = true;
    await load;
    expect(code, s.output()).toBe(0);
    expect(s.output()).not.toMatch(/SIGSEGV|did not stop cleanly|deadline passed/);
  });

  it('a child that hangs at exit after its ordered stop is killed, and the stop is still clean', { timeout: 120_000 }, async () => {
    const preload = `--import ${join(ROOT, 'test/helpers/hang-at-exit.mjs')}`;
    const s = await startNpm({ NODE_OPTIONS: [process.env.NODE_OPTIONS, preload].filter(Boolean).join(' ') });
    const kids = descendants(s.npm.pid!);
    process.kill(s.npm.pid!, 'SIGTERM');
    const { code, signal } = await within(s.exited, 60_000, 'exit after SIGTERM');
    expect({ code, signal }, s.output()).toEqual({ code: 0, signal: null });
    expect(s.output()).toMatch(/"child":"background".*completed its ordered stop but did not exit; killing it/);
    expect(s.output()).not.toMatch(/did not stop cleanly|deadline passed/);
    expect(s.output()).toMatch(/"clean":true/);
    await waitUntil(() => kids.every((p) => !alive(p)), 10_000);
  });

  it('a stop asked for while the children are still starting is clean too', async () => {
    const s = await startNpm({}, { waitReady: false });
    await waitUntil(() => /supervisor started/.test(s.output()), 60_000);
    process.kill(s.npm.pid!, 'SIGTERM');
    const { code } = await s.exited;
    expect(code, s.output()).toBe(0);
    expect(s.output()).not.toMatch(/did not stop cleanly|deadline passed/);
  });

  it('honours ROLE: ROLE=api beside ROLE=workers runs one engine, no restarts, reads through the workers process', { timeout: 120_000 }, async () => {
    const shared = { DATA_DIR: mkdtempSync(join(tmpdir(), 'tds-sup-roles-')), REDIS_PREFIX: uniquePrefix('sup-roles') };
    const workers = await startNpm({ ...shared, ROLE: 'workers' }, { waitReady: false });
    await waitUntil(async () => (await fetch(`http://127.0.0.1:${workers.opsPort}/readyz`).catch(() => undefined))?.status === 200, 60_000, 200);
    const api = await startNpm({ ...shared, ROLE: 'api' });
    const servers = (s: Started) =>
      descendants(s.npm.pid!).filter((p) =>
        spawnSync('ps', ['-o', 'args=', '-p', String(p)])
          .stdout.toString()
          .includes('api/server.ts'),
      );
    expect(servers(api).map(roleOf)).toEqual(['api']);
    expect(servers(workers).map(roleOf)).toEqual(['workers']);
    expect(api.output()).toMatch(/"children":\["api-1"\]/);
    expect(workers.output()).toMatch(/"children":\["background"\]/);
    // the API process's ClickHouse reads are answered by the other supervisor's background process
    expect((await admin(api, 'CreateProject', { projectId: 'roles' })).status).toBe(200);
    expect(await admin(api, 'ListDeadLetters', { projectId: 'roles' })).toMatchObject({ status: 200, body: { deadLetters: [] } });
    await new Promise((r) => setTimeout(r, 2000));
    for (const s of [api, workers]) expect(s.output()).not.toMatch(/died unexpectedly|restarting it/);
    process.kill(api.npm.pid!, 'SIGTERM');
    expect((await within(api.exited, 60_000, 'api exits')).code, api.output()).toBe(0);
    process.kill(workers.npm.pid!, 'SIGTERM');
    expect((await within(workers.exited, 60_000, 'workers exit')).code, workers.output()).toBe(0);
  });

  it('restarts a child that died unexpectedly', async () => {
    const s = await startNpm();
    const supervisor = descendants(s.npm.pid!).find((p) =>
      spawnSync('ps', ['-o', 'args=', '-p', String(p)])
        .stdout.toString()
        .includes('api/supervisor.ts'),
    )!;
    expect(supervisor).toBeDefined();
    const before = new Set(descendants(supervisor));
    const victim = [...before].find((p) =>
      spawnSync('ps', ['-o', 'args=', '-p', String(p)])
        .stdout.toString()
        .includes('api/server.ts'),
    )!;
    process.kill(victim, 'SIGKILL');
    await waitUntil(() => /restarting it/.test(s.output()), 20_000);
    // a new child takes its place, and the service answers again (reads that need the background included)
    expect((await admin(s, 'CreateProject', { projectId: 'again' })).status).toBe(200);
    await waitUntil(async () => (await admin(s, 'ListDeadLetters', { projectId: 'again' })).status === 200, 60_000, 500);
    process.kill(s.npm.pid!, 'SIGTERM');
    expect((await s.exited).code, s.output()).toBe(0);
  });
});
