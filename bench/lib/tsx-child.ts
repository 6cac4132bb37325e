import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
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
const SCRUBBED = [
  'CLICKHOUSE_URL',
  'CLICKHOUSE_USER',
  'CLICKHOUSE_PASSWORD',
  'CLICKHOUSE_DATABASE',
  'ROLE',
  'PORT',
  'ALT_PORT',
  'DATA_DIR',
  'REDIS_PREFIX',
  'NODE_OPTIONS',
];

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

/**
 * Where the bench hands out ports: outside the kernel's ephemeral range (32768–60999 on Linux),
 * from which every outgoing connection (Redis clients, the load generator's own sockets) takes
 * its local port, so a port picked there and bound a moment later by a child may already be
 * taken (EADDRINUSE). Below the range only a deliberate bind takes a port.
 */
export const BENCH_PORTS = { low: 20_000, high: 32_000 };

/** The kernel's ephemeral port range (Linux), or the usual default where it cannot be read. */
export function ephemeralRange(): { low: number; high: number } {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (low > 0 && high >= low) return { low, high };
  } catch {
    // not Linux
  }
  return { low: 32_768, high: 60_999 };
}

/** Ports handed out by this process, never handed out twice (a child may not have bound its port yet). */
const handedOut = new Set<number>();

export function canBind(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen({ port, host, exclusive: true }, () => srv.close(() => resolve(true)));
  });
}

/**
 * `count` consecutive free ports (a block: the supervisor's ops listeners are OPS_PORT + i),
 * chosen at random in `BENCH_PORTS` outside the ephemeral range and checked by binding each.
 * Returns the first.
 */
export async function freePorts(count: number, host = '127.0.0.1'): Promise<number> {
  const eph = ephemeralRange();
  const candidates: number[] = [];
  for (let p = BENCH_PORTS.low; p + count - 1 <= BENCH_PORTS.high; p++) {
    if (p + count - 1 < eph.low || p > eph.high) candidates.push(p);
  }
  if (candidates.length === 0) throw new Error(`no port range ${BENCH_PORTS.low}–${BENCH_PORTS.high} outside the ephemeral range ${eph.low}–${eph.high}`);
  for (let attempt = 0; attempt < 200; attempt++) {
    const first = candidates[Math.floor(Math.random() * candidates.length)];
    const block = Array.from({ length: count }, (_, i) => first + i);
    if (block.some((p) => handedOut.has(p))) continue;
    let free = true;
    for (const p of block) if (!(free = await canBind(p, host))) break;
    if (!free) continue;
    for (const p of block) handedOut.add(p);
    return first;
  }
  throw new Error(`no ${count} consecutive free ports found in ${BENCH_PORTS.low}–${BENCH_PORTS.high}`);
}

/** One free port outside the ephemeral range (see `freePorts`). */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return freePorts(1, host);
}

export interface WaitOptions {
  /** Called about every `everyMs` while waiting, with the time waited so far. */
  onWait?: (waitedMs: number) => void;
  /** @defaultValue 5000 */
  everyMs?: number;
  /** Gives up at once when the child's output matches (e.g. EADDRINUSE: a supervisor would restart it for minutes). */
  failOn?: RegExp;
}

/** Thrown by `waitForHttp` when the child's output matched `failOn`. */
export class ChildFailedError extends Error {}

/** Polls `url` until it answers 200, the child exits, its output matches `failOn`, or `timeoutMs` passes. */
export async function waitForHttp(url: string, child: TsxChild, timeoutMs: number, o: WaitOptions = {}): Promise<void> {
  const started = Date.now();
  const end = started + timeoutMs;
  let reported = started;
  let exited = false;
  void child.exited.then(() => (exited = true));
  while (Date.now() < end) {
    if (exited) throw new Error(`child exited before ${url} answered:\n${child.output()}`);
    if (o.failOn?.test(child.output())) throw new ChildFailedError(`child failed before ${url} answered (${o.failOn.source}):\n${child.output()}`);
    try {
      const res = await fetch(url);
      await res.arrayBuffer();
      if (res.status === 200) return;
    } catch {
      // not listening yet
    }
    if (o.onWait && Date.now() - reported >= (o.everyMs ?? 5000)) {
      reported = Date.now();
      o.onWait(reported - started);
    }
    await sleep(100);
  }
  throw new Error(`${url} did not answer 200 within ${timeoutMs} ms:\n${child.output()}`);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
