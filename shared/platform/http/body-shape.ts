/// <reference lib="es2024.string" />
import { invalidField, type InvalidArgumentError } from '../errors.js';

/**
 * Structural limits of every JSON request body (`/v1` and `/admin/v1`), checked right after
 * JSON parsing and before anything recursive (snake_case rewriting, schema validation, handlers)
 * walks the body, so no body can exhaust the stack or make a walk super-linear.
 *
 * - Depth: the deepest legitimate body (InsertTreatment's content, a data field's property
 *   filter) nests about 6 levels; 32 leaves room for any future shape.
 * - Key length: every name the schemas accept is at most 256 characters (field names are far
 *   shorter; user-data map keys such as event and user property names are capped at 256 by the
 *   schemas), so a longer key can never be valid and is refused before it is rewritten.
 */
export const MAX_BODY_DEPTH = 32;
export const MAX_KEY_LENGTH = 256;
/**
 * Members of one object and items of one array. The largest legitimate object is a property map
 * (at most 256 entries), the largest array a LogEvents batch or a list of contextual attributes
 * (1,000): these limits leave room and cut short the bodies whose cost is one huge container
 * (30,000 keys in one object cost ~150 ms through JSON.parse, the snake_case rewrite, validation
 * and the error answer before this limit).
 */
export const MAX_OBJECT_MEMBERS = 1_000;
export const MAX_ARRAY_ITEMS = 10_000;
/**
 * Members and items of the whole body: every later step (JSON.parse, the snake_case rewrite,
 * schema validation) costs about a microsecond per member, so this bounds each step's time. A
 * 1 MiB LogEvents batch of 1,000 events with their properties holds ~75,000 at most (600 KB of
 * 1,000 events × 20 properties: 44,000); 170,000 short snake_case keys took ~200 ms.
 */
export const MAX_BODY_MEMBERS = 100_000;

/** What `jsonTextShapeError` saw of a text within the limits. */
export interface JsonTextShape {
  /** The longest object key as written in the text (escapes counted as written, so never shorter than the key). */
  longestKey: number;
}

/**
 * Depth and container sizes of the raw JSON text, before it is parsed: V8's JSON.parse is not
 * recursive but costs ~100 ms for 1 MiB of nested brackets (a flat 1 MiB body: ~2 ms), so a deep
 * body is refused before it is parsed. One pass; strings are skipped with indexOf, and a key's
 * text is only cut out when an error names it. Malformed text is left to the JSON parser to
 * report. Undefined when within the limit (and `seen`, when given, tells the longest key), else
 * the 400 naming the JSON path.
 */
export function jsonTextShapeError(text: string, maxDepth = MAX_BODY_DEPTH, seen?: JsonTextShape): InvalidArgumentError | undefined {
  // per open container: whether it is an array, the index (array) or the key's opening quote
  // (object) of the current member, and how many members it has had so far
  const isArray: boolean[] = [];
  const member: number[] = [];
  const count: number[] = [];
  let members = 0;
  let longestKey = 0;
  let expectKey = false;
  // where the first unpaired surrogate is (-1: none, nearly always); the string holding it is named below
  const badAt = unpairedSurrogateAt(text);
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 34 /* " */) {
      const end = stringEnd(text, i);
      if (end < 0) return undefined; // unterminated: JSON.parse reports it
      const top = member.length - 1;
      if (expectKey && top >= 0) {
        member[top] = i;
        if (end - i - 1 > longestKey) longestKey = end - i - 1;
        if (++count[top] > MAX_OBJECT_MEMBERS)
          return invalidField(textPath(text, isArray, member, top), `an object of more than ${MAX_OBJECT_MEMBERS} members`);
        if (++members > MAX_BODY_MEMBERS) return invalidField('(body)', `more than ${MAX_BODY_MEMBERS} members and items in all`);
      }
      if (badAt > i && badAt < end)
        return invalidField(
          textPath(text, isArray, member, member.length),
          `not well-formed Unicode: an unpaired UTF-16 surrogate (${surrogateText(text, badAt)}); every string must be valid Unicode`,
        );
      i = end;
    } else if (c === 123 /* { */ || c === 91 /* [ */) {
      if (isArray.length >= maxDepth) return invalidField(textPath(text, isArray, member, member.length), `nested more than ${maxDepth} levels deep`);
      isArray.push(c === 91);
      // an object's member is its key's quote, set when the key is read; until then the path shows an empty key
      member.push(c === 91 ? 0 : -1);
      count.push(0);
      expectKey = c === 123;
    } else if (c === 125 /* } */ || c === 93 /* ] */) {
      isArray.pop();
      member.pop();
      count.pop();
      expectKey = false;
    } else if (c === 44 /* , */) {
      const top = isArray.length - 1;
      if (top >= 0 && isArray[top]) {
        member[top] = member[top] + 1;
        if (member[top] >= MAX_ARRAY_ITEMS) return invalidField(textPath(text, isArray, member, top), `an array of more than ${MAX_ARRAY_ITEMS} items`);
        if (++members > MAX_BODY_MEMBERS) return invalidField('(body)', `more than ${MAX_BODY_MEMBERS} members and items in all`);
      } else expectKey = true;
    } else if (c === 58 /* : */) expectKey = false;
  }
  if (seen) seen.longestKey = longestKey;
  return undefined;
}

/** Where the string opened by the quote at `start` ends (its closing quote), or -1. */
function stringEnd(text: string, start: number): number {
  let end = text.indexOf('"', start + 1);
  while (end > 0 && escaped(text, end)) end = text.indexOf('"', end + 1);
  return end;
}

/**
 * The path of the open containers down to `depth`, for an error: an array's member is its index,
 * an object's the position of its key's opening quote (-1 before the key), cut out of the text here.
 */
function textPath(text: string, isArray: readonly boolean[], member: readonly number[], depth: number): string {
  const path: (string | number)[] = [];
  for (let k = 0; k < depth; k++) {
    if (isArray[k]) path.push(member[k]);
    else if (member[k] < 0) path.push('');
    else {
      const start = member[k];
      const end = stringEnd(text, start);
      path.push(end - start > 33 ? `${text.slice(start + 1, start + 33)}…` : text.slice(start + 1, end));
    }
  }
  return renderPath(path);
}

/**
 * Where the first UTF-16 surrogate that is not half of a pair sits in the raw JSON text, or -1.
 * Such a string is not Unicode (ClickHouse, protobuf and UTF-8 cannot store it), so every client
 * string is refused with it up front. Nearly free on the request path:
 * - escapes (`\ud800`) are found by one native `indexOf('\\u')`, which finds nothing in most
 *   bodies; each hit is read in place (an escaped backslash, `\\u`, is no escape);
 * - raw surrogates cannot come out of the UTF-8 decoding of a body (invalid bytes become U+FFFD);
 *   `isWellFormed` checks anyway, answering at once for a one-byte (Latin-1) string, and only
 *   when it is false is the text searched for the place.
 */
export function unpairedSurrogateAt(text: string): number {
  const found = text.isWellFormed() ? -1 : firstRawUnpaired(text);
  for (let at = text.indexOf('\\u'); at >= 0 && (found < 0 || at < found);) {
    if (!escaped(text, at + 1)) {
      at = text.indexOf('\\u', at + 2);
      continue;
    }
    const unit = hex4(text, at + 2);
    if (unit >= 0xd800 && unit <= 0xdbff) {
      // a high surrogate needs a low one right after it, escaped or raw
      const next =
        text.charCodeAt(at + 6) === 92 && text.charCodeAt(at + 7) === 117 ? hex4(text, at + 8) : (text.charCodeAt(at + 6) & 0xfc00) === 0xdc00 ? 0xdc00 : -1;
      if (next < 0xdc00 || next > 0xdfff) return at;
      at = text.indexOf('\\u', at + 12);
    } else if (unit >= 0xdc00 && unit <= 0xdfff && (text.charCodeAt(at - 1) & 0xfc00) !== 0xd800) {
      // a low surrogate alone (the one after a high escape was skipped with it; a raw high before it pairs)
      return at;
    } else at = text.indexOf('\\u', at + 6);
  }
  return found;
}

function firstRawUnpaired(text: string): number {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if ((c & 0xf800) !== 0xd800) continue;
    if (c <= 0xdbff) {
      // a raw high surrogate, paired with a raw low one or a low escape after it
      if ((text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) i++;
      else if (!(text.charCodeAt(i + 1) === 92 && text.charCodeAt(i + 2) === 117 && (hex4(text, i + 3) & 0xfc00) === 0xdc00)) return i;
    } else if (!(text.charCodeAt(i - 6) === 92 && escaped(text, i - 5) && (hex4(text, i - 4) & 0xfc00) === 0xd800)) {
      // a raw low surrogate not after a high escape
      return i;
    }
  }
  return -1;
}

/** The code unit of the four hex digits at `at`, or -1. */
function hex4(text: string, at: number): number {
  let v = 0;
  for (let k = at; k < at + 4; k++) {
    const d = text.charCodeAt(k);
    const h = d >= 48 && d <= 57 ? d - 48 : d >= 65 && d <= 70 ? d - 55 : d >= 97 && d <= 102 ? d - 87 : -1;
    if (h < 0) return -1;
    v = v * 16 + h;
  }
  return v;
}

/** The surrogate as it is written (an escape, or the raw code unit's escape), for the message. */
function surrogateText(text: string, at: number): string {
  return text.charCodeAt(at) === 92 ? text.slice(at, at + 6) : `\\u${text.charCodeAt(at).toString(16)}`;
}

/** Whether the quote at `at` is preceded by an odd number of backslashes. */
function escaped(text: string, at: number): boolean {
  let k = at - 1;
  while (k >= 0 && text.charCodeAt(k) === 92) k--;
  return (at - 1 - k) % 2 === 1;
}

/** Undefined when the body is within the limits, else the 400 naming the first offending place. */
export function bodyShapeError(body: unknown): InvalidArgumentError | undefined {
  const path: (string | number)[] = [];
  const problem = walk(body, 0, path);
  if (problem === undefined) return undefined;
  return invalidField(renderPath(path), problem);
}

/** Recursion is bounded by MAX_BODY_DEPTH + 1 frames: deeper bodies are refused, not descended. */
function walk(value: unknown, depth: number, path: (string | number)[]): string | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  if (depth >= MAX_BODY_DEPTH) return `nested more than ${MAX_BODY_DEPTH} levels deep`;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const v = value[i];
      if (v === null || typeof v !== 'object') continue;
      path.push(i);
      const problem = walk(v, depth + 1, path);
      if (problem !== undefined) return problem;
      path.pop();
    }
    return undefined;
  }
  for (const key in value) {
    if (key.length > MAX_KEY_LENGTH) {
      path.push(`${key.slice(0, 32)}…`);
      return `a field name of ${key.length} characters; at most ${MAX_KEY_LENGTH} are allowed`;
    }
    const v = (value as Record<string, unknown>)[key];
    if (v === null || typeof v !== 'object') continue;
    path.push(key);
    const problem = walk(v, depth + 1, path);
    if (problem !== undefined) return problem;
    path.pop();
  }
  return undefined;
}

/** `events[0].eventProperties.x`, like the schema errors' `details[].field`. */
function renderPath(path: (string | number)[]): string {
  let out = '';
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : out ? `.${p}` : p;
  return out || '(body)';
}
