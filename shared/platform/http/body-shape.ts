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

/**
 * Depth and container sizes of the raw JSON text, before it is parsed: V8's JSON.parse is not
 * recursive but costs ~100 ms for 1 MiB of nested brackets (a flat 1 MiB body: ~2 ms), so a deep
 * body is refused before it is parsed. One pass; strings are skipped with indexOf. Malformed text is left to the
 * JSON parser to report. Undefined when within the limit, else the 400 naming the JSON path.
 */
export function jsonTextShapeError(text: string, maxDepth = MAX_BODY_DEPTH): InvalidArgumentError | undefined {
  // per open container: whether it is an array, the index or key of the current member, and
  // how many members it has had so far
  const isArray: boolean[] = [];
  const member: (string | number)[] = [];
  const count: number[] = [];
  let members = 0;
  let expectKey = false;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 34 /* " */) {
      let end = text.indexOf('"', i + 1);
      while (end > 0 && escaped(text, end)) end = text.indexOf('"', end + 1);
      if (end < 0) return undefined; // unterminated: JSON.parse reports it
      const top = member.length - 1;
      if (expectKey && top >= 0) {
        member[top] = end - i > 33 ? `${text.slice(i + 1, i + 33)}…` : text.slice(i + 1, end);
        if (++count[top] > MAX_OBJECT_MEMBERS) return invalidField(renderPath(member.slice(0, top)), `an object of more than ${MAX_OBJECT_MEMBERS} members`);
        if (++members > MAX_BODY_MEMBERS) return invalidField('(body)', `more than ${MAX_BODY_MEMBERS} members and items in all`);
      }
      i = end;
    } else if (c === 123 /* { */ || c === 91 /* [ */) {
      if (isArray.length >= maxDepth) return invalidField(renderPath(member), `nested more than ${maxDepth} levels deep`);
      isArray.push(c === 91);
      member.push(c === 91 ? 0 : '');
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
        member[top] = (member[top] as number) + 1;
        if (member[top] >= MAX_ARRAY_ITEMS) return invalidField(renderPath(member.slice(0, top)), `an array of more than ${MAX_ARRAY_ITEMS} items`);
        if (++members > MAX_BODY_MEMBERS) return invalidField('(body)', `more than ${MAX_BODY_MEMBERS} members and items in all`);
      } else expectKey = true;
    } else if (c === 58 /* : */) expectKey = false;
  }
  return undefined;
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
