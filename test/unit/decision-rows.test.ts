import type { Job } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { packDecisionRecord, type DecisionRecord, type DecisionsJob } from '../../shared/impact/index.js';
import type { ProfileStore } from '../../shared/profiles/index.js';
import { toClickhouseDateTime64 } from '../../shared/platform/warehouse/clickhouse-datetime.js';
import { TABLE_COLUMNS } from '../../shared/platform/warehouse/tables.js';
import type { ClickhouseBatchWriter } from '../../workers/warehouse/clickhouse-batch-writer.js';
import { decisionRowsChunk, processDecisionsJob } from '../../workers/impact/decisions.processor.js';

/**
 * The decisions workers write a job's rows as one chunk (rows separated by commas), like a
 * request's events: one `decisions_input` row per response, its decisions as parallel arrays in
 * TABLE_COLUMNS order (the table's view stores each as a row of `decisions`,
 * test/integration/event-rows-chunk.test.ts). The rows a merge redirects (a RETURNED cap counted on
 * the user the merge points to) must carry that user.
 */
const AT = Date.UTC(2026, 10, 28, 9, 30, 0, 123);
const ingest = toClickhouseDateTime64(AT + 1000);
const rec = (userId: string, responseId: string, treatments: string[]): DecisionRecord => ({
  projectId: 'p "1"',
  userId,
  responseId,
  decideTimeMs: AT,
  userResolved: true,
  decisions: treatments.map((t, i) => ({ treatmentId: t, versionNumber: 2, surface: 'home', rank: i + 1, outcome: i === 0 ? 'RETURNED' : 'HOLDOUT' })),
});
const rowsOf = (chunk: string): unknown[][] => JSON.parse(`[${chunk}]`) as unknown[][];

describe('decision rows as one chunk', () => {
  it("holds every decision of every record, in the table's column order", () => {
    const { chunk, rows } = decisionRowsChunk([rec('ü \\ "u"', 'r-1', ['t-a', 't-b']), rec('u-2', 'r-2', ['t-c']), rec('u-3', 'r-3', [])], ingest);
    const at = toClickhouseDateTime64(AT);
    expect(rows).toBe(3);
    expect(chunk).not.toContain('\n');
    // each value under its column's name (TABLE_COLUMNS order); the response without decisions makes no row
    const named = (values: Record<(typeof TABLE_COLUMNS.decisions_input)[number], unknown>) => TABLE_COLUMNS.decisions_input.map((c) => values[c]);
    const common = { project_id: 'p "1"', version_number: [2], surface: ['home'], decide_time: at, ingest_ts: ingest };
    expect(rowsOf(chunk)).toEqual([
      named({
        ...common,
        user_id: 'ü \\ "u"',
        response_id: 'r-1',
        treatment_id: ['t-a', 't-b'],
        version_number: [2, 2],
        surface: ['home', 'home'],
        rank: [1, 2],
        outcome: ['RETURNED', 'HOLDOUT'],
      }),
      named({ ...common, user_id: 'u-2', response_id: 'r-2', treatment_id: ['t-c'], rank: [1], outcome: ['RETURNED'] }),
    ]);
    expect(rowsOf(decisionRowsChunk([rec('u-1', 'r-1', ['t-a'])], ingest, 'u-merged').chunk)[0][1]).toBe('u-merged');
  });

  it('writes the rows of a job once, and those a merge redirects again under the user it points to', async () => {
    const written: { table: string; rows: unknown[][]; count: number }[] = [];
    const writer = {
      writeChunk: (table: string, chunk: string, count: number) => {
        written.push({ table, rows: rowsOf(chunk), count });
        return Promise.resolve();
      },
    } as unknown as ClickhouseBatchWriter;
    // the user merged into u-to while the job ran: the profile script says so and stores the rows there first
    const profiles = {
      applyEventsTo: async (_p: string, _u: string, _job: string, _events: unknown[], onAlias?: (to: string) => Promise<void>) => {
        await onAlias?.('u-to');
        return { applied: 1, userId: 'u-to' };
      },
      expireJobMarkers: () => Promise.resolve(),
    } as unknown as ProfileStore;
    const records = [rec('u-from', 'r-1', ['t-capped', 't-other']), rec('u-from', 'r-2', ['t-other'])];
    const job = { id: 'job-1', data: { kind: 'decisions', packed: records.map(packDecisionRecord) } } as unknown as Job<DecisionsJob>;
    const stored = await processDecisionsJob(job, { writer, profiles, now: () => AT + 1000, returnedCaps: () => Promise.resolve(new Set(['t-capped'])) });

    expect(stored).toBe(2);
    expect(written.map((w) => [w.table, w.count])).toEqual([
      ['decisions_input', 3],
      ['decisions_input', 2],
    ]);
    expect(written[0].rows.map((r) => r[1])).toEqual(['u-from', 'u-from']);
    // only the record with a capped RETURNED decision is counted, so only its rows follow the merge
    expect(written[1].rows.map((r) => [r[1], r[2], r[3]])).toEqual([['u-to', 'r-1', ['t-capped', 't-other']]]);
  });
});
