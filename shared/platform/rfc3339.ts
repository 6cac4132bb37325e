/**
 * The one RFC 3339 parser for every timestamp the service reads from a client, on every path
 * (HTTP bodies, rule values, contextual attributes, Pub/Sub payloads, stored rows).
 *
 * Accepted: `YYYY-MM-DDTHH:MM:SS[.f{1,9}](Z|+HH:MM|-HH:MM)`, `T` and `Z` in either case, or a
 * space instead of `T` (RFC 3339 section 5.6 allows it "for the sake of readability"). Rejected:
 * anything else, including impossible dates (Feb 30), 24:00, a leap second (:60, which no
 * JavaScript time can hold), a missing offset, offsets beyond ±23:59 and surrounding spaces.
 * A fixed-layout scan with no regular expression, so its cost is constant whatever the input.
 */

export interface Rfc3339Parts {
  /** Epoch ms of the whole second (UTC). */
  secondMs: number;
  /** The fractional digits as written (0 to 9 digits, no dot). */
  fraction: string;
}

const MS_PER_DAY = 86_400_000;

function digits(text: string, from: number, count: number): number {
  let n = 0;
  for (let i = from; i < from + count; i++) {
    const c = text.charCodeAt(i) - 48;
    if (!(c >= 0 && c <= 9)) return -1;
    n = n * 10 + c;
  }
  return n;
}

function isLeapYear(y: number): boolean {
  return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

export function daysInMonth(year: number, month: number): number {
  return month === 2 && isLeapYear(year) ? 29 : DAYS_IN_MONTH[month - 1];
}

/** Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
function daysFromCivil(y: number, m: number, d: number): number {
  const yy = m <= 2 ? y - 1 : y;
  const era = Math.floor(yy / 400);
  const yoe = yy - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146_097 + doe - 719_468;
}

/** The parts of a valid RFC 3339 timestamp, or undefined. */
export function scanRfc3339(text: string): Rfc3339Parts | undefined {
  if (typeof text !== 'string' || text.length < 20 || text.length > 35) return undefined;
  const year = digits(text, 0, 4);
  const month = digits(text, 5, 2);
  const day = digits(text, 8, 2);
  const hour = digits(text, 11, 2);
  const minute = digits(text, 14, 2);
  const second = digits(text, 17, 2);
  const t = text[10];
  if (year < 0 || text[4] !== '-' || text[7] !== '-' || (t !== 'T' && t !== 't' && t !== ' ') || text[13] !== ':' || text[16] !== ':') return undefined;
  if (month < 1 || month > 12 || day < 1 || hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59) return undefined;
  if (day > daysInMonth(year, month)) return undefined;
  let i = 19;
  let fraction = '';
  if (text[i] === '.') {
    const start = ++i;
    while (i < text.length && i - start < 10 && text.charCodeAt(i) >= 48 && text.charCodeAt(i) <= 57) i++;
    if (i === start || i - start > 9) return undefined;
    fraction = text.slice(start, i);
  }
  let offsetMinutes = 0;
  const sign = text[i];
  if (sign === 'Z' || sign === 'z') {
    if (i + 1 !== text.length) return undefined;
  } else if (sign === '+' || sign === '-') {
    if (i + 6 !== text.length || text[i + 3] !== ':') return undefined;
    const oh = digits(text, i + 1, 2);
    const om = digits(text, i + 4, 2);
    if (oh < 0 || oh > 23 || om < 0 || om > 59) return undefined;
    offsetMinutes = (sign === '-' ? -1 : 1) * (oh * 60 + om);
  } else return undefined;
  const secondMs = daysFromCivil(year, month, day) * MS_PER_DAY + ((hour * 60 + minute - offsetMinutes) * 60 + second) * 1000;
  return { secondMs, fraction };
}

/** Epoch milliseconds (sub-millisecond digits dropped), or undefined when not valid RFC 3339. */
export function parseRfc3339(text: string): number | undefined {
  const p = scanRfc3339(text);
  if (p === undefined) return undefined;
  return p.fraction === '' ? p.secondMs : p.secondMs + Number(`${p.fraction}00`.slice(0, 3));
}

/** Epoch milliseconds keeping sub-millisecond digits as a fraction (rule comparisons), or undefined. */
export function parseRfc3339Exact(text: string): number | undefined {
  const p = scanRfc3339(text);
  if (p === undefined) return undefined;
  return p.fraction === '' ? p.secondMs : p.secondMs + Number(`0.${p.fraction}`) * 1000;
}

/** UTC `...Z` with every fractional digit given (trailing zeros dropped), or undefined. */
export function canonicalRfc3339(text: string): string | undefined {
  const p = scanRfc3339(text);
  if (p === undefined) return undefined;
  const date = new Date(p.secondMs);
  if (Number.isNaN(date.getTime())) return undefined;
  let end = p.fraction.length;
  while (end > 0 && p.fraction[end - 1] === '0') end--;
  const frac = p.fraction.slice(0, end);
  return `${date.toISOString().slice(0, -5)}${frac ? `.${frac}` : ''}Z`;
}
