import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './child-service.js';
import { canBind, ephemeralRange } from '../../bench/lib/tsx-child.js';

/**
 * A real Redis Cluster of three primaries (no replicas) from the `redis-server` binary, on free
 * local ports, with its files in a temporary directory. `stop()` kills the servers and deletes
 * the directory.
 */
export interface TestRedisCluster {
  ports: number[];
  /** REDIS_CLUSTER_NODES value. */
  nodes: string;
  dir: string;
  /** SIGKILLs the server on `port` (a primary lost without warning). */
  kill(port: number): Promise<void>;
  stop(): Promise<void>;
}

function cli(port: number, ...args: string[]): string {
  const r = spawnSync('redis-cli', ['-p', String(port), ...args], { encoding: 'utf8', timeout: 30_000 });
  return `${r.stdout ?? ''}${r.stderr ?? ''}`;
}

export async function startRedisCluster(primaries = 3): Promise<TestRedisCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'tds-redis-cluster-'));
  const procs: ChildProcess[] = [];
  const ports: number[] = [];
  // A test process that ends without its afterAll (a crash, a timeout) must not leave servers behind.
  const killAll = () => {
    for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  };
  process.once('exit', killAll);
  const stop = async () => {
    process.off('exit', killAll);
    await Promise.all(
      procs.map(
        (p) =>
          new Promise<void>((resolve) => {
            if (p.exitCode !== null || p.signalCode !== null) return resolve();
            p.once('exit', () => resolve());
            p.kill('SIGKILL');
          }),
      ),
    );
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < primaries; i++) {
      // the cluster bus listens on port + 10000: both must be free, and both outside the kernel's
      // ephemeral range, where an outgoing connection may take either before redis-server binds it
      const eph = ephemeralRange();
      let port = await freePort();
      for (let tries = 0; port + 10000 >= eph.low || ports.includes(port) || !(await canBind(port + 10000)); tries++) {
        if (tries > 500) throw new Error(`no port with its cluster bus port (+10000) below the ephemeral range ${eph.low}–${eph.high}`);
        port = await freePort();
      }
      ports.push(port);
      const proc = spawn(
        'redis-server',
        [
          '--port',
          String(port),
          '--bind',
          '127.0.0.1',
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          `nodes-${port}.conf`,
          '--cluster-node-timeout',
          '5000',
          '--save',
          '',
          '--appendonly',
          'no',
          '--dir',
          dir,
          '--logfile',
          `redis-${port}.log`,
        ],
        { stdio: 'ignore' },
      );
      procs.push(proc);
    }
    for (const port of ports) await until(() => cli(port, 'ping').includes('PONG'), 20_000, `redis-server on ${port} did not start`);
    const created = spawnSync('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes'], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    if (created.status !== 0) throw new Error(`redis-cli --cluster create failed: ${created.stdout}${created.stderr}`);
    for (const port of ports) await until(() => cli(port, 'cluster', 'info').includes('cluster_state:ok'), 60_000, `cluster not ok on ${port}`);
    const kill = async (port: number) => {
      const p = procs[ports.indexOf(port)];
      if (!p || p.exitCode !== null || p.signalCode !== null) return;
      const exited = new Promise((resolve) => p.once('exit', resolve));
      p.kill('SIGKILL');
      await exited;
    };
    return { ports, nodes: ports.map((p) => `127.0.0.1:${p}`).join(','), dir, kill, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

async function until(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(what);
}
