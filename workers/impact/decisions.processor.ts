import { UnrecoverableError, type Job } from 'bullmq';
import { decisionRecordsOf, type DecisionRecord, type DecisionsJob } from '../../shared/impact/index.js';
import { capCounterField, type AppliedUnit, type ProfileEvent, type ProfileOp, type ProfileStore } from '../../shared/profiles/index.js';
import { toClickhouseDateTime64 } from '../../shared/platform/warehouse/event-rows.js';
import type { ClickhouseBatchWriter } from '../warehouse/clickhouse-batch-writer.js';
import { acceptedBeforeDeletion, type ErasedUsers } from '../ingestion/events.processor.js';

/** The treatments of a project with a frequency cap counting RETURNED decisions. */
export type ReturnedCaps = (projectId: string) => Promise<ReadonlySet<string>>;

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

const DAY_MS = 86_400_000;

/** The JSONCompactEachRow lines of a record (TABLE_COLUMNS.decisions order). */
export function decisionLines(rec: DecisionRecord, ingest: string): string[] {
  const head = `[${JSON.stringify(rec.projectId)},${JSON.stringify(rec.userId)},${JSON.stringify(rec.responseId)},`;
  const tail = `,"${toClickhouseDateTime64(rec.decideTimeMs)}","${ingest}"]`;
  return rec.decisions.map((d) => `${head}${JSON.stringify(d.treatmentId)},${d.versionNumber},${JSON.stringify(d.surface)},${d.rank},"${d.outcome}"${tail}`);
}

/**
 * The RETURNED frequency-cap counters of a record: one per returned treatment and surface with a
 * RETURNED cap, on the decision's UTC day. Treatments without such a cap get no counter, so
 * profiles do not grow with every treatment a user was ever shown.
 */
export function returnedCapOps(rec: DecisionRecord, capped: ReadonlySet<string>): ProfileOp[] {
  if (capped.size === 0) return [];
  const day = Math.floor(rec.decideTimeMs / DAY_MS);
  const ops: ProfileOp[] = [];
  for (const d of rec.decisions) if (d.outcome === 'RETURNED' && capped.has(d.treatmentId)) ops.push(['inc', capCounterField('RETURNED', d.treatmentId, day), 1]);
  return ops;
}

const NO_CAPS: ReadonlySet<string> = new Set();

/**
 * Same layering as events: the rows first (a job completes only after the insert holding
 * them succeeded; copies collapse on (project, response, treatment, surface)), then the RETURNED
 * cap counters through the profile script, guarded by the job's marker per user, so a retry
 * after a crash at any point counts each decision once. Returns the records stored.
 */
export async function processDecisionsJob(job: Job<DecisionsJob>, deps: DecisionsProcessorDeps): Promise<number> {
  const all = decisionRecordsOf(job.data);
  if (all === undefined) throw new UnrecoverableError('malformed decisions job payload');
  const dropped = await acceptedBeforeDeletion(deps.erased, all.map((r) => ({ projectId: r.projectId, userId: r.userId, receivedAt: r.decideTimeMs })));
  const records = all.filter((_, i) => !dropped[i]);
  if (records.length === 0) return 0;
  const ingest = toClickhouseDateTime64(deps.now());
  await deps.writer.write('decisions', records.flatMap((r) => decisionLines(r, ingest)));
  const units = await applyCapCounters(job.id!, records, deps);
  if (units.length > 0) {
    // the job is done with these markers once it completes; a duplicate execution still finds them for the grace
    await deps.profiles.expireJobMarkers(units, [], deps.markerGraceSeconds ?? 300).catch(() => undefined);
  }
  return records.length;
}

/** One script per user of the job (the marker is per job and user): its records' counters together. */
async function applyCapCounters(jobId: string, records: DecisionRecord[], deps: DecisionsProcessorDeps): Promise<AppliedUnit[]> {
  if (deps.returnedCaps === undefined) return [];
  const capsOf = new Map<string, ReadonlySet<string>>();
  for (const rec of records) if (!capsOf.has(rec.projectId)) capsOf.set(rec.projectId, NO_CAPS);
  await Promise.all([...capsOf.keys()].map(async (p) => capsOf.set(p, await deps.returnedCaps!(p))));
  const byUser = new Map<string, { projectId: string; userId: string; events: ProfileEvent[] }>();
  for (const rec of records) {
    const ops = returnedCapOps(rec, capsOf.get(rec.projectId)!);
    if (ops.length === 0) continue;
    const key = JSON.stringify([rec.projectId, rec.userId]);
    let entry = byUser.get(key);
    if (!entry) byUser.set(key, (entry = { projectId: rec.projectId, userId: rec.userId, events: [] }));
    entry.events.push({ ts: rec.decideTimeMs, ops });
  }
  const users = [...byUser.values()];
  await Promise.all(users.map((u) => deps.profiles.applyEvents(u.projectId, u.userId, jobId, u.events)));
  return users.map((u) => ({ projectId: u.projectId, userId: u.userId, id: jobId }));
}
