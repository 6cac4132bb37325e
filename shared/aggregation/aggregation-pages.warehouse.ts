import type { PropertyValue } from '../ingestion/index.js';
import { parseRfc3339 } from '../platform/rfc3339.js';
import type { Warehouse } from '../platform/warehouse/warehouse.js';
import type { AggregationKind, AggregationPageQuery, AggregationPageRow, AggregationRead, AggregationSource } from './types.js';

/**
 * The reads of the aggregation recompute: one GROUP BY per data field over `events FINAL` /
 * `interactions FINAL`, paged by user_id ranges so memory stays bounded whatever the project's
 * size (chDB materialises a whole result, so one streamed query would not be enough).
 */

interface Filter {
  table: 'events' | 'interactions';
  ts: string;
  where: string;
  params: Record<string, unknown>;
}

function propertyCondition(i: number, want: PropertyValue, params: Record<string, unknown>): string {
  const k = `pk${i}`;
  const v = `pv${i}`;
  const at = (member: string) => `event_properties, {${k}:String}, '${member}'`;
  if ('longValue' in want) {
    params[v] = want.longValue;
    // stored as a decimal string (canonical int64); quotes stripped in case a writer used a number
    return `replaceAll(JSONExtractRaw(${at('longValue')}), '"', '') = {${v}:String}`;
  }
  if ('doubleValue' in want) {
    params[v] = want.doubleValue;
    return `JSONHas(${at('doubleValue')}) AND JSONExtractFloat(${at('doubleValue')}) = {${v}:Float64}`;
  }
  if ('stringValue' in want) {
    params[v] = want.stringValue;
    return `JSONHas(${at('stringValue')}) AND JSONExtractString(${at('stringValue')}) = {${v}:String}`;
  }
  if ('booleanValue' in want) {
    params[v] = want.booleanValue ? 'true' : 'false';
    return `JSONExtractRaw(${at('booleanValue')}) = {${v}:String}`;
  }
  params[v] = parseRfc3339(want.timestampValue) ?? 0;
  return `toUnixTimestamp64Milli(parseDateTime64BestEffortOrNull(JSONExtractString(${at('timestampValue')}), 3, 'UTC')) = {${v}:Int64}`;
}

function sourceFilter(projectId: string, source: AggregationSource): Filter {
  const params: Record<string, unknown> = { projectId };
  if (source.table === 'events') {
    params.eventName = source.eventName;
    const conds = ['project_id = {projectId:String}', 'event_name = {eventName:String}'];
    Object.entries(source.properties).forEach(([name, want], i) => {
      params[`pk${i}`] = name;
      conds.push(propertyCondition(i, want, params));
    });
    return { table: 'events', ts: 'client_event_ts', where: conds.join(' AND '), params };
  }
  params.types = source.interactionTypes;
  const conds = ['project_id = {projectId:String}', 'interaction_type IN {types:Array(String)}'];
  if (source.treatmentId !== undefined) {
    params.treatmentId = source.treatmentId;
    conds.push('treatment_id = {treatmentId:String}');
  }
  if (source.surface !== undefined) {
    params.surface = source.surface;
    conds.push('surface = {surface:String}');
  }
  return { table: 'interactions', ts: 'interaction_time', where: conds.join(' AND '), params };
}

/**
 * The rows of users deleted (pending: their mutations may not have finished) and ingested up to
 * their deletion are left out of every read, so a recompute never restores a value from them;
 * rows ingested after the deletion (the new profile) still count.
 */
function readFilter(read: AggregationRead): Filter {
  const f = sourceFilter(read.projectId, read.source);
  if (read.deletedUsers.size === 0) return f;
  const deletedAt = `fromUnixTimestamp64Milli(arrayElement({delMs:Array(Int64)}, indexOf({delUsers:Array(String)}, user_id)), 'UTC')`;
  const cond = `(indexOf({delUsers:Array(String)}, user_id) = 0 OR ingest_ts > ${deletedAt})`;
  return { ...f, where: `${f.where} AND ${cond}`, params: { ...f.params, delUsers: [...read.deletedUsers.keys()], delMs: [...read.deletedUsers.values()] } };
}

const FINAL_SETTINGS = 'SETTINGS do_not_merge_across_partitions_select_final = 1';

/** Rows whose time the page reads: only counts are limited to the window (first/latest are all-time). */
function timeFilter(f: Filter, kind: AggregationKind): string {
  return kind === 'dc' ? ` AND ${f.ts} >= fromUnixTimestamp64Milli({rangeStartMs:Int64}, 'UTC')` : '';
}

/**
 * The last user ids of up to `pages` pages of `pageUsers` users after `after`; `rest`: more users
 * follow. One DISTINCT scan finds the bounds of many pages instead of one scan per page.
 */
export async function aggregationPageEnds(
  warehouse: Pick<Warehouse, 'query'>,
  read: AggregationRead,
  after: string,
  pageUsers: number,
  pages: number,
): Promise<{ uppers: string[]; rest: boolean }> {
  const f = readFilter(read);
  const limit = pageUsers * pages;
  const [row] = await warehouse.query<{ n: number | string; uppers: string[] }>(
    `SELECT length(ids) AS n, arrayFilter((u, i) -> i % {pageUsers:UInt32} = 0 OR i = length(ids), ids, arrayEnumerate(ids)) AS uppers
            FROM (SELECT arraySort(groupArray(user_id)) AS ids FROM (
              SELECT DISTINCT user_id FROM ${f.table}
              WHERE ${f.where} AND user_id > {after:String}${timeFilter(f, read.kind)}
              ORDER BY user_id LIMIT {limit:UInt32}))`,
    { ...f.params, after, limit, pageUsers, rangeStartMs: read.rangeStartMs },
  );
  return { uppers: row?.uppers ?? [], rest: row !== undefined && Number(row.n) === limit };
}

function pageSql(f: Filter, kind: AggregationKind, distinct: boolean, some: boolean): string {
  const range = `${f.where} AND user_id > {after:String} AND user_id <= {upper:String}${some ? ' AND user_id IN {userIds:Array(String)}' : ''}`;
  if (kind === 'ft' || kind === 'lt') {
    const fn = kind === 'ft' ? 'min' : 'max';
    return `SELECT user_id, toString(toUnixTimestamp64Milli(${fn}(${f.ts}))) AS ms FROM ${f.table} FINAL
            WHERE ${range} GROUP BY user_id ORDER BY user_id ${FINAL_SETTINGS}`;
  }
  if (distinct) {
    // first-seen day of each tracking id over all history; only those first seen in the range kept
    return `SELECT user_id, groupArray((day, trk)) AS marks FROM (
              SELECT user_id, treatment_tracking_id AS trk, min(${f.ts}) AS first_ts, toYYYYMMDD(first_ts, 'UTC') AS day
              FROM ${f.table} FINAL WHERE ${range}
              GROUP BY user_id, trk HAVING first_ts >= fromUnixTimestamp64Milli({rangeStartMs:Int64}, 'UTC'))
            GROUP BY user_id ORDER BY user_id ${FINAL_SETTINGS}`;
  }
  // The window's days as a flat list of strings, ready to be sent to Redis: no per-day work in
  // JavaScript (users with grace days only get an empty list: their stale days are removed).
  return `SELECT user_id, arrayFlatten(groupArrayIf([toString(day), toString(c)], day >= {windowStartDay:UInt32})) AS dayPairs FROM (
            SELECT user_id, toYYYYMMDD(${f.ts}, 'UTC') AS day, count() AS c
            FROM ${f.table} FINAL WHERE ${range}${timeFilter(f, kind)}
            GROUP BY user_id, day)
          GROUP BY user_id ORDER BY user_id ${FINAL_SETTINGS}`;
}

/** One data field's state per user of a page of users. */
export function aggregationPage(warehouse: Pick<Warehouse, 'query'>, q: AggregationPageQuery): Promise<AggregationPageRow[]> {
  const f = readFilter(q);
  const params = { ...f.params, after: q.after, upper: q.upper, rangeStartMs: q.rangeStartMs, windowStartDay: q.windowStartDay, userIds: q.userIds ?? [] };
  return warehouse.query<AggregationPageRow>(pageSql(f, q.kind, q.distinct, q.userIds !== undefined), params);
}
