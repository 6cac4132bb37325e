/**
 * Every Redis key of the service, in one place, under the configured prefix. Per-project keys
 * share the `{projectId}` hash tag so that a project's management state can move to one slot of
 * a Redis Cluster and still be changed atomically by one script.
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
  /** Event schemas (D35): event name → EventSchema JSON. */
  eventSchemas(projectId: string): string;
  /** Event schemas by id: eventId → event name. */
  eventSchemaIds(projectId: string): string;
  catalogVersion(projectId: string): string;
  changes(projectId: string): string;
  pubSubSources(): string;
  profile(projectId: string, userId: string): string;
  dedup(projectId: string, userId: string, insertId: string): string;
  /** Hash of the ranking policy's counters: `v:<surface>:<treatmentId>` (views), `a:<surface>:<treatmentId>` (actions). */
  rankingStats(projectId: string): string;
  /** Pub/Sub channel: a project's catalogue or keys changed (payload: JSON message). */
  invalidationChannel(): string;
  /** Stream of new params-resolved aggregation data fields (`projectId`, `dataFieldId`) for the backfill worker. */
  dataFieldCreated(): string;
}

export function redisKeys(prefix: string): RedisKeys {
  const p = `${prefix}:`;
  const proj = (projectId: string) => `${p}p:{${projectId}}`;
  return {
    prefix,
    projects: () => `${p}projects`,
    project: (id) => `${proj(id)}:project`,
    apiKey: (keyId) => `${p}apikey:${keyId}`,
    projectApiKeys: (id) => `${proj(id)}:apikeys`,
    seq: (kind) => `${p}seq:${kind}`,
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
    pubSubSources: () => `${p}pubsub-sources`,
    profile: (id, userId) => `${p}u:{${id}:${userId}}:profile`,
    dedup: (id, userId, insertId) => `${p}u:{${id}:${userId}}:dedup:${insertId}`,
    rankingStats: (id) => `${proj(id)}:ranking`,
    invalidationChannel: () => `${p}invalidate`,
    dataFieldCreated: () => `${p}datafield-created`,
  };
}
