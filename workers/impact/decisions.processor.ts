import { UnrecoverableError, type Job } from 'bullmq';
import { decisionRecordsOf, type DecisionRecord, type DecisionsJob } from '../../shared/impact/index.js';
import type { AppliedUnit, ProfileEvent, ProfileStore } from '../../shared/profiles/index.js';
import { toClickhouseDateTime64 } from '../../shared/platform/warehouse/clickhouse-datetime.js';
import { rowsChunk } from '../../shared/platform/warehouse/tables.js';
import type { ClickhouseBatchWriter } from '../warehouse/clickhouse-batch-writer.js';
import { acceptedBeforeDeletion, type ErasedUsers } from '../ingestion/events.processor.js';
import { returnedCapOps, type ReturnedCaps } from '../delivery/cap-counters.js';

export interface DecisionsProcessorDeps {
  writer: ClickhouseBatchWriter;
  profiles: ProfileStore;
  now: () => number;
  /** Deleted users: decisions made before their user's deletion are dropped. */
  erased?: ErasedUsers;
  /** Only these treatments get RETURNED counters. @defaultValue none: no counters */
  returnedCaps?: ReturnedCaps;
  /** How long the job markers of the users counted live once the job is done (s). @defaultValue 300 */
  markerGraceSeconds?: number;
}

/**
 * The records as one chunk (rowsChunk) of `decisions_input` rows, as eventRowsChunk makes a
 * request's events: one row per record, its decisions as parallel arrays (TABLE_COLUMNS order),
 * which the table's view stores as one row of `decisions` each. `rows` counts the decisions.
 * `userId`, when given, replaces the records' user (a merge that landed while the job ran).
 */
export function decisionRowsChunk(records: readonly DecisionRecord[], ingest: string, userId?: string): { chunk: string; rows: number } {
  const lines: unknown[][] = [];
  let rows = 0;
  for (const rec of records) {
    const n = rec.decisions.length;
    if (n === 0) continue;
    const treatments = new Array<string>(n);
    const versions = new Array<number>(n);
    const surfaces = new Array<string>(n);
    const ranks = new Array<number>(n);
    const outcomes = new Array<string>(n);
    for (let i = 0; i < n; i++) {
      const d = rec.decisions[i];
      treatments[i] = d.treatmentId;
      versions[i] = d.versionNumber;
      surfaces[i] = d.surface;
      ranks[i] = d.rank;
      outcomes[i] = d.outcome;
    }
    lines.push([
      rec.projectId,
      userId ?? rec.userId,
      rec.responseId,
      treatments,
      versions,
      surfaces,
      ranks,
      outcomes,
      toClickhouseDateTime64(rec.decideTimeMs),
      ingest,
    ]);
    rows += n;
  }
  return { chunk: rowsChunk(lines), rows };
}

const NO_CAPS: ReadonlySet<string> = new Set();

/**
 * Same layering as events: the rows first (a job completes only after the insert holding
 * them succeeded; copies collapse on (project, response, treatment, surface)), then the RETURNED
 * cap counters through the profile script, guarded by the job's marker per user, so a retry
 * after a crash at any point counts each decision once. Returns the records stored.
 * A decision of an id merged into another user is that user's: records delivery did not resolve
 * are re-addressed to the user their id stands for before anything is written (one round trip),
 * and a merge that lands while the job runs redirects the user's rows with its counters.
 */
export async function processDecisionsJob(job: Job<DecisionsJob>, deps: DecisionsProcessorDeps): Promise<number> {
  const all = decisionRecordsOf(job.data);
  if (all === undefined) throw new UnrecoverableError('malformed decisions job payload');
  const dropped = await acceptedBeforeDeletion(
    deps.erased,
    all.map((r) => ({ projectId: r.projectId, userId: r.userId, receivedAt: r.decideTimeMs })),
  );
  const records = all.filter((_, i) => !dropped[i]);
  if (records.length === 0) return 0;
  await readdressToMergedUsers(records, job.id!, deps.profiles);
  const ingest = toClickhouseDateTime64(deps.now());
  const { chunk, rows } = decisionRowsChunk(records, ingest);
  await deps.writer.writeChunk('decisions_input', chunk, rows);
  const units = await applyCapCounters(job.id!, records, ingest, deps);
  if (units.length > 0) {
    // the job is done with these markers once it completes; a duplicate execution still finds them for the grace
    await deps.profiles.expireJobMarkers(units, [], deps.markerGraceSeconds ?? 300).catch(() => undefined);
  }
  return records.length;
}

/** One script per user of the job (the marker is per job and user): its records' counters together. */
async function applyCapCounters(jobId: string, records: DecisionRecord[], ingest: string, deps: DecisionsProcessorDeps): Promise<AppliedUnit[]> {
  if (deps.returnedCaps === undefined) return [];
  const capsOf = new Map<string, ReadonlySet<string>>();
  for (const rec of records) if (!capsOf.has(rec.projectId)) capsOf.set(rec.projectId, NO_CAPS);
  await Promise.all([...capsOf.keys()].map(async (p) => capsOf.set(p, await deps.returnedCaps!(p))));
  const byUser = new Map<string, { projectId: string; userId: string; records: DecisionRecord[]; events: ProfileEvent[] }>();
  for (const rec of records) {
    const ops = returnedCapOps(rec, capsOf.get(rec.projectId)!);
    if (ops.length === 0) continue;
    const key = JSON.stringify([rec.projectId, rec.userId]);
    let entry = byUser.get(key);
    if (!entry) byUser.set(key, (entry = { projectId: rec.projectId, userId: rec.userId, records: [], events: [] }));
    entry.records.push(rec);
    entry.events.push({ ts: rec.decideTimeMs, ops });
  }
  return Promise.all(
    [...byUser.values()].map(async (u): Promise<AppliedUnit> => {
      // merged since the records were re-addressed: their rows go to the user too, before the marker commits there
      const { userId } = await deps.profiles.applyEventsTo(u.projectId, u.userId, jobId, u.events, (to) => {
        const { chunk, rows } = decisionRowsChunk(u.records, ingest, to);
        return deps.writer.writeChunk('decisions_input', chunk, rows);
      });
      return { projectId: u.projectId, userId, id: jobId };
    }),
  );
}

/**
 * Each record delivery did not resolve gets, as its user, the user its id stands for (an identity
 * merge's alias, followed), in place. A user whose marker for this job exists was applied by an
 * earlier attempt: it stays where that attempt put it. Delivery resolves every request whose
 * profile it read (nearly all: rules and placeholders need it), so this costs a read only for the
 * others.
 */
async function readdressToMergedUsers(records: DecisionRecord[], jobId: string, profiles: ProfileStore): Promise<void> {
  const users = new Map<string, AppliedUnit>();
  for (const r of records)
    if (r.userResolved !== true) users.set(JSON.stringify([r.projectId, r.userId]), { projectId: r.projectId, userId: r.userId, id: jobId });
  if (users.size === 0) return;
  const keys = [...users.keys()];
  const resolved = await profiles.resolveUnits([...users.values()]);
  const to = new Map(keys.map((k, i) => [k, resolved[i].unit.userId]));
  for (const r of records) if (r.userResolved !== true) r.userId = to.get(JSON.stringify([r.projectId, r.userId]))!;
}
