import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ProcessSampler } from './process-sampler.js';
import { freePort, spawnTsxChild, waitForHttp, type TsxChild } from './tsx-child.js';

export interface ServiceProcessOptions {
  redisUrl: string;
  prefix: string;
  dataDir: string;
  /** Directory for this child's `--cpu-prof` output; unset: no profile. */
  cpuProfDir?: string;
  env?: Record<string, string>;
  readyTimeoutMs?: number;
}

export interface ProjectKeys {
  projectId: string;
  management: string;
  delivery: string;
  logEvents: string;
}

/**
 * The all-in-one service (`api/server.ts`: API, workers, scheduler, embedded ClickHouse) in a
 * child process: its RSS can be sampled on its own, and the load generator in this process does
 * not share its CPU thread.
 */
export class ServiceProcess {
  readonly sampler: ProcessSampler;
  /** RSS once the service answered /readyz, before any load. */
  readonly readyRssMb: number;

  private constructor(
    readonly child: TsxChild,
    readonly baseUrl: string,
    private readonly adminToken: string,
    readonly opts: ServiceProcessOptions,
  ) {
    this.sampler = new ProcessSampler(child.pid).start();
    this.readyRssMb = this.sampler.rssMb();
  }

  static async start(opts: ServiceProcessOptions): Promise<ServiceProcess> {
    const [port, altPort] = [await freePort(), await freePort()];
    const adminToken = randomBytes(24).toString('hex');
    // Extra V8/node flags for the service child only, to try a setting (e.g. --max-semi-space-size=32).
    const nodeArgs: string[] = (process.env.BENCH_SERVICE_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
    if (opts.cpuProfDir) {
      mkdirSync(opts.cpuProfDir, { recursive: true });
      nodeArgs.push('--cpu-prof', '--cpu-prof-dir', opts.cpuProfDir);
    }
    const child = spawnTsxChild('api/server.ts', {
      nodeArgs,
      env: {
        ROLE: 'all',
        PORT: String(port),
        ALT_PORT: String(altPort),
        // a free ops port: benchmarks and tests of several engineers share the machine
        OPS_PORT: '0',
        HOST: '127.0.0.1',
        REDIS_URL: opts.redisUrl,
        REDIS_PREFIX: opts.prefix,
        DATA_DIR: opts.dataDir,
        ADMIN_TOKEN: adminToken,
        AUTO_START_REDIS: 'false',
        LOG_LEVEL: 'warn',
        ...opts.env,
      },
    });
    const baseUrl = `http://127.0.0.1:${port}`;
    try {
      await waitForHttp(`${baseUrl}/readyz`, child, opts.readyTimeoutMs ?? 90_000);
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

  async post<T>(path: string, body: unknown, headers: Record<string, string>): Promise<T> {
    const res = await fetch(`${this.baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`${path} answered ${res.status}: ${text.slice(0, 500)}`);
    return (text ? JSON.parse(text) : undefined) as T;
  }

  /** A project with one key per permission, through the admin API. */
  async createProject(projectId: string): Promise<ProjectKeys> {
    await this.admin('CreateProject', { projectId });
    const key = async (permissions: string[]) => (await this.admin<{ key: string }>('CreateApiKey', { projectId, permissions })).key;
    return { projectId, management: await key(['TREATMENT_MANAGEMENT']), delivery: await key(['DELIVERY']), logEvents: await key(['LOG_EVENTS']) };
  }

  /**
   * Ordered shutdown of the child (SIGTERM: it drains its workers); returns its peak RSS and the
   * path of its CPU profile when it ran with one.
   */
  async stop(): Promise<{ peakRssMb: number; peakSplitMb?: { anonMb: number; fileMb: number }; cpuProfile?: string }> {
    this.sampler.stop();
    const { peakRssMb, peakSplitMb } = this.sampler;
    const code = await this.child.stop(60_000);
    if (code !== 0 && code !== null) process.stderr.write(`service child exited with ${code}:\n${this.child.output()}\n`);
    const dir = this.opts.cpuProfDir;
    // thread 0 is the main thread (tsx's loader thread writes a profile of its own)
    const profile = dir ? readdirSync(dir).find((f) => f.endsWith('.cpuprofile') && f.includes(`.${this.pid}.0.`)) : undefined;
    return { peakRssMb, peakSplitMb, cpuProfile: profile && dir ? join(dir, profile) : undefined };
  }
}
