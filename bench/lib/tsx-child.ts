import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface TsxChild {
  proc: ChildProcess;
  pid: number;
  /** The last few KB of its stdout and stderr, for error messages. */
  output(): string;
  exited: Promise<number | null>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once it exited. Idempotent. */
  stop(graceMs?: number): Promise<number | null>;
}

export interface TsxChildOptions {
  env?: Record<string, string>;
  /** Extra node flags (e.g. --cpu-prof). */
  nodeArgs?: string[];
  args?: string[];
  /** Called with every complete line the child writes to stdout. */
  onStdoutLine?: (line: string) => void;
  onStderrLine?: (line: string) => void;
  /** false: plain node on a JavaScript file (the compiled service under dist/). @defaultValue true */
  tsx?: boolean;
}

/** Variables of the caller that must not leak into a benchmark child (it gets them explicitly). */
const SCRUBBED = ['CLICKHOUSE_URL', 'CLICKHOUSE_USER', 'CLICKHOUSE_PASSWORD', 'CLICKHOUSE_DATABASE', 'ROLE', 'PORT', 'ALT_PORT', 'DATA_DIR', 'REDIS_PREFIX', 'NODE_OPTIONS'];

/** Runs a TypeScript file of this repository in its own node process (its own CPU thread and heap). */
export function spawnTsxChild(script: string, o: TsxChildOptions = {}): TsxChild {
  const env: Record<string, string | undefined> = { ...process.env };
  for (const name of SCRUBBED) delete env[name];
  const proc = spawn(process.execPath, [...(o.nodeArgs ?? []), ...(o.tsx === false ? [] : ['--import', 'tsx']), script, ...(o.args ?? [])], {
    cwd: REPO_ROOT,
    env: { ...env, ...o.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let tail = '';
  const keep = (d: Buffer) => {
    tail = (tail + d.toString()).slice(-8000);
  };
  lines(proc.stdout!, o.onStdoutLine, keep);
  lines(proc.stderr!, o.onStderrLine, keep);
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code, signal) => resolve(code ?? (signal ? -1 : null))));
  let stopping: Promise<number | null> | undefined;
  return {
    proc,
    pid: proc.pid!,
    output: () => tail,
    exited,
    stop(graceMs = 30_000) {
      stopping ??= (async () => {
        if (proc.exitCode !== null || proc.signalCode !== null) return exited;
        proc.kill('SIGTERM');
        const timer = setTimeout(() => proc.kill('SIGKILL'), graceMs);
        try {
          return await exited;
        } finally {
          clearTimeout(timer);
        }
      })();
      return stopping;
    },
  };
}

function lines(stream: NodeJS.ReadableStream, onLine: ((line: string) => void) | undefined, keep: (d: Buffer) => void): void {
  let partial = '';
  stream.on('data', (d: Buffer) => {
    keep(d);
    if (!onLine) return;
    const parts = (partial + d.toString()).split('\n');
    partial = parts.pop() ?? '';
    for (const line of parts) onLine(line);
  });
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const a = srv.address();
      srv.close(() => (a && typeof a !== 'string' ? resolve(a.port) : reject(new Error('no port'))));
    });
  });
}

/** Polls `url` until it answers 200, the child exits, or `timeoutMs` passes. */
export async function waitForHttp(url: string, child: TsxChild, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  let exited = false;
  void child.exited.then(() => (exited = true));
  while (Date.now() < end) {
    if (exited) throw new Error(`child exited before ${url} answered:\n${child.output()}`);
    try {
      const res = await fetch(url);
      await res.arrayBuffer();
      if (res.status === 200) return;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(`${url} did not answer 200 within ${timeoutMs} ms:\n${child.output()}`);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
