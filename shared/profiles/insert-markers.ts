import { hash } from 'node:crypto';
import { JOB_MARKER_TTL_SECONDS } from '../platform/job-retries.js';

export { JOB_MARKER_TTL_SECONDS };

/**
 * An insertId is de-duplicated for at least 7 days, whatever timestamp its retries carry.
 * Markers are kept per user and per UTC day of *arrival* (one set a user a day, however many
 * event days a request names); a day's set expires 8 days after that day ends, and a new event is
 * looked up in the sets of the last INSERT_MARKER_DAYS days. So a marker is found for 8 to 9 days
 * after it was stored, and each user costs at most 9 marker sets.
 */
export const INSERT_MARKER_TTL_SECONDS = 8 * 24 * 3600;
export const INSERT_MARKER_DAYS = 9;

const DAY_MS = 86_400_000;

/**
 * The compact insertId marker: the first 8 bytes of SHA-1 of the de-duplication id as a signed
 * 64-bit decimal, so a day's set is a Redis intset (8 bytes per marker up to 512 markers a user
 * a day, `set-max-intset-entries`). Collisions within one user's day: about n²/2^65.
 */
export function insertMarker(dedupId: string): string {
  // The one-shot hash, as hex: the events worker hashes every insertId, and a digest as a Buffer
  // costs an allocation of its own (2.4-3.6 µs a marker on this machine against 1.6-1.7 through
  // hex; the same value, so the markers already stored still match)
  return BigInt.asIntN(64, BigInt(`0x${hash('sha1', dedupId).slice(0, 16)}`)).toString();
}

/**
 * The arrival days whose marker sets a job consults, newest (today, where new markers go) first,
 * as UTC `YYYY-MM-DD`, and when today's set expires (epoch s).
 */
export function insertMarkerDays(nowMs: number): { days: string[]; expireAt: number } {
  const today = Math.floor(nowMs / DAY_MS) * DAY_MS;
  // every job asks, and the answer changes once a day
  if (today !== markerDays.today) {
    const days = Array.from({ length: INSERT_MARKER_DAYS }, (_, i) => new Date(today - i * DAY_MS).toISOString().slice(0, 10));
    markerDays = { today, answer: Object.freeze({ days: Object.freeze(days) as string[], expireAt: (today + DAY_MS) / 1000 + INSERT_MARKER_TTL_SECONDS }) };
  }
  return markerDays.answer;
}

let markerDays: { today: number; answer: { days: string[]; expireAt: number } } = { today: NaN, answer: { days: [], expireAt: 0 } };
