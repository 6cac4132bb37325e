import { readFileSync } from 'node:fs';

/**
 * Samples a child process's memory and CPU from /proc (Linux). Peak RSS is the larger of the
 * kernel's high-water mark (VmHWM, which sees short spikes between samples) and the samples.
 * On systems without /proc every reading is NaN.
 */
export class ProcessSampler {
  private peakKb = 0;
  private peakSample: { anonKb: number; fileKb: number } | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly clockTicks = 100;

  constructor(
    readonly pid: number,
    private readonly intervalMs = 100,
  ) {}

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
      const stat = readFileSync(`/proc/${this.pid}/stat`, 'utf8');
      // fields after the parenthesised command name; utime and stime are fields 14 and 15
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return (Number(rest[11]) + Number(rest[12])) / this.clockTicks;
    } catch {
      return NaN;
    }
  }

  private sample(): void {
    const s = this.status();
    // a process that is exec'ing or exiting has no Vm lines
    if (!s || !Number.isFinite(s.rssKb)) return;
    if (this.peakSample === undefined || s.rssKb > this.peakSample.anonKb + this.peakSample.fileKb) this.peakSample = { anonKb: s.anonKb, fileKb: s.rssKb - s.anonKb };
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
