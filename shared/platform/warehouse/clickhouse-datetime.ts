import { parseRfc3339 } from '../rfc3339.js';

/** Times as ClickHouse's DateTime64 columns take them in JSON rows: 'YYYY-MM-DD hh:mm:ss.fff' (UTC). */

// DateTime64's range; outside it ClickHouse would clamp or wrap silently.
const MIN_MS = Date.UTC(1900, 0, 1);
const MAX_MS = Date.UTC(2300, 0, 1) - 1;

function toEpochMs(value: number | string): number {
  // one strict parser: an offset is required (Date.parse would use the local time zone)
  const ms = typeof value === 'number' ? value : parseRfc3339(value);
  if (ms === undefined || !Number.isFinite(ms) || ms < MIN_MS || ms > MAX_MS) {
    throw new RangeError(`timestamp ${JSON.stringify(value)} is not an RFC 3339 time between 1900 and 2299`);
  }
  return Math.floor(ms);
}

const DAY_MS = 86_400_000;
// The ingest hot path formats millions of timestamps, nearly all on a handful of days: the date
// part is formatted once per day, the time of day by arithmetic (no Date, no ISO string slicing).
let cachedDay = NaN;
let cachedDate = '';
const pad2 = (n: number): string => (n < 10 ? `0${n}` : `${n}`);

function formatMs(ms: number): string {
  const day = Math.floor(ms / DAY_MS);
  if (day !== cachedDay) {
    cachedDate = new Date(day * DAY_MS).toISOString().slice(0, 10);
    cachedDay = day;
  }
  let rest = ms - day * DAY_MS;
  const h = Math.floor(rest / 3_600_000);
  rest -= h * 3_600_000;
  const m = Math.floor(rest / 60_000);
  rest -= m * 60_000;
  const s = Math.floor(rest / 1000);
  const f = rest - s * 1000;
  return `${cachedDate} ${pad2(h)}:${pad2(m)}:${pad2(s)}.${f < 10 ? '00' : f < 100 ? '0' : ''}${f}`;
}

/** Epoch ms or an RFC 3339 string → 'YYYY-MM-DD hh:mm:ss.sss' (UTC). @throws RangeError */
export function toClickhouseDateTime64(value: number | string): string {
  return formatMs(toEpochMs(value));
}

/** Microseconds since the epoch (int64 as number, string or bigint) → 'YYYY-MM-DD hh:mm:ss.ffffff'. */
export function microsToClickhouseDateTime64(micros: number | string | bigint): string {
  let us: bigint;
  try {
    us = BigInt(micros);
  } catch {
    throw new RangeError(`"${String(micros)}" is not an integer number of microseconds`);
  }
  const fraction = ((us % 1_000_000n) + 1_000_000n) % 1_000_000n;
  const seconds = (us - fraction) / 1_000_000n;
  const base = toClickhouseDateTime64(Number(seconds) * 1000).slice(0, 19);
  return `${base}.${fraction.toString().padStart(6, '0')}`;
}
