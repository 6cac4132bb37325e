/** Change-log entries: the diff of a change and its stored fields (pure; change-log.store reads them back). */
/** One audit-trail entry: who changed what, when, and what it was before and after. */
export interface ChangeEntry {
  changeId: string;
  time: string;
  actor: string;
  operation: string;
  resourceKind: string;
  resourceId: string;
  /** The fields that changed, as they were (null: the resource was created). */
  before: unknown;
  /** The fields that changed, as they are now (the whole record on creation). */
  after: unknown;
  /** The entry exceeded CHANGE_ENTRY_MAX_BYTES: its largest values were replaced by a note. */
  truncated?: boolean;
}

/** Upper bound of `before` + `after` of one entry, in bytes of JSON. */
export const CHANGE_ENTRY_MAX_BYTES = 16 * 1024;

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

const isObject = (v: unknown): v is Record<string, Json> => typeof v === 'object' && v !== null && !Array.isArray(v);
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
const versioned = (v: unknown): v is Record<string, Json>[] => Array.isArray(v) && v.every((x) => isObject(x) && x.versionNumber !== undefined);

/**
 * What changed between two records: the differing fields, recursively through objects; a list of
 * versions (objects with `versionNumber`) keeps only the versions added or changed. So an edit of
 * a treatment with many versions records one version, not all of them (no entry grows with the
 * number of edits before it).
 */
export function changeDiff(before: unknown, after: unknown): { before: Json; after: Json } {
  if (isObject(before) && isObject(after)) {
    const b: Record<string, Json> = {};
    const a: Record<string, Json> = {};
    for (const k of new Set([...Object.keys(before), ...Object.keys(after)])) {
      if (same(before[k], after[k])) continue;
      if (k in before && k in after) {
        const d = changeDiff(before[k], after[k]);
        b[k] = d.before;
        a[k] = d.after;
      } else if (k in before) b[k] = before[k];
      else a[k] = after[k];
    }
    return { before: b, after: a };
  }
  if (versioned(before) && versioned(after)) {
    const byNumber = (list: Record<string, Json>[]) => new Map(list.map((v) => [String(v.versionNumber), v]));
    const bm = byNumber(before);
    const am = byNumber(after);
    return {
      before: before.filter((v) => !same(v, am.get(String(v.versionNumber)))),
      after: after.filter((v) => !same(v, bm.get(String(v.versionNumber)))),
    };
  }
  return { before: (before ?? null) as Json, after: (after ?? null) as Json };
}

/**
 * Caps a side of an entry: top-level values are kept smallest first while they fit the budget;
 * the others become `"<truncated: N bytes>"`.
 */
function capSide(value: Json, budget: number): Json {
  const whole = JSON.stringify(value);
  if (Buffer.byteLength(whole) <= budget) return value;
  const note = (n: number) => `<truncated: ${n} bytes>`;
  if (!isObject(value)) return note(Buffer.byteLength(whole));
  const sized = Object.entries(value).map(([k, v]) => ({ k, v, n: Buffer.byteLength(JSON.stringify(v)) + Buffer.byteLength(k) + 6 }));
  sized.sort((x, y) => x.n - y.n);
  const out: Record<string, Json> = {};
  let used = 2;
  for (const { k, v, n } of sized) {
    const kept = used + n <= budget;
    out[k] = kept ? v : note(n);
    used += kept ? n : Buffer.byteLength(k) + 40;
  }
  return out;
}

export function changeFields(input: Omit<ChangeEntry, 'changeId' | 'truncated'>): Record<string, string> {
  const d =
    input.before === null || input.before === undefined ? { before: null, after: (input.after ?? null) as Json } : changeDiff(input.before, input.after);
  let before = JSON.stringify(d.before);
  let after = JSON.stringify(d.after);
  const fields: Record<string, string> = {
    time: input.time,
    actor: input.actor,
    operation: input.operation,
    resourceKind: input.resourceKind,
    resourceId: input.resourceId,
  };
  if (Buffer.byteLength(before) + Buffer.byteLength(after) > CHANGE_ENTRY_MAX_BYTES) {
    const half = CHANGE_ENTRY_MAX_BYTES / 2 - 64;
    before = JSON.stringify(capSide(d.before, half));
    after = JSON.stringify(capSide(d.after, half));
    fields.truncated = '1';
  }
  fields.before = before;
  fields.after = after;
  return fields;
}
