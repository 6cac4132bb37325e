import { UnrecoverableError, type Job } from 'bullmq';
import type { DecisionRecord, DecisionsJob } from '../../shared/impact/index.js';
import { capCounterField, type AppliedUnit, type ProfileEvent, type ProfileOp, type ProfileStore } from '../../shared/profiles/index.js';
import { toClickhouseDateTime64 } from '../../shared/platform/warehouse/event-rows.js';
import type { ClickhouseBatchWriter } from '../warehouse/clickhouse-batch-writer.js';
import { acceptedBeforeDeletion, type ErasedUsers } from '../ingestion/events.processor.js';

export interface DecisionsProcessorDeps {
  writer: ClickhouseBatchWriter;
  profiles: ProfileStore;
  now: () => number;
  /** Deleted users: decisions made before their user's deletion are dropped. */
  erased?: ErasedUsers;
}

const DAY_MS = 86_400_000;

/** The JSONCompactEachRow lines of a record (TABLE_COLUMNS.decisions order). */
export function decisionLines(rec: DecisionRecord, ingest: string): string[] {
  const decide = toClickhouseDateTime64(rec.decideTimeMs);
  return rec.decisions.map((d) => JSON.stringify([rec.projectId, rec.userId, rec.responseId, d.treatmentId, d.versionNumber, d.surface, d.rank, d.outcome, decide, ingest]));
}

/** The RETURNED frequency-cap counters of a record: one per returned treatment and surface, on the decision's UTC day. */
export function returnedCapOps(rec: DecisionRecord): ProfileOp[] {
  const day = Math.floor(rec.decideTimeMs / DAY_MS);
  return rec.decisions.filter((d) => d.outcome === 'RETURNED').map((d): ProfileOp => ['inc', capCounterField('RETURNED', d.treatmentId, day), 1]);
}

function isRecord(r: unknown): r is DecisionRecord {
  const x = r as DecisionRecord;
  return typeof x?.projectId === 'string' && typeof x.userId === 'string' && typeof x.responseId === 'string' && Number.isFinite(x.decideTimeMs) && Array.isArray(x.decisions);
}

/** The users whose profile a decisions job changes (their RETURNED counters): the identities of its markers. */
export function decisionsJobUnits(data: DecisionsJob | undefined, jobId: string): AppliedUnit[] {
  if (!Array.isArray(data?.records)) return [];
  const units = new Map<string, AppliedUnit>();
  for (const rec of data.records) {
    if (!isRecord(rec) || returnedCapOps(rec).length === 0) continue;
    units.set(JSON.stringify([rec.projectId, rec.userId]), { projectId: rec.projectId, userId: rec.userId, id: jobId });
  }
  return [...units.values()];
}

/**
 * Same layering as events: the rows first (a job completes only after the insert holding
 * them succeeded; copies collapse on (project, response, treatment, surface)), then the RETURNED
 * cap counters through the profile script, guarded by the job's marker per user, so a retry
 * after a crash at any point counts each decision once.
 * A decision of an id merged into another user is that user's: records are re-addressed to the
 * user their id stands for before anything is written (one round trip, with the markers'
 * pre-check), and a merge that lands while the job runs redirects the user's rows with its counters.
 */
export async function processDecisionsJob(job: Job<DecisionsJob>, deps: DecisionsProcessorDeps): Promise<number> {
  const all = job.data?.records;
  if (!Array.isArray(all) || !all.every(isRecord)) throw new UnrecoverableError('malformed decisions job payload');
  const dropped = await acceptedBeforeDeletion(deps.erased, all.map((r) => ({ projectId: r.projectId, userId: r.userId, receivedAt: r.decideTimeMs })));
  const records = all.filter((_, i) => !dropped[i]);
  if (records.length === 0) return 0;
  await readdressToMergedUsers(records, job.id!, deps.profiles);
  const ingest = toClickhouseDateTime64(deps.now());
  await deps.writer.write('decisions', records.flatMap((r) => decisionLines(r, ingest)));
  // One script per user of the job (the marker is per job and user): its records' counters together.
  const byUser = new Map<string, { projectId: string; userId: string; records: DecisionRecord[]; events: ProfileEvent[] }>();
  for (const rec of records) {
    const ops = returnedCapOps(rec);
    if (ops.length === 0) continue;
    const key = JSON.stringify([rec.projectId, rec.userId]);
    let entry = byUser.get(key);
    if (!entry) byUser.set(key, (entry = { projectId: rec.projectId, userId: rec.userId, records: [], events: [] }));
    entry.records.push(rec);
    entry.events.push({ ts: rec.decideTimeMs, ops });
  }
  await Promise.all(
    [...byUser.values()].map(async (u) => {
      // merged since the records were re-addressed: their rows go to the user too, before the marker commits there
      const { userId } = await deps.profiles.applyEventsTo(u.projectId, u.userId, job.id!, u.events, (to) => deps.writer.write('decisions', u.records.flatMap((r) => decisionLines({ ...r, userId: to }, ingest))));
      for (const r of u.records) r.userId = userId;
    }),
  );
  return records.length;
}

/**
 * Each record's user becomes the user its id stands for (an identity merge's alias, followed),
 * in place, so the completion handler's markers are the ones written. A user whose marker for
 * this job exists was applied by an earlier attempt: it stays where that attempt put it.
 */
async function readdressToMergedUsers(records: DecisionRecord[], jobId: string, profiles: ProfileStore): Promise<void> {
  const users = new Map<string, AppliedUnit>();
  for (const r of records) users.set(JSON.stringify([r.projectId, r.userId]), { projectId: r.projectId, userId: r.userId, id: jobId });
  const keys = [...users.keys()];
  const resolved = await profiles.resolveUnits([...users.values()]);
  const to = new Map(keys.map((k, i) => [k, resolved[i].unit.userId]));
  for (const r of records) r.userId = to.get(JSON.stringify([r.projectId, r.userId]))!;
}
