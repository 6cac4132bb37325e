import type { Logger } from 'pino';
import type { ClickhouseTable } from '../../shared/platform/warehouse/tables.js';
import type { Warehouse } from '../../shared/platform/warehouse/warehouse.js';

/**
 * How one table's rows are gathered into inserts. Every insert makes a part the engine writes and
 * later merges, at a fixed cost in CPU whatever its size, so fewer, larger inserts cost less per row.
 */
export interface TableInserts {
  /**
   * The least interval between two inserts of the table (ms), in place of `maxDelayMs`: a longer
   * one where nothing waits on the insert but the rows' own readability.
   */
  delayMs: number;
  /** Rows that flush the table at once, in place of `maxRows`: larger with a longer delay, else a busy table is flushed by its row count. */
  maxRows?: number;
  /**
   * The wait of a row that finds the table quiet (its last insert began at least `delayMs` ago). A
   * row after a recent insert waits what is left of the interval, at least this: a steady stream
   * still gathers a whole delay's rows per insert (never more than one insert per delay), but an
   * event after a pause is stored, and shows in its profile, sooner. @defaultValue `delayMs`
   */
  quietDelayMs?: number;
}

export interface BatchWriterOptions {
  /** Flush a table's buffer once it holds this many rows. @defaultValue 10000 */
  maxRows?: number;
  /** Flush at the latest this long after the first buffered row. @defaultValue 50 */
  maxDelayMs?: number;
  /** Per table, its own insert policy in place of `maxDelayMs` and `maxRows` (TableInserts). */
  tables?: Partial<Record<ClickhouseTable, TableInserts>>;
  /** Permanent (poison) vs transient error; decides whether a failed batch is split per caller. */
  isPermanent?: (err: unknown) => boolean;
  /** Told about every insert: its table, rows, latency and whether it failed (metrics). */
  onInsert?: (table: ClickhouseTable, rows: number, seconds: number, failed: boolean) => void;
}

interface Waiter {
  /**
   * The caller's JSONCompactEachRow rows (TABLE_COLUMNS order: rowLine, eventRowsChunk) separated by
   * newlines or commas, as UTF-8 bytes. One chunk per caller, made when it writes: its thousands of
   * small line strings then die young, instead of surviving the wait for the insert into the old
   * generation, whose collections cost the background process more CPU than joining them early (a
   * quarter of its CPU per decision logged, measured with bench/request-cost.ts). Held as bytes,
   * outside V8's heap, not as the string it was made as: under load a chunk waits 100 ms or more
   * for its insert, longer than the young generation lasts, and as a string every scavenge in
   * between copied it and the old generation's collections then marked and swept it; the bytes
   * are what the insert sends anyway.
   */
  chunk: Buffer;
  rows: number;
  resolve: () => void;
  reject: (err: unknown) => void;
}

interface TableBuffer {
  waiters: Waiter[];
  rowCount: number;
  timer?: NodeJS.Timeout;
}

/**
 * Batches the rows of many concurrent jobs into few large ClickHouse inserts (thousands of rows
 * per insert, not one). Unlike a fire-and-forget buffer, every `write` resolves only after the
 * insert holding its rows succeeded, so a job completes only once its rows are stored and a crash
 * loses nothing that was acknowledged. A batch that fails permanently is retried caller by
 * caller, so one poison job cannot fail the jobs that shared its batch.
 */
export class ClickhouseBatchWriter {
  private readonly buffers = new Map<ClickhouseTable, TableBuffer>();
  private readonly inFlight = new Set<Promise<void>>();
  private readonly maxRows: number;
  private readonly maxDelayMs: number;
  private readonly tables: Partial<Record<ClickhouseTable, TableInserts>>;
  /** When each table's last insert was sent (performance.now()). */
  private readonly lastFlushAt = new Map<ClickhouseTable, number>();
  private readonly isPermanent: (err: unknown) => boolean;
  private readonly onInsert?: BatchWriterOptions['onInsert'];
  rowsWritten = 0;

  constructor(
    private readonly warehouse: Pick<Warehouse, 'insertLines'>,
    private readonly log: Logger,
    opts: BatchWriterOptions = {},
  ) {
    this.maxRows = opts.maxRows ?? 10_000;
    this.maxDelayMs = opts.maxDelayMs ?? 50;
    this.tables = opts.tables ?? {};
    this.isPermanent = opts.isPermanent ?? (() => false);
    this.onInsert = opts.onInsert;
  }

  write(table: ClickhouseTable, lines: readonly string[]): Promise<void> {
    return this.writeChunk(table, lines.length === 1 ? lines[0] : lines.join('\n'), lines.length);
  }

  /**
   * `rows` rows already serialised as one chunk of JSONCompactEachRow rows, separated by newlines
   * or commas (eventRowsChunk: a request's rows in one JSON.stringify).
   */
  writeChunk(table: ClickhouseTable, chunk: string, rows: number): Promise<void> {
    if (rows === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      let buf = this.buffers.get(table);
      if (!buf) {
        buf = { waiters: [], rowCount: 0 };
        this.buffers.set(table, buf);
      }
      buf.waiters.push({ chunk: Buffer.from(chunk, 'utf8'), rows, resolve, reject });
      buf.rowCount += rows;
      if (buf.rowCount >= (this.tables[table]?.maxRows ?? this.maxRows)) this.flush(table);
      else buf.timer ??= setTimeout(() => this.flush(table), this.delayOf(table));
    });
  }

  /** How long a table's first buffered row waits: its delay, or with a quiet delay what is left of the interval. */
  private delayOf(table: ClickhouseTable): number {
    const policy = this.tables[table];
    if (policy === undefined) return this.maxDelayMs;
    const { delayMs, quietDelayMs = delayMs } = policy;
    const last = this.lastFlushAt.get(table);
    return last === undefined ? quietDelayMs : Math.max(quietDelayMs, delayMs - (performance.now() - last));
  }

  private flush(table: ClickhouseTable): void {
    const buf = this.buffers.get(table);
    if (!buf || buf.waiters.length === 0) return;
    this.buffers.delete(table);
    clearTimeout(buf.timer);
    this.lastFlushAt.set(table, performance.now());
    const p = this.insert(table, buf.waiters).finally(() => this.inFlight.delete(p));
    this.inFlight.add(p);
  }

  private async insert(table: ClickhouseTable, waiters: Waiter[]): Promise<void> {
    const rows = waiters.reduce((n, w) => n + w.rows, 0);
    const started = performance.now();
    try {
      await this.warehouse.insertLines(
        table,
        waiters.map((w) => w.chunk),
        { dedupToken: false },
      );
      this.onInsert?.(table, rows, (performance.now() - started) / 1000, false);
      this.rowsWritten += rows;
      for (const w of waiters) w.resolve();
    } catch (err) {
      this.onInsert?.(table, rows, (performance.now() - started) / 1000, true);
      if (waiters.length > 1 && this.isPermanent(err)) {
        this.log.warn({ err, table, callers: waiters.length }, 'batch insert failed permanently; retrying caller by caller to isolate the poison rows');
        for (const w of waiters) await this.insert(table, [w]);
        return;
      }
      for (const w of waiters) w.reject(err);
    }
  }

  /** Flushes every buffer and waits for inserts under way (shutdown). */
  async drain(): Promise<void> {
    for (const table of [...this.buffers.keys()]) this.flush(table);
    await Promise.allSettled([...this.inFlight]);
  }
}
