import { readFileSync } from 'node:fs';
import { cpuTimes } from './proc-stat.js';

/** Takes a sample now and every `intervalMs` until stopped, and once more at the stop. */
abstract class PeriodicSampler {
  private timer: NodeJS.Timeout | undefined;

  constructor(protected readonly intervalMs = 100) {}

  protected abstract sample(): unknown;

  start(): this {
    this.sample();
    this.timer ??= setInterval(() => this.sample(), this.intervalMs);
    this.timer.unref();
    return this;
  }

  /** Takes a last sample (call it before the process exits) and stops sampling. */
  stop(): void {
    this.sample();
    clearInterval(this.timer);
    this.timer = undefined;
  }
}

/**
 * Samples a child process's memory and CPU from /proc (Linux). Peak RSS is the larger of the
 * kernel's high-water mark (VmHWM, which sees short spikes between samples) and the samples.
 * On systems without /proc every reading is NaN.
 */
export class ProcessSampler extends PeriodicSampler {
  private peakKb = 0;
  private peakSample: { anonKb: number; fileKb: number } | undefined;

  constructor(
    readonly pid: number,
    intervalMs = 100,
  ) {
    super(intervalMs);
  }

  /**
   * The largest sampled RSS split into anonymous memory (heaps, buffers) and file-backed pages
   * (mapped code such as the chDB library, shareable and reclaimable).
   */
  get peakSplitMb(): { anonMb: number; fileMb: number } | undefined {
    return this.peakSample && { anonMb: this.peakSample.anonKb / 1024, fileMb: this.peakSample.fileKb / 1024 };
  }

  get peakRssMb(): number {
    return this.peakKb > 0 ? this.peakKb / 1024 : NaN;
  }

  /** Current RSS in MB. */
  rssMb(): number {
    const s = this.status();
    return s ? s.rssKb / 1024 : NaN;
  }

  /** User + system CPU seconds used by the process so far (all its threads). */
  cpuSeconds(): number {
    try {
      const t = cpuTimes(this.pid);
      return t.user + t.sys;
    } catch {
      return NaN;
    }
  }

  /** One sample now (for a caller that times the samples itself); the current RSS in KB, NaN when gone. */
  sampleNow(): number {
    this.sample();
    return this.status()?.rssKb ?? NaN;
  }

  protected sample(): void {
    const s = this.status();
    // a process that is exec'ing or exiting has no Vm lines
    if (!s || !Number.isFinite(s.rssKb)) return;
    if (this.peakSample === undefined || s.rssKb > this.peakSample.anonKb + this.peakSample.fileKb)
      this.peakSample = { anonKb: s.anonKb, fileKb: s.rssKb - s.anonKb };
    this.peakKb = Math.max(this.peakKb, s.rssKb, Number.isFinite(s.hwmKb) ? s.hwmKb : 0);
  }

  private status(): { rssKb: number; hwmKb: number; anonKb: number } | undefined {
    try {
      const text = readFileSync(`/proc/${this.pid}/status`, 'utf8');
      const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN);
      return { rssKb: kb('VmRSS'), hwmKb: kb('VmHWM'), anonKb: kb('RssAnon') };
    } catch {
      return undefined;
    }
  }
}

/** The kinds of process the supervisor (api/supervisor.ts) runs, told apart by their ROLE. */
export type ProcessKind = 'api' | 'background';

export interface GroupPeaks {
  /** Largest peak of one API process (each has its own heap and connections). */
  apiMb: number;
  /** Peak of the background process (workers, scheduler, the embedded ClickHouse). */
  backgroundMb: number;
  /** Peak of the supervisor and all its children together (sampled at the same instants). */
  totalMb: number;
  /** Peak of each process, by kind and pid. */
  processes: { kind: ProcessKind | 'supervisor'; pid: number; peakMb: number }[];
}

/**
 * Samples the supervisor and every child it runs (API processes and the background process),
 * found through /proc/<pid>/task/<pid>/children, each with its own ProcessSampler; a child the
 * supervisor restarted is picked up as a new process. Linux only.
 */
export class ProcessGroupSampler extends PeriodicSampler {
  private readonly supervisor: ProcessSampler;
  private readonly children = new Map<number, { kind: ProcessKind; sampler: ProcessSampler }>();
  private peakTotalKb = 0;

  constructor(
    readonly pid: number,
    intervalMs = 100,
  ) {
    super(intervalMs);
    this.supervisor = new ProcessSampler(pid);
  }

  /** The pids of the current children of each kind. */
  pids(kind: ProcessKind): number[] {
    this.discover();
    return [...this.children].filter(([pid, c]) => c.kind === kind && existsProc(pid)).map(([pid]) => pid);
  }

  /** RSS of the whole group now, MB. */
  rssMb(): number {
    return this.sample() / 1024;
  }

  /** RSS now of the largest process of `kind`, MB. */
  kindRssMb(kind: ProcessKind): number {
    this.discover();
    const live = [...this.children.values()]
      .filter((c) => c.kind === kind)
      .map((c) => c.sampler.rssMb())
      .filter(Number.isFinite);
    return live.length > 0 ? Math.max(...live) : NaN;
  }

  /** CPU seconds of the live children of one kind (all their threads: the embedded ClickHouse's too). */
  kindCpuSeconds(kind: ProcessKind): number {
    this.discover();
    let total = 0;
    for (const c of this.children.values()) {
      if (c.kind !== kind) continue;
      const s = c.sampler.cpuSeconds();
      if (Number.isFinite(s)) total += s;
    }
    return total;
  }

  /** CPU seconds of the supervisor and its live children. */
  cpuSeconds(): number {
    this.discover();
    let total = this.supervisor.cpuSeconds();
    for (const c of this.children.values()) {
      const s = c.sampler.cpuSeconds();
      if (Number.isFinite(s)) total += s;
    }
    return total;
  }

  get peaks(): GroupPeaks {
    const maxOf = (xs: number[]) => (xs.length > 0 ? Math.max(...xs) : NaN);
    const kindPeak = (kind: ProcessKind) =>
      maxOf(
        [...this.children.values()]
          .filter((c) => c.kind === kind)
          .map((c) => c.sampler.peakRssMb)
          .filter(Number.isFinite),
      );
    return {
      apiMb: kindPeak('api'),
      backgroundMb: kindPeak('background'),
      totalMb: this.peakTotalKb > 0 ? this.peakTotalKb / 1024 : NaN,
      processes: [
        { kind: 'supervisor' as const, pid: this.pid, peakMb: this.supervisor.peakRssMb },
        ...[...this.children].map(([pid, c]) => ({ kind: c.kind, pid, peakMb: c.sampler.peakRssMb })),
      ],
    };
  }

  private discover(): void {
    let pids: number[];
    try {
      pids = readFileSync(`/proc/${this.pid}/task/${this.pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    } catch {
      return;
    }
    for (const pid of pids) {
      if (this.children.has(pid)) continue;
      const kind = kindOf(pid);
      // tsx's esbuild service and anything else without a ROLE is not a service process
      if (kind) this.children.set(pid, { kind, sampler: new ProcessSampler(pid) });
    }
  }

  /** Samples every process; returns the group's RSS in KB (the sum of the live processes). */
  protected sample(): number {
    this.discover();
    let total = 0;
    for (const s of [this.supervisor, ...[...this.children.values()].map((c) => c.sampler)]) {
      const kb = s.sampleNow();
      if (Number.isFinite(kb)) total += kb;
    }
    this.peakTotalKb = Math.max(this.peakTotalKb, total);
    return total;
  }
}

function existsProc(pid: number): boolean {
  try {
    readFileSync(`/proc/${pid}/stat`);
    return true;
  } catch {
    return false;
  }
}

function kindOf(pid: number): ProcessKind | undefined {
  try {
    const role = readFileSync(`/proc/${pid}/environ`, 'utf8')
      .split('\0')
      .find((v) => v.startsWith('ROLE='))
      ?.slice(5);
    if (role === 'api') return 'api';
    if (role && /workers|scheduler/.test(role)) return 'background';
  } catch {
    // gone, or not ours to read
  }
  return undefined;
}

/** CPU cores a process used over a span: cpu seconds / wall seconds. */
export class CpuSpan {
  private readonly startCpu: number;
  private readonly startWall = performance.now();

  constructor(private readonly read: () => number) {
    this.startCpu = read();
  }

  cores(): number {
    return (this.read() - this.startCpu) / ((performance.now() - this.startWall) / 1000);
  }
}

/** CPU seconds of this (the load generator's) process. */
export function ownCpuSeconds(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}
