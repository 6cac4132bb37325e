/**
 * Every Redis key of the service, in one place, under the configured prefix.
 *
 * Ids from requests (project ids, user ids, insert ids, key ids, job ids, …) enter key names only
 * through `escapeKeyPart`, which percent-encodes `%`, `{`, `}` and `:`: an escaped part contains
 * neither the separator nor a hash-tag brace, and the encoding is reversible, so two distinct ids
 * can never build the same key, whatever they contain (`v` + `w}:profile` vs `v}:dedup:i:w`).
 * Ordinary ids stay readable in `redis-cli`.
 *
 * Slot layout (Redis Cluster, REDIS_CLUSTER_NODES): every script and multi-key command touches
 * keys of one hash tag only, and receives them in KEYS.
 * - `{m}`: ALL management state, global and per project (`projects`, `apikey:<id>`, `seq:*`,
 *   `pubsub-sources`, `datafield-created`, and each project's record, keys, surfaces, types,
 *   treatments, data fields, catalogue version and change log). It is small (kilobytes to a few
 *   megabytes a project) and written rarely, so one slot holds it, and every management write
 *   (which combines a global key such as `apikey:<id>` or `seq:*` with a project's keys) and the
 *   catalogue version MGET across projects are single-slot.
 * - `{<project>:<user>}`: one user's profile, job markers, insertId markers and target-action views: the per-user state
 *   that outgrows one Redis, spread over the whole cluster; the ingest script touches one user.
 * - `{<project>}`: the project's ranking counters and their job markers (one ingest script), and
 *   its deleted users (`deleted-users`, `pending-deletions`).
 * - BullMQ's keys: prefix `{<prefix>}:bull` on a cluster (see `bullPrefix`).
 * On a single Redis the tags change nothing; the layout is the same so one code path serves both.
 */
export interface RedisKeys {
  readonly prefix: string;
  projects(): string;
  project(projectId: string): string;
  apiKey(keyId: string): string;
  projectApiKeys(projectId: string): string;
  seq(kind: 'treatment' | 'treatmentType' | 'dataField' | 'mutualExclusionGroup' | 'eventSchema'): string;
  surfaces(projectId: string): string;
  treatmentTypes(projectId: string): string;
  treatmentTypeNames(projectId: string): string;
  treatments(projectId: string): string;
  externalTreatmentIds(projectId: string): string;
  mutualExclusionGroups(projectId: string): string;
  dataFields(projectId: string): string;
  dataFieldNames(projectId: string): string;
  dataFieldParams(projectId: string): string;
  /** Event schemas: event name → EventSchema JSON. */
  eventSchemas(projectId: string): string;
  /** Event schemas by id: eventId → event name. */
  eventSchemaIds(projectId: string): string;
  catalogVersion(projectId: string): string;
  changes(projectId: string): string;
  pubSubSources(): string;
  profile(projectId: string, userId: string): string;
  /** Marker of a job (or a request of a merged job) applied to the user's profile; lives while the job can be retried. */
  jobMarker(projectId: string, userId: string, jobId: string): string;
  /** Set of the compact insertId markers of a user's events that arrived on one UTC day (`YYYY-MM-DD`). */
  insertMarkers(projectId: string, userId: string, day: string): string;
  /**
   * Hash of the user's ingest jobs between their rows and their profile update (job marker key →
   * epoch ms), and `@applied`: when a job last updated the profile. A recompute leaves such a user
   * for a second read (workers/aggregation/recompute.ts).
   */
  ingestInFlight(projectId: string, userId: string): string;
  /** Hash of the user's last views of treatments with a target action and the conversions claimed from them. */
  targetActionViews(projectId: string, userId: string): string;
  /** Hash of the ranking policy's counters: `v:<surface>:<treatmentId>` (views), `a:<surface>:<treatmentId>` (actions). */
  rankingStats(projectId: string): string;
  /** Marker of a job whose ranking counter updates were applied (in the ranking hash's slot). */
  rankingJobMarker(projectId: string, jobId: string): string;
  /** Every key of one user starts with this (the user's hash tag); DeleteUserData removes them all. */
  userKeyPrefix(projectId: string, userId: string): string;
  /** Sorted set of the project's deleted users (member: user id, score: deletion time ms), in the project's slot. */
  deletedUsers(projectId: string): string;
  /** Hash of deleted users whose ClickHouse rows may not be gone yet (user id → deletion time ms), in the project's slot. */
  pendingUserDeletions(projectId: string): string;
  /** Pub/Sub channel: a project's catalogue or keys changed (payload: JSON message). */
  invalidationChannel(): string;
  /** Stream of new params-resolved aggregation data fields (`projectId`, `dataFieldId`) for the backfill worker. */
  dataFieldCreated(): string;
  /** Hash of the Redis `run_id` last seen per node (`host:port`): a change means Redis restarted. */
  redisRunIds(): string;
}

const UNSAFE_ANY = /[%{}:]/;
const UNSAFE_ALL = /[%{}:]/g;
const ENCODED: Record<string, string> = { '%': '%25', '{': '%7B', '}': '%7D', ':': '%3A' };

/** Percent-encodes `%`, `{`, `}` and `:` (linear time; the common case returns the id itself). */
export function escapeKeyPart(id: string): string {
  return UNSAFE_ANY.test(id) ? id.replace(UNSAFE_ALL, (c) => ENCODED[c]) : id;
}

/** Inverse of `escapeKeyPart`. */
export function unescapeKeyPart(part: string): string {
  return part.includes('%') ? decodeURIComponent(part) : part;
}

export function redisKeys(prefix: string): RedisKeys {
  const p = `${prefix}:`;
  /** Management state: one hash tag for all of it (see the slot layout above). */
  const m = `${p}{m}:`;
  const proj = (projectId: string) => `${m}p:${escapeKeyPart(projectId)}`;
  const ranking = (projectId: string) => `${p}p:{${escapeKeyPart(projectId)}}`;
  const user = (projectId: string, userId: string) => `${p}u:{${escapeKeyPart(projectId)}:${escapeKeyPart(userId)}}`;
  return {
    prefix,
    projects: () => `${m}projects`,
    project: (id) => `${proj(id)}:project`,
    apiKey: (keyId) => `${m}apikey:${escapeKeyPart(keyId)}`,
    projectApiKeys: (id) => `${proj(id)}:apikeys`,
    seq: (kind) => `${m}seq:${kind}`,
    surfaces: (id) => `${proj(id)}:surfaces`,
    treatmentTypes: (id) => `${proj(id)}:ttypes`,
    treatmentTypeNames: (id) => `${proj(id)}:ttype-names`,
    treatments: (id) => `${proj(id)}:treatments`,
    externalTreatmentIds: (id) => `${proj(id)}:ext-ids`,
    mutualExclusionGroups: (id) => `${proj(id)}:meg`,
    dataFields: (id) => `${proj(id)}:datafields`,
    dataFieldNames: (id) => `${proj(id)}:datafield-names`,
    dataFieldParams: (id) => `${proj(id)}:datafield-params`,
    eventSchemas: (id) => `${proj(id)}:event-schemas`,
    eventSchemaIds: (id) => `${proj(id)}:event-schema-ids`,
    catalogVersion: (id) => `${proj(id)}:version`,
    changes: (id) => `${proj(id)}:changes`,
    pubSubSources: () => `${m}pubsub-sources`,
    profile: (id, userId) => `${user(id, userId)}:profile`,
    jobMarker: (id, userId, jobId) => `${user(id, userId)}:job:${escapeKeyPart(jobId)}`,
    insertMarkers: (id, userId, day) => `${user(id, userId)}:ins:${escapeKeyPart(day)}`,
    ingestInFlight: (id, userId) => `${user(id, userId)}:inflight`,
    targetActionViews: (id, userId) => `${user(id, userId)}:ta-views`,
    rankingStats: (id) => `${ranking(id)}:ranking`,
    rankingJobMarker: (id, jobId) => `${ranking(id)}:ranking-job:${escapeKeyPart(jobId)}`,
    userKeyPrefix: (id, userId) => `${user(id, userId)}:`,
    deletedUsers: (id) => `${ranking(id)}:deleted-users`,
    pendingUserDeletions: (id) => `${ranking(id)}:pending-deletions`,
    invalidationChannel: () => `${p}invalidate`,
    dataFieldCreated: () => `${m}datafield-created`,
    redisRunIds: () => `${m}redis-run-ids`,
  };
}
