import { UNLIMITED } from './context.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { createConnection } from 'node:net';

export interface ChildService {
  proc: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

/** Runs `api/server.ts` as a separate process (a real process to SIGKILL), with its own env. */
export function spawnService(env: Record<string, string>): ChildService {
  const proc = spawn(process.execPath, ['--import', 'tsx', 'api/server.ts'], {
    cwd: new URL('../../', import.meta.url).pathname,
    // limits lifted and load shedding off, as in the in-process test apps (a test sets them to test them)
    env: { ...process.env, LOG_LEVEL: 'warn', OPS_PORT: '0', ...UNLIMITED, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  return { proc, output: () => out.slice(-4000), exited };
}

export async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const a = srv.address();
      srv.close(() => (a && typeof a !== 'string' ? resolve(a.port) : reject(new Error('no port'))));
    });
  });
}

export function portAnswers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createConnection({ port, host: '127.0.0.1' });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}
