/** Text forms of rule values (rhs values, profile JSON strings): shared by rule compilation and value reading. */
import { parseRfc3339Exact } from '../platform/rfc3339.js';

export const INTEGER_TEXT = /^[+-]?\d+$/;
export const NUMBER_TEXT = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

export function parseNumber(text: string): number | undefined {
  const trimmed = text.trim();
  if (!NUMBER_TEXT.test(trimmed)) return undefined;
  const n = Number(trimmed);
  return Number.isFinite(n) ? n : undefined;
}

export function parseBooleanText(text: string): boolean | undefined {
  const lower = text.trim().toLowerCase();
  return lower === 'true' ? true : lower === 'false' ? false : undefined;
}

/** Epoch seconds or RFC 3339, as epoch milliseconds. */
export function parseTimestampText(text: string): number | undefined {
  const seconds = parseNumber(text);
  return seconds !== undefined ? seconds * 1000 : parseRfc3339Exact(text.trim());
}

export function tryParseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
