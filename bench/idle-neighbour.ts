/**
 * What a neighbour in Linux's idle CPU class costs the service (`npx tsx bench/idle-neighbour.ts
 * none|cpu|mem [request-cost arguments]`, after `npm run build` with BENCH_SERVICE=dist): runs
 * `bench/request-cost.ts` with its arguments while a process of the idle class (SCHED_IDLE, as
 * the background process runs while it keeps up) spins on the CPU (`cpu`) or streams through 64 MB
 * of memory (`mem`), or beside nothing (`none`). An idle-class thread gets a core only when nothing
 * else wants it, so on a machine whose cores were independent it would cost the service nothing:
 * what it costs is what any background work costs GetTreatments by sharing the machine's core
 * resources (caches, memory bandwidth, the hypervisor's scheduling of the two virtual cores).
 * Alternate the modes, each started on a quiet machine (the neighbour itself keeps the load at 1).
 */
import { spawn } from 'node:child_process';

const [mode = 'none', ...rest] = process.argv.slice(2);
if (!['none', 'cpu', 'mem'].includes(mode)) throw new Error('usage: idle-neighbour.ts none|cpu|mem [request-cost arguments]');

/** The neighbour's loop: a bare spin, or a walk over a 64 MB array (one cache line at a time), for ever. */
const LOOPS: Record<string, string> = {
  cpu: 'for (;;) {}',
  mem: 'const a = new Float64Array(8 << 20); for (;;) for (let i = 0; i < a.length; i += 8) a[i]++;',
};

async function main(): Promise<void> {
  const neighbour = mode === 'none' ? undefined : spawn('chrt', ['--idle', '0', process.execPath, '-e', LOOPS[mode]], { stdio: 'ignore' });
  neighbour?.on('error', (err) => {
    console.error(`the neighbour could not start (chrt, util-linux): ${err.message}`);
    process.exit(1);
  });
  const stop = () => neighbour?.kill('SIGKILL');
  // a neighbour left behind would slow every later benchmark of the machine: it dies with this tool
  process.on('exit', stop);
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.on(signal, () => {
      stop();
      process.exit(signal === 'SIGINT' ? 130 : 143);
    });
  const tool = new URL('./request-cost.ts', import.meta.url).pathname;
  const child = spawn(process.execPath, ['--import', 'tsx', tool, ...rest], { stdio: 'inherit', env: process.env });
  const code = await new Promise<number>((resolve) => child.on('exit', (c) => resolve(c ?? 1)));
  stop();
  console.log(`neighbour: ${mode === 'none' ? 'none' : `${mode}, in the idle CPU class`}`);
  process.exitCode = code;
}
void main();
