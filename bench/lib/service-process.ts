import { randomBytes } from 'node:crypto';
import { createWriteStream, existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ProcessGroupSampler, type GroupPeaks, type ProcessKind } from './process-sampler.js';
import { ChildFailedError, freePort, freePorts, REPO_ROOT, spawnTsxChild, waitForHttp, type TsxChild, type WaitOptions } from './tsx-child.js';

export interface ServiceProcessOptions {
  redisUrl: string;
  prefix: string;
  dataDir: string;
  /** Directory for this child's `--cpu-prof` output; unset: no profile. */
  cpuProfDir?: string;
  env?: Record<string, string>;
  readyTimeoutMs?: number;
  /** `API_PROCESSES` of the supervisor. @defaultValue 1 */
  apiProcesses?: number;
  /** Progress lines while it starts (and restarts on other ports). */
  progress?: (message: string) => void;
}

/**
 * Limits the bench sets in the service's environment: a rate limit is a policy of a deployment,
 * not part of what is measured, so no scenario may ever be refused by one (429). Load shedding
 * (503) stays at its defaults: it is part of what is measured.
 */
export const BENCH_LIMITS_ENV: Record<string, string> = { RATE_LIMIT_PER_KEY: '10000000', RATE_LIMIT_UNAUTHENTICATED: '1000000' };

/** RSS in MB of the group once ready: the whole group, the largest API process, the background process. */
export interface GroupRss {
  totalMb: number;
  apiMb: number;
  backgroundMb: number;
}

export interface ServiceStop {
  peaks: GroupPeaks;
  /** CPU profiles written by the service's processes (`--cpu-prof`), by kind. */
  cpuProfiles: { kind: ProcessKind; path: string }[];
}

export interface ProjectKeys {
  projectId: string;
  management: string;
  delivery: string;
  logEvents: string;
}

/**
 * The service as production runs it: the supervisor (`api/supervisor.ts`, as `npm start`) with
 * `API_PROCESSES` API processes and one background process (workers, scheduler, the embedded
 * ClickHouse), as children of this process's child. Every process of the group is sampled on its
 * own (`ProcessGroupSampler`), and the load generator in this process shares none of their CPU
 * threads.
 */
export class ServiceProcess {
  readonly sampler: ProcessGroupSampler;
  /** RSS once every process answered /readyz, before any load. */
  readonly readyRss: GroupRss;

  private constructor(
    readonly child: TsxChild,
    readonly baseUrl: string,
    private readonly adminToken: string,
    readonly opts: ServiceProcessOptions,
  ) {
    this.sampler = new ProcessGroupSampler(child.pid).start();
    this.readyRss = { totalMb: this.sampler.rssMb(), apiMb: this.sampler.kindRssMb('api'), backgroundMb: this.sampler.kindRssMb('background') };
  }

  /** RSS of the whole group when ready (MB). */
  get readyRssMb(): number {
    return this.readyRss.totalMb;
  }

  /**
   * Starts the supervisor and waits until every process is ready. Its ports are taken outside
   * the ephemeral range (`freePorts`); should one be taken anyway (EADDRINUSE in the child's
   * output), the child is stopped and started again on other ports, up to 3 times.
   */
  static async start(opts: ServiceProcessOptions): Promise<ServiceProcess> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await ServiceProcess.startOnce(opts);
      } catch (err) {
        if (!(err instanceof ChildFailedError) || attempt >= 3) throw err;
        opts.progress?.(`a port was taken (EADDRINUSE): starting again on other ports (attempt ${attempt + 1})`);
      }
    }
  }

  private static async startOnce(opts: ServiceProcessOptions): Promise<ServiceProcess> {
    const apiProcesses = opts.apiProcesses ?? 1;
    const port = await freePort();
    const altPort = await freePort();
    // the background process's ops listener is OPS_PORT, API process i's OPS_PORT + i: one block
    const opsPort = await freePorts(1 + apiProcesses);
    const adminToken = randomBytes(24).toString('hex');
    // Extra V8/node flags for the service's processes only, to try a setting (e.g. --max-semi-space-size=32).
    const nodeArgs: string[] = (process.env.BENCH_SERVICE_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
    if (opts.cpuProfDir) {
      mkdirSync(opts.cpuProfDir, { recursive: true });
      nodeArgs.push('--cpu-prof', '--cpu-prof-dir', opts.cpuProfDir);
    }
    // `npm run bench` measures what production runs: node on the compiled service (it builds
    // first and sets BENCH_SERVICE=dist); otherwise (the smoke test) the sources through tsx,
    // whose loader adds ~40 MB to every process. The supervisor's children inherit the node
    // flags (node:cluster forks with its execArgv).
    const fromDist = process.env.BENCH_SERVICE === 'dist';
    const script = fromDist ? 'dist/api/supervisor.js' : 'api/supervisor.ts';
    if (fromDist && !existsSync(join(REPO_ROOT, script))) throw new Error(`BENCH_SERVICE=dist but ${script} is missing: run npm run build`);
    // BENCH_SERVICE_STDOUT=FILE keeps what the service's processes print (e.g. with
    // BENCH_SERVICE_NODE_ARGS=--trace-gc, every collection of every process) in FILE.
    const stdoutFile = process.env.BENCH_SERVICE_STDOUT ? createWriteStream(process.env.BENCH_SERVICE_STDOUT, { flags: 'a' }) : undefined;
    const child = spawnTsxChild(script, {
      tsx: !fromDist,
      nodeArgs,
      onStdoutLine: stdoutFile ? (line) => stdoutFile.write(line + '\n') : undefined,
      env: {
        API_PROCESSES: String(apiProcesses),
        PORT: String(port),
        ALT_PORT: String(altPort),
        OPS_PORT: String(opsPort),
        HOST: '127.0.0.1',
        REDIS_URL: opts.redisUrl,
        REDIS_PREFIX: opts.prefix,
        DATA_DIR: opts.dataDir,
        ADMIN_TOKEN: adminToken,
        AUTO_START_REDIS: 'false',
        LOG_LEVEL: 'warn',
        ...BENCH_LIMITS_ENV,
        ...opts.env,
      },
    });
    const baseUrl = `http://127.0.0.1:${port}`;
    try {
      const timeout = opts.readyTimeoutMs ?? 90_000;
      const wait = (what: string): WaitOptions => ({
        failOn: /EADDRINUSE/,
        onWait: (ms) => opts.progress?.(`waiting for ${what} to be ready (${(ms / 1000).toFixed(0)} s)`),
      });
      // the API processes, then the background process (the workers consume, ClickHouse answers)
      await waitForHttp(`${baseUrl}/readyz`, child, timeout, wait('the API'));
      await waitForHttp(`http://127.0.0.1:${opsPort}/readyz`, child, timeout, wait('the background process'));
    } catch (err) {
      await child.stop(2000);
      throw err;
    }
    return new ServiceProcess(child, baseUrl, adminToken, opts);
  }

  get pid(): number {
    return this.child.pid;
  }

  /** POST /admin/v1/<operation>; throws unless 200. */
  async admin<T = any>(operation: string, body: unknown): Promise<T> {
    return this.post(`/admin/v1/${operation}`, body, { authorization: `Bearer ${this.adminToken}` });
  }

  /** POST /v1/<operation> with `x-api-key`; throws unless 200. */
  async call<T = any>(operation: string, key: string, body: unknown): Promise<T> {
    return this.post(`/v1/${operation}`, body, { 'x-api-key': key });
  }

  /** Throws unless 200; a 503 or 429 (overload, a limit) is retried after its Retry-After, up to 10 times, as a client would. */
  async post<T>(path: string, body: unknown, headers: Record<string, string>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const res = await fetch(`${this.baseUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      });
      const text = await res.text();
      if ((res.status === 503 || res.status === 429) && attempt < 10) {
        await new Promise((r) => setTimeout(r, 1000 * Number(res.headers.get('retry-after') ?? 1)));
        continue;
      }
      if (res.status !== 200) throw new Error(`${path} answered ${res.status}: ${text.slice(0, 500)}`);
      return (text ? JSON.parse(text) : undefined) as T;
    }
  }

  /** A project with one key per permission, through the admin API. */
  async createProject(projectId: string): Promise<ProjectKeys> {
    await this.admin('CreateProject', { projectId });
    const key = async (permissions: string[]) => (await this.admin<{ key: string }>('CreateApiKey', { projectId, permissions })).key;
    return { projectId, management: await key(['TREATMENT_MANAGEMENT']), delivery: await key(['DELIVERY']), logEvents: await key(['LOG_EVENTS']) };
  }

  /**
   * Ordered shutdown (SIGTERM to the supervisor: it stops the API processes, then the background
   * process, which drains its workers); returns the peaks of every process and the CPU profiles.
   */
  async stop(): Promise<ServiceStop> {
    this.sampler.stop();
    const peaks = this.sampler.peaks;
    const code = await this.child.stop(60_000);
    if (code !== 0 && code !== null) process.stderr.write(`service exited with ${code}:\n${this.child.output()}\n`);
    const dir = this.opts.cpuProfDir;
    const cpuProfiles: { kind: ProcessKind; path: string }[] = [];
    if (dir) {
      const files = readdirSync(dir);
      // thread 0 is a process's main thread (tsx's loader thread writes a profile of its own)
      for (const p of peaks.processes) {
        if (p.kind === 'supervisor') continue;
        const f = files.find((name) => name.endsWith('.cpuprofile') && name.includes(`.${p.pid}.0.`));
        if (f) cpuProfiles.push({ kind: p.kind, path: join(dir, f) });
      }
    }
    return { peaks, cpuProfiles };
  }
}
