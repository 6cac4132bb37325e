import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { redisKeys, type RedisKeys } from '../../shared/platform/redis/redis-keys.js';
import { benchPrefix, connectRedis, deletePrefix } from './bench-redis.js';
import { formatCpuSummary, summarizeCpuProfile } from './cpu-profile.js';
import { checkLoad, refusals, runLoad, type LoadCpu, type LoadOptions, type LoadResult } from './load-runner.js';
import { CpuSpan, ownCpuSeconds, type GroupPeaks } from './process-sampler.js';
import type { Figure, ScenarioContext, ScenarioResult } from './scenario.js';
import { ServiceProcess } from './service-process.js';

/** CPU seconds Redis has used (its INFO; the server may be shared, so this is an upper bound). */
export async function redisCpuSeconds(redis: Redis): Promise<number> {
  const info = await redis.info('cpu');
  const get = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
  return get('used_cpu_sys') + get('used_cpu_user');
}

/**
 * Where a second service alive beside the run's own keeps its state: its own Redis prefix (two
 * services on one prefix would consume each other's queues) and data directory (only one
 * ClickHouse engine may own one).
 */
export interface ServicePlace {
  prefix: string;
  keys: RedisKeys;
  dataDir: string;
}

/** The longest a scenario stays silent: the watchdog writes a line when nothing was written for this long. */
export const WATCHDOG_MS = 8000;

/**
 * What every scenario needs around its measurements: its own data directory and Redis prefix
 * (removed at the end), the service child, progress lines, notes, and the result.
 */
export class ScenarioRun {
  readonly notes: string[] = [];
  readonly params: Record<string, number | string> = {};
  readonly keys: RedisKeys;
  private readonly started = performance.now();
  private readonly startedAt = new Date().toISOString();
  private readonly loadAtStart = loadavg()[0];
  private readonly services = new Set<ServiceProcess>();
  private readonly dirs: string[] = [];
  /** The prefixes of `place()`: removed by `close()` with the run's own. */
  private readonly otherPrefixes: string[] = [];
  /** The last progress line the scenario wrote itself, and when: the watchdog repeats it. */
  private lastMessage = 'starting';
  private lastMessageAt = performance.now();
  private lastLineAt = performance.now();
  private readonly watchdog: NodeJS.Timeout;

  private constructor(
    readonly ctx: ScenarioContext,
    readonly name: string,
    readonly prefix: string,
    readonly dataDir: string,
    readonly redis: Redis,
  ) {
    this.keys = redisKeys(prefix);
    // At least one line every WATCHDOG_MS whatever the scenario is waiting for (a service start or
    // drain, a ClickHouse task, a slow probe): a silent bench cannot be told from a hung one.
    this.watchdog = setInterval(() => {
      if (performance.now() - this.lastLineAt < WATCHDOG_MS) return;
      this.lastLineAt = performance.now();
      this.ctx.progress(`[${this.name}] … still: ${this.lastMessage} (${((performance.now() - this.lastMessageAt) / 1000).toFixed(0)} s)`);
    }, 1000);
    this.watchdog.unref();
  }

  static open(ctx: ScenarioContext, name: string): ScenarioRun {
    const dataDir = mkdtempSync(join(ctx.workDir, `${name}-`));
    const run = new ScenarioRun(ctx, name, benchPrefix(name), dataDir, connectRedis(ctx.redisUrl));
    run.dirs.push(dataDir);
    return run;
  }

  /**
   * A run for a tool outside `npm run bench` (request-cost, overload-watch, overload-ab): full
   * sizes, progress lines with the time on stderr, and a work directory of its own, removed by
   * `close()` with the rest.
   */
  static openTool(name: string, opts: { cpuProfDir?: string } = {}): ScenarioRun {
    const workDir = mkdtempSync(join(tmpdir(), `tds-${name}-`));
    const progress = (l: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${l}\n`);
    const run = ScenarioRun.open(
      { size: 'full', redisUrl: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', progress, workDir, previous: new Map(), ...opts },
      name,
    );
    run.dirs.push(workDir);
    return run;
  }

  progress(message: string): void {
    this.lastMessage = message;
    this.lastMessageAt = this.lastLineAt = performance.now();
    this.ctx.progress(`[${this.name}] ${message}`);
  }

  /** Another directory removed at the end (e.g. for a baseline's own ClickHouse). */
  tempDir(label: string): string {
    const dir = mkdtempSync(join(this.ctx.workDir, `${this.name}-${label}-`));
    this.dirs.push(dir);
    return dir;
  }

  /**
   * A place for a second service alive at the same time as the run's own (`startService({ place })`):
   * a prefix and a data directory of its own, removed by `close()` with the rest.
   */
  place(label: string): ServicePlace {
    const prefix = `${this.prefix}-${label}`;
    this.otherPrefixes.push(prefix);
    return { prefix, keys: redisKeys(prefix), dataDir: this.tempDir(label) };
  }

  /**
   * Starts the service (the supervisor, `apiProcesses` API processes and the background process);
   * `env` adds to its environment (e.g. DECISION_LOG=off); `label` names the run in the progress
   * lines and its CPU profile directory; `place` (from `place()`) runs it beside another.
   */
  async startService(opts: { apiProcesses?: number; env?: Record<string, string>; label?: string; place?: ServicePlace } = {}): Promise<ServiceProcess> {
    const n = opts.apiProcesses ?? 1;
    const label = opts.label ?? `api${n}`;
    const extra = opts.env
      ? ` (${Object.entries(opts.env)
          .map(([k, v]) => `${k}=${v}`)
          .join(', ')})`
      : '';
    this.progress(`starting the service: the supervisor with ${n} API process${n === 1 ? '' : 'es'} and the background process${extra}`);
    const cpuProfDir = this.ctx.cpuProfDir ? join(this.ctx.cpuProfDir, `${this.name}-${label}`) : undefined;
    const svc = await ServiceProcess.start({
      redisUrl: this.ctx.redisUrl,
      prefix: opts.place?.prefix ?? this.prefix,
      dataDir: opts.place?.dataDir ?? this.dataDir,
      cpuProfDir,
      apiProcesses: n,
      env: opts.env,
      progress: (m) => this.progress(m),
    });
    this.services.add(svc);
    const r = svc.readyRss;
    this.progress(
      `service ready (supervisor pid ${svc.pid}; RSS ${r.totalMb.toFixed(0)} MB in total, API process ${r.apiMb.toFixed(0)} MB, background ${r.backgroundMb.toFixed(0)} MB)`,
    );
    return svc;
  }

  /**
   * Stops the service; notes the peak RSS of every process; CPU profiles, when there are, are
   * summarised into the notes.
   */
  async stopService(svc: ServiceProcess, label = 'service'): Promise<GroupPeaks> {
    this.progress(`stopping the service (${label}; its background process drains its workers first)`);
    const { peaks, cpuProfiles } = await svc.stop();
    this.services.delete(svc);
    const each = peaks.processes.map((p) => `${p.kind} ${p.peakMb.toFixed(0)} MB`).join(', ');
    this.notes.push(`${label}: peak RSS per process: ${each}; all together ${peaks.totalMb.toFixed(0)} MB (ready: ${svc.readyRss.totalMb.toFixed(0)} MB)`);
    for (const p of cpuProfiles) {
      this.notes.push(`CPU profile of the ${p.kind} process: ${p.path}`);
      this.notes.push(...formatCpuSummary(summarizeCpuProfile(p.path)));
    }
    return peaks;
  }

  /**
   * Measures the CPU cores used by the service child, this process and Redis over `fn`, and, when
   * `apiCpu` reads the CPU seconds of the service's API processes, theirs (`apiCores`, else NaN).
   */
  async withCpu<T>(svcCpu: () => number, fn: () => Promise<T>, apiCpu?: () => number): Promise<{ value: T } & LoadCpu> {
    const svc = new CpuSpan(svcCpu);
    const api = apiCpu ? new CpuSpan(apiCpu) : undefined;
    const own = new CpuSpan(ownCpuSeconds);
    const redisBefore = await redisCpuSeconds(this.redis);
    const t0 = performance.now();
    const value = await fn();
    const redisCores = ((await redisCpuSeconds(this.redis)) - redisBefore) / ((performance.now() - t0) / 1000);
    return { value, serviceCores: svc.cores(), apiCores: api?.cores() ?? NaN, loadGeneratorCores: own.cores(), redisCores };
  }

  /**
   * A warm-up run (JIT, caches, connection pools), then the measured run, with the CPU the server
   * process and this process used during the measured run; noted, and checked for errors (a 503,
   * the service shedding load, is an answer, not an error, unless `refusalsAllowed` is false).
   */
  async measureLoad(
    label: string,
    serverCpu: () => number,
    o: LoadOptions,
    warmupSec: number,
    opts: { serverLabel?: string; refusalsAllowed?: boolean; apiCpu?: () => number } = {},
  ): Promise<LoadResult & { cpu: LoadCpu }> {
    if (warmupSec > 0) {
      this.progress(`${label}: ${warmupSec} s warm-up`);
      await runLoad({ ...o, amount: undefined, durationSec: warmupSec, onTick: undefined });
    }
    this.progress(`${label}: measuring${o.durationSec ? ` for ${o.durationSec} s` : ''}, ${o.connections} connections`);
    const onTick = (sec: number, n: number) => {
      if (Math.round(sec) % 5 === 0) this.progress(`${label}: ${sec.toFixed(0)} s, ${n.toLocaleString('en')} responses`);
    };
    const { value, ...cpu } = await this.withCpu(serverCpu, () => runLoad({ onTick, ...o }), opts.apiCpu);
    checkLoad(label, value, 0.01, { refusalsAllowed: opts.refusalsAllowed ?? true });
    this.loadNote(label, value, cpu, opts.serverLabel);
    return { ...value, cpu };
  }

  loadNote(label: string, r: LoadResult, cpu?: LoadCpu, serverLabel = 'service'): void {
    const errors =
      r.non2xx + r.errors > 0 ? `, ${r.non2xx} non-2xx ${JSON.stringify(r.statusCodes)} (${refusals(r)} refused with 503), ${r.errors} errors` : '';
    const api = cpu && Number.isFinite(cpu.apiCores) ? ` (its API process ${cpu.apiCores.toFixed(2)})` : '';
    const cores = cpu
      ? `; CPU: ${serverLabel} ${cpu.serviceCores.toFixed(2)} cores${api}, load generator ${cpu.loadGeneratorCores.toFixed(2)} cores, Redis ${cpu.redisCores.toFixed(2)} cores`
      : '';
    this.notes.push(
      `${label}: ${r.ok.toLocaleString('en')} ok in ${r.seconds.toFixed(1)} s (p50 ${r.p50.toFixed(2)} ms, p90 ${r.p90.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms, max ${r.max.toFixed(1)} ms)${errors}${cores}`,
    );
  }

  result(figures: Record<string, Figure>): ScenarioResult {
    // other work on the machine shifts service and baseline alike only if it is steady
    this.notes.push(`machine load average (1 min): ${this.loadAtStart.toFixed(2)} at the start, ${loadavg()[0].toFixed(2)} at the end`);
    return {
      scenario: this.name,
      size: this.ctx.size,
      startedAt: this.startedAt,
      seconds: (performance.now() - this.started) / 1000,
      figures,
      params: this.params,
      notes: this.notes,
    };
  }

  /** Stops whatever is still running and removes the scenario's data and Redis keys. */
  async close(): Promise<void> {
    if (this.services.size > 0) this.progress('stopping what still runs');
    for (const svc of this.services) await svc.stop().catch(() => undefined);
    this.services.clear();
    try {
      this.progress("removing the scenario's Redis keys and data");
      for (const prefix of [this.prefix, ...this.otherPrefixes]) await deletePrefix(this.redis, prefix);
    } finally {
      clearInterval(this.watchdog);
      this.redis.disconnect();
      for (const dir of this.dirs) rmSync(dir, { recursive: true, force: true });
    }
  }
}
