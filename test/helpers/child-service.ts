import { UNLIMITED } from './context.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { createConnection } from 'node:net';
import { freePorts } from '../../bench/lib/tsx-child.js';

export { freePorts };

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

/**
 * A free port outside the kernel's ephemeral range (bench/lib/tsx-child.ts): a port taken from
 * that range can be handed to any outgoing connection (every Redis client of a child the test
 * starts) between the check and the child's bind, which made a child fail with EADDRINUSE.
 */
export function freePort(): Promise<number> {
  return freePorts(1);
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
