import type { Redis } from 'ioredis';

/**
 * The jobs a BullMQ queue completed, read from the queue's event stream. Completed ingest jobs
 * are removed at once (removeOnComplete), so their state reads `unknown` afterwards; the
 * stream's `completed` events remain (the newest ~10,000 per queue).
 */
export class JobCompletions {
  constructor(
    private readonly redis: Redis,
    /** BullMQ prefix (`bullPrefix(...)`). */
    private readonly prefix: string,
    private readonly queue: string,
  ) {}

  private get key(): string {
    return `${this.prefix}:${this.queue}:events`;
  }

  /** The id of the newest event so far: `since(mark)` then lists only later completions. */
  async mark(): Promise<string> {
    const [newest] = (await this.redis.xrevrange(this.key, '+', '-', 'COUNT', 1)) as [string, string[]][];
    return newest?.[0] ?? '0-0';
  }

  /** Ids of the jobs completed after `mark` (all the stream holds without one), oldest first. */
  async since(mark = '0-0'): Promise<string[]> {
    const entries = (await this.redis.xrange(this.key, `(${mark}`, '+')) as [string, string[]][];
    const ids: string[] = [];
    for (const [, fields] of entries) {
      const f: Record<string, string> = {};
      for (let i = 0; i < fields.length; i += 2) f[fields[i]] = fields[i + 1];
      if (f.event === 'completed') ids.push(f.jobId);
    }
    return ids;
  }

  /** Whether the job has completed (it then no longer exists). */
  async completed(jobId: string): Promise<boolean> {
    return (await this.since()).includes(jobId);
  }
}
