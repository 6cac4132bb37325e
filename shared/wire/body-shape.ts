import { invalidField, type InvalidArgumentError } from '../errors.js';

/**
 * Structural limits of every JSON request body (`/v1` and `/admin/v1`), checked right after
 * JSON parsing and before anything recursive (snake_case rewriting, schema validation, handlers)
 * walks the body, so no body can exhaust the stack or make a walk super-linear (D45).
 *
 * - Depth: the deepest legitimate body (InsertTreatment's content, a data field's property
 *   filter) nests about 6 levels; 32 leaves room for any future shape.
 * - Key length: every name the schemas accept is at most 256 characters (field names are far
 *   shorter; user-data map keys such as event and user property names are capped at 256 by the
 *   schemas), so a longer key can never be valid and is refused before it is rewritten.
 */
export const MAX_BODY_DEPTH = 32;
export const MAX_KEY_LENGTH = 256;

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
