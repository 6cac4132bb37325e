/** The decision log's columns: one row of `decisions` a decision, of `decisions_input` a response. */
const DECISION_COLUMNS = [
  'project_id',
  'user_id',
  'response_id',
  'treatment_id',
  'version_number',
  'surface',
  'rank',
  'outcome',
  'decide_time',
  'ingest_ts',
] as const;

/**
 * The ClickHouse tables of infra/clickhouse/migrations, as the engine writes them: each table's
 * columns in the order of its JSONCompactEachRow lines (one array per row, columns named once:
 * cheaper to build and to parse than JSONEachRow, about a quarter less insert time in chDB). The
 * row formats, and the mapping from each feature's payloads to them, live with the feature
 * (`shared/<room>/*.warehouse.ts`), which checks its row type against these columns.
 */
export const TABLE_COLUMNS = {
  events: [
    'project_id',
    'user_id',
    'event_name',
    'dedup_key',
    'insert_id',
    'client_event_ts',
    'server_received_ts',
    'ingest_ts',
    'event_properties',
    'user_properties',
    'session_id',
    'pre_login_temp_user_id',
    'country',
    'region',
    'city',
    'ip_address',
    'device_id',
    'app_version_id',
    'source',
  ],
  interactions: [
    'project_id',
    'user_id',
    'treatment_id',
    'treatment_tracking_id',
    'surface',
    'interaction_type',
    'interaction_time',
    'action_name',
    'dedup_key',
    'ingest_ts',
  ],
  dead_letters: ['project_id', 'message_id', 'source', 'reason', 'receive_time', 'data_type', 'payload_base64', 'payload_bytes', 'payload_sha256', 'user_ids'],
  user_attribute_updates: ['project_id', 'user_id', 'dedup_key', 'update_ts', 'user_properties', 'source', 'ingest_ts'],
  decisions: DECISION_COLUMNS,
  /**
   * What the decision log writes: one row per response, treatment_id to outcome as arrays of its
   * decisions; stored nowhere, each decision becomes a row of `decisions` (0009_decisions_input.sql).
   */
  decisions_input: DECISION_COLUMNS,
} as const;

export type ClickhouseTable = keyof typeof TABLE_COLUMNS;

/**
 * The per-user tables and the time column their TTL counts from (RETENTION_DAYS; a user's
 * deletion deletes from each). `dead_letters` names its users in `user_ids` instead (see
 * shared/profiles/user-data.warehouse.ts).
 */
export const USER_TABLES = [
  { table: 'events', ttlColumn: 'client_event_ts' },
  { table: 'interactions', ttlColumn: 'interaction_time' },
  { table: 'decisions', ttlColumn: 'decide_time' },
  { table: 'user_attribute_updates', ttlColumn: 'update_ts' },
] as const;

/**
 * Rows given as value arrays (TABLE_COLUMNS order) as one chunk of JSONCompactEachRow rows
 * separated by commas, which ClickHouse reads like newlines: one JSON.stringify for all of them,
 * so no string per row and no join (eventRowsChunk, decisionRowsChunk).
 */
export function rowsChunk(rows: readonly unknown[][]): string {
  return JSON.stringify(rows).slice(1, -1);
}

/** The JSONCompactEachRow line of a row object of `table` (its values in TABLE_COLUMNS order). */
export function rowLine(table: ClickhouseTable, row: object): string {
  return JSON.stringify(TABLE_COLUMNS[table].map((c) => (row as Record<string, unknown>)[c]));
}
