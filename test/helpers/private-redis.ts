import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './child-service.js';

/**
 * A redis-server of a test's own (its port, its directory, the AOF on) that the test can kill
 * without warning and start again on the same files: a restart keeps what the AOF holds and gets
 * a new `run_id`.
 */
export interface PrivateRedis {
  port: number;
  /** REDIS_URL */
  url: string;
  dir: string;
  /** Starts the server (again) on the same port and files; resolves once it answers PING. */
  start(): Promise<void>;
  /** SIGKILL (a crash or a power cut as the process sees it); resolves once it is gone. */
  kill(): Promise<void>;
  /** True once the server answers PING. */
  answers(): boolean;
  /** `run_id` of INFO server. */
  runId(): string;
  /** Kills the server and deletes its files. */
  stop(): Promise<void>;
}

function cli(port: number, ...args: string[]): string {
  const r = spawnSync('redis-cli', ['-p', String(port), ...args], { encoding: 'utf8', timeout: 10_000 });
  return `${r.stdout ?? ''}${r.stderr ?? ''}`;
}

export async function startPrivateRedis(opts: { appendfsync?: 'always' | 'everysec' } = {}): Promise<PrivateRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'tds-private-redis-'));
  let proc: ChildProcess | undefined;
  const running = () => proc !== undefined && proc.exitCode === null && proc.signalCode === null;
  // A test process that ends without its afterAll (a crash, a timeout) must not leave a server behind.
  const killNow = () => {
    if (running()) proc!.kill('SIGKILL');
  };
  process.once('exit', killNow);
  const answers = () => cli(port, 'ping').includes('PONG');
  // why a start failed: the server's own words (a port taken, an append-only file it refused)
  const logTail = () => (existsSync(join(dir, 'redis.log')) ? readFileSync(join(dir, 'redis.log'), 'utf8').slice(-3000) : '(no redis.log)');
  const exitOf = (p: ChildProcess) =>
    p.exitCode !== null ? `exit code ${p.exitCode}` : p.signalCode !== null ? `signal ${p.signalCode}` : 'still running, not answering PING';
  const kill = async () => {
    if (!running()) return;
    const p = proc!;
    const exited = new Promise((resolve) => p.once('exit', resolve));
    p.kill('SIGKILL');
    await exited;
  };
  const spawnServer = () =>
    spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--dir',
        dir,
        '--appendonly',
        'yes',
        '--appendfsync',
        opts.appendfsync ?? 'always',
        '--save',
        '',
        '--logfile',
        'redis.log',
      ],
      { stdio: 'ignore' },
    );
  // A server that exits at start is spawned again (three tries in all), its log shown each time: a
  // restart in CI once exited within the 20 s, and without its log nobody could tell why.
  const start = async () => {
    await kill();
    for (let attempt = 1; ; attempt++) {
      proc = spawnServer();
      const end = Date.now() + 20_000;
      while (!answers() && running() && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
      if (running() && answers()) return;
      const why = `redis-server on ${port} did not start (${exitOf(proc)}, try ${attempt} of 3); redis.log ends:\n${logTail()}`;
      if (running() || attempt === 3) {
        await kill();
        throw new Error(why);
      }
      console.warn(why);
      await new Promise((r) => setTimeout(r, 500));
    }
  };
  const redis: PrivateRedis = {
    port,
    url: `redis://127.0.0.1:${port}`,
    dir,
    start,
    kill,
    answers,
    runId: () => /run_id:(\w+)/.exec(cli(port, 'info', 'server'))?.[1] ?? '',
    stop: async () => {
      process.off('exit', killNow);
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await start();
  return redis;
}
