import cluster, { type Worker } from 'node:cluster';
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { loadConfigOrExit, ROLES, type Config } from '../shared/platform/config.js';
import { createLogger, type Logger } from '../shared/platform/logger.js';
import { installCrashHandlers } from '../shared/platform/crash-handlers.js';
import { ensureLocalRedis } from '../shared/platform/redis/local-redis.js';

/**
 * `npm start`: a small supervisor. It starts `API_PROCESSES` API processes (they share the
 * listeners through node:cluster) and one background process running the workers and the
 * scheduler, which alone opens the embedded ClickHouse (`ROLE` narrows this: see `childSpecs`). SIGTERM or SIGINT stops them in order
 * (API processes first: they stop accepting and finish their requests; then the background
 * process: it finishes its batches and closes ClickHouse; then a Redis this supervisor started)
 * and exits 0 when every child stopped cleanly. A child that dies unexpectedly is restarted
 * with a growing delay.
 */

const STOP_DEADLINE_MS = 28_000;
const RESTART_BASE_MS = 500;
const RESTART_MAX_MS = 30_000;
/** A child that ran this long before dying starts again from the shortest delay. */
const HEALTHY_AFTER_MS = 60_000;
/** How long a stop waits for a child still starting before it signals it all the same. */
const READY_WAIT_MS = 3000;
/**
 * How long a child that said its ordered stop completed may take to exit. The embedded ClickHouse
 * library's teardown at exit occasionally crashes (handled in stopSlot) and, rarely, hangs: a
 * background process that had closed everything then kept the supervisor waiting for its stop
 * deadline, and the stop counted as failed (exit 1), though nothing was in flight. Past this
 * grace such a child is killed, and its stop is as clean as one that crashed in its teardown.
 */
const EXIT_AFTER_STOP_MS = 5000;

export interface ChildSpec {
  name: string;
  env: Record<string, string>;
  /** V8 heap flags of the child (see `heapFlags`). */
  execArgv: string[];
}

/**
 * V8 heap flags per kind of child, within the memory budgets (API process 150 MB, background
 * process 600 MB with the embedded ClickHouse). By default V8 lets the old space grow up to four
 * times what is live before a full collection when a process allocates fast, which under load is
 * two to three times the live heap in RSS. `--heap-growing-percent` holds that factor, and a
 * smaller young generation in the API process (whose requests live a few milliseconds) keeps
 * its scavenges short. An API process also keeps one V8 helper thread instead of four
 * (`--v8-pool-size=1`): on a machine shared with Redis and the background process, four helpers
 * that run its garbage collection in parallel take cores from its own main thread and stall it
 * (open loop at half the capacity: 40 % fewer answers over 8 ms in three alternating pairs of
 * runs, closed-loop throughput unchanged). A flag the operator set on the supervisor's command
 * line (or in NODE_OPTIONS, where node accepts `--max-semi-space-size` but not
 * `--heap-growing-percent`) is left to them.
 */
export const HEAP_FLAGS: Record<'api' | 'background', readonly string[]> = {
  api: ['--max-semi-space-size=8', '--heap-growing-percent=50', '--v8-pool-size=1'],
  background: ['--heap-growing-percent=50'],
};

export function heapFlags(kind: 'api' | 'background', nodeOptions = process.env.NODE_OPTIONS ?? '', execArgv: readonly string[] = process.execArgv): string[] {
  const given = `${nodeOptions} ${execArgv.join(' ')}`;
  return HEAP_FLAGS[kind].filter((flag) => !given.includes(flag.slice(0, flag.indexOf('='))));
}

/**
 * The children of a configuration, honouring `ROLE`: API processes when it includes `api`, the
 * background process (with the other roles of `ROLE`) when it includes `workers` or `scheduler`;
 * `all` (or no `ROLE`) runs both. Background first (it migrates ClickHouse). The ops ports do not
 * depend on `ROLE`: the background process always has `OPS_PORT`, API process i `OPS_PORT + i`.
 */
export function childSpecs(config: Readonly<Config>): ChildSpec[] {
  // Each process has an ops listener of its own (metrics are per process); 0: each picks a free port.
  const opsPort = (i: number) => String(config.opsPort === 0 ? 0 : config.opsPort + i);
  const specs: ChildSpec[] = [];
  const background = ROLES.filter((r) => r !== 'api' && config.roles.has(r));
  if (background.length > 0)
    specs.push({ name: 'background', env: { ROLE: background.join(','), AUTO_START_REDIS: 'false', OPS_PORT: opsPort(0) }, execArgv: heapFlags('background') });
  if (config.roles.has('api')) {
    for (let i = 0; i < config.apiProcesses; i++)
      specs.push({ name: `api-${i + 1}`, env: { ROLE: 'api', AUTO_START_REDIS: 'false', OPS_PORT: opsPort(i + 1) }, execArgv: heapFlags('api') });
  }
  return specs;
}

interface Slot {
  spec: ChildSpec;
  worker?: Worker;
  startedAt: number;
  failures: number;
  exited?: Promise<number | null>;
  /** The signal that ended the child, if one did. */
  signal?: string | null;
  /** Resolves once the child has started (its handlers for an ordered stop are in place). */
  ready?: Promise<void>;
  started?: boolean;
  /** The child said its ordered stop completed (everything closed) just before exiting. */
  stoppedInOrder?: boolean;
}

function serverEntry(): string {
  const self = fileURLToPath(import.meta.url);
  return self.replace(/supervisor\.(ts|js)$/, (_m, ext: string) => `server.${ext}`);
}

export interface Supervisor {
  /** The ordered stop of SIGTERM; exits `exitCode` when every child stopped cleanly, else 1. Idempotent. */
  stop(reason: string, exitCode?: number): Promise<void>;
}

export async function runSupervisor(config: Readonly<Config>, log: Logger): Promise<Supervisor> {
  const redisChild: ChildProcess | undefined =
    config.autoStartRedis && !config.redisClusterNodes ? await ensureLocalRedis(config.redisUrl, config.dataDir, log, { detached: true }) : undefined;
  const slots: Slot[] = childSpecs(config).map((spec) => ({ spec, startedAt: 0, failures: 0 }));
  let stopping = false;

  // One API process accepts its connections itself, on the listening socket the supervisor shares
  // with it. node's default on Linux (round-robin) has the supervisor accept every connection and
  // pass it to a child over IPC, one message per connection: under a burst of new connections to
  // a busy API process, the first requests waited seconds for their connection to arrive (4.6 s
  // for 1,200 at twice the capacity), none of it visible to the process. With several API
  // processes round-robin stays: it is what spreads the connections evenly (accepting themselves,
  // two processes served 11,794 req/s where round-robin gave them 14,671).
  cluster.schedulingPolicy = config.apiProcesses === 1 ? cluster.SCHED_NONE : cluster.SCHED_RR;
  const start = (slot: Slot) => {
    slot.startedAt = Date.now();
    // the settings apply to the forks that follow: each child gets its kind's flags
    cluster.setupPrimary({ exec: serverEntry(), execArgv: [...process.execArgv, ...slot.spec.execArgv], silent: false });
    const worker = cluster.fork(slot.spec.env);
    slot.worker = worker;
    slot.exited = new Promise((resolve) =>
      worker.once('exit', (code, signal) => {
        slot.signal = signal;
        resolve(signal ? null : code);
      }),
    );
    slot.ready = new Promise((resolve) => {
      worker.on('message', (m: { type?: string }) => {
        if (m?.type === 'tds-stopped') {
          slot.stoppedInOrder = true;
          setTimeout(() => {
            if (worker.isDead()) return;
            log.warn({ child: slot.spec.name, graceMs: EXIT_AFTER_STOP_MS }, 'a child had completed its ordered stop but did not exit; killing it');
            worker.process.kill('SIGKILL');
          }, EXIT_AFTER_STOP_MS).unref();
        }
        if (m?.type !== 'tds-ready') return;
        slot.started = true;
        resolve();
      });
      worker.once('exit', () => resolve());
    });
    worker.once('exit', (code, signal) => {
      if (stopping) return;
      if (Date.now() - slot.startedAt > HEALTHY_AFTER_MS) slot.failures = 0;
      const delay = Math.min(RESTART_MAX_MS, RESTART_BASE_MS * 2 ** slot.failures);
      slot.failures++;
      log.error({ child: slot.spec.name, code, signal, restartInMs: delay }, 'a child process died unexpectedly; restarting it');
      setTimeout(() => {
        if (!stopping) start(slot);
      }, delay).unref();
    });
  };
  // The stop is asked for from now on: a signal arriving once the children start (or once the line
  // below is read) must not find the default action, which ends this process at once and orphans them.
  // `on`, not `once`: a process group signal and npm's forwarded signal may both arrive.
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  // The background process first: it applies the ClickHouse migrations the others rely on.
  for (const slot of slots) start(slot);
  log.info({ roles: [...config.roles], children: slots.map((s) => s.spec.name), pid: process.pid }, 'supervisor started');

  const stopSlot = async (slot: Slot): Promise<boolean> => {
    const w = slot.worker;
    if (!w || w.isDead()) {
      const code = await slot.exited;
      return code === 0 || (code === null && !slot.started);
    }
    // A child still starting is given a moment to install its handlers (it then waits for its own
    // start within its stop budget); one that cannot finish starting (Redis down) is signalled anyway.
    await Promise.race([slot.ready, new Promise((resolve) => setTimeout(resolve, READY_WAIT_MS).unref())]);
    if (!w.isDead()) w.process.kill('SIGTERM');
    const code = await slot.exited;
    // A process group's signal can reach a child before it ran any code of ours: it had nothing
    // in flight, so that is a clean stop too.
    if (code === null && !slot.started) return true;
    // The embedded ClickHouse library occasionally crashes in its own teardown at process exit
    // (a segfault in a background thread), after the child closed everything in order.
    if (code === null && slot.stoppedInOrder) {
      log.warn({ child: slot.spec.name, signal: slot.signal }, 'a child ended with a signal after its ordered stop had completed; nothing was in flight');
      return true;
    }
    if (code !== 0) log.error({ child: slot.spec.name, code, signal: slot.signal }, 'a child did not stop cleanly');
    return code === 0;
  };

  let exitCode = 0;
  const stop = async (signal: string, code = 0) => {
    exitCode = Math.max(exitCode, code);
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'stopping: API processes, then the background process, then Redis');
    const deadline = setTimeout(() => {
      log.error('stop deadline passed; killing what is left');
      for (const s of slots) s.worker?.process.kill('SIGKILL');
      redisChild?.kill('SIGKILL');
      process.exit(1);
    }, STOP_DEADLINE_MS);
    deadline.unref();
    const apis = slots.filter((s) => s.spec.name !== 'background');
    const background = slots.filter((s) => s.spec.name === 'background');
    const apiOk = (await Promise.all(apis.map(stopSlot))).every(Boolean);
    const bgOk = (await Promise.all(background.map(stopSlot))).every(Boolean);
    if (redisChild && redisChild.exitCode === null) {
      const gone = new Promise((resolve) => redisChild.once('exit', resolve));
      redisChild.kill('SIGTERM');
      await gone;
      log.info('stopped the local redis-server');
    }
    clearTimeout(deadline);
    log.info({ clean: apiOk && bgOk }, 'supervisor stopped');
    process.exit(apiOk && bgOk ? exitCode : 1);
  };
  return { stop };
}

async function main(): Promise<void> {
  const config = loadConfigOrExit();
  const log = createLogger(config.logLevel).child({ role: 'supervisor' });
  // A fault nothing caught: logged, then the children's ordered stop, and exit 1 (at once when
  // it happens before any child was started).
  let supervisor: Supervisor | undefined;
  installCrashHandlers(log, (reason) => (supervisor ? void supervisor.stop(reason, 1) : process.exit(1)));
  try {
    supervisor = await runSupervisor(config, log);
  } catch (err) {
    log.fatal({ err }, 'supervisor start-up failed');
    process.exit(1);
  }
}

if (cluster.isPrimary && process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  void main();
}
