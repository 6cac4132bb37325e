import type { PropertyValue } from '../ingestion/index.js';
import { insertMarker, JOB_MARKER_TTL_SECONDS } from './insert-markers.js';
import { PROFILE_FIELDS } from './profile-layout.js';

/**
 * A counter or extreme kept in the user's profile hash, applied with the event that causes it:
 * `inc` adds, `min`/`max` keep the extreme, `incnew` adds only the first time `marker` is seen
 * (distinct counts). Every op stays inside the user's hash (one slot); project-wide counters
 * (ranking) have their own script (`RankingCounterStore`).
 */
export type ProfileOp = ['inc', string, number] | ['min', string, number] | ['max', string, number] | ['incnew', string, string, number];

export interface ProfileEvent {
  /**
   * Cross-job de-duplication id (`i:<insertId>`, or `m:<messageId>:<index>` for a Pub/Sub event
   * without one); absent: the event is only protected by the job marker.
   */
  dedupId?: string;
  /** Event time (ms): last-write-wins timestamp of its user properties. */
  ts: number;
  userProperties?: Record<string, PropertyValue>;
  ops?: ProfileOp[];
}

/*
 * The arguments of scripts/apply-events.lua, one atomic script per job and user: the job marker,
 * the per-insertId markers, the user-property writes, the aggregate updates and the profile's TTL
 * commit together or not at all. A retry of the job after a crash at any point therefore has
 * exactly the effect of one delivery: either the script ran (the job marker is there, the retry
 * changes nothing) or it did not (the retry applies it). Every key is in KEYS and carries the
 * user's hash tag.
 *
 * Arguments are positional strings, not JSON (no cjson tables per event), and identical ops of
 * a job's events are grouped: a job of 100 events counted in one daily field costs one HINCRBY
 * of the number of new events, not 100. An op applies as many times as the new (not
 * de-duplicated) events of its group, which is what applying it event by event would do:
 * `inc` adds per event, `min`/`max` are idempotent, and an `incnew` repeated with the same
 * marker counts once either way. The script's header lists the arguments in order.
 */

/** The positional arguments of the apply-events script and whether it needs the marker sets in KEYS. */
export function applyArgs(events: readonly ProfileEvent[], opts: { profileTtl: number; markersExpireAt: number }): { needsMarkers: boolean; args: string[] } {
  const markers: string[] = [];
  const groups = new Map<string, { op: ProfileOp; events: number[] }>();
  const byTuple = new Map<ProfileOp, { op: ProfileOp; events: number[] }>();
  const props: string[] = [];
  let needsMarkers = false;
  for (let i = 0; i < events.length; i++) {
    const e = events[i];
    if (e.dedupId === undefined) markers.push('');
    else {
      needsMarkers = true;
      markers.push(insertMarker(e.dedupId));
    }
    if (e.ops) {
      for (const op of e.ops) {
        // a provider hands the same tuple to the events it applies to alike (a day's count): found without a key
        let g = byTuple.get(op);
        if (g === undefined) {
          const key = op.join('\u0000');
          g = groups.get(key);
          if (g === undefined) groups.set(key, (g = { op, events: [] }));
          byTuple.set(op, g);
        }
        g.events.push(i + 1);
      }
    }
    if (e.userProperties) {
      for (const name in e.userProperties) props.push(String(i + 1), String(e.ts), name, JSON.stringify(e.userProperties[name]));
    }
  }
  const { alias, userProperty, userPropertyTime } = PROFILE_FIELDS;
  const args = [
    alias,
    userProperty,
    userPropertyTime,
    String(JOB_MARKER_TTL_SECONDS),
    String(opts.profileTtl),
    String(opts.markersExpireAt),
    String(events.length),
  ];
  for (const x of markers) args.push(x);
  args.push(String(groups.size));
  for (const { op, events: idx } of groups.values()) {
    args.push(op[0], String(op[1]), String(op[2]), op[3] === undefined ? '' : String(op[3]), String(idx.length));
    for (const i of idx) args.push(String(i));
  }
  args.push(String(props.length / 4));
  for (const x of props) args.push(x);
  return { needsMarkers, args };
}
