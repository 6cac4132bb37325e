import { invalidField } from '../errors.js';

/**
 * Both camelCase and snake_case field names are accepted on input. Request bodies are
 * rewritten to camelCase before validation. Keys of user-data maps (event and user properties,
 * property filters) are the customer's own names and are kept as sent; their values are
 * PropertyValue objects whose member names are rewritten like any other.
 */
const USER_MAPS = new Set(['eventProperties', 'userProperties', 'propertyValueByPropertyName']);

function isAsciiAlnum(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
}

/** Output code units of the key being rewritten: one buffer reused, grown for a longer key. */
let units = new Uint16Array(256);
const CHUNK = 4096;

function fromUnits(len: number): string {
  if (len <= CHUNK) return String.fromCharCode.apply(null, units.subarray(0, len) as unknown as number[]);
  let out = '';
  for (let k = 0; k < len; k += CHUNK) out += String.fromCharCode.apply(null, units.subarray(k, Math.min(len, k + CHUNK)) as unknown as number[]);
  return out;
}

/**
 * A run of underscores followed by a letter or digit becomes that character upper-cased
 * (`project_id` → `projectId`, `a__b` → `aB`); a run followed by anything else, or at the end, is
 * kept. One pass over the key into a code-unit buffer: the former `/_+([a-zA-Z0-9])/g` retried
 * every underscore of a long run and was quadratic (60,000 underscores took 3 s), and appending
 * to a string character by character costs ~0.1 µs per character (1 MiB of short snake_case
 * keys: ~100 ms); this costs ~15 ms per million characters.
 */
export function snakeToCamel(key: string): string {
  let i = key.indexOf('_');
  if (i < 0) return key;
  const n = key.length;
  if (units.length < n) units = new Uint16Array(n);
  const buf = units;
  let len = 0;
  for (let k = 0; k < i; k++) buf[len++] = key.charCodeAt(k);
  while (i < n) {
    const c = key.charCodeAt(i);
    if (c !== 95) {
      buf[len++] = c;
      i++;
      continue;
    }
    let j = i + 1;
    while (j < n && key.charCodeAt(j) === 95) j++;
    const d = key.charCodeAt(j);
    if (j < n && isAsciiAlnum(d)) {
      buf[len++] = d >= 97 ? d - 32 : d;
      i = j + 1;
    } else {
      while (i < j) buf[len++] = key.charCodeAt(i++);
    }
  }
  return fromUnits(len);
}

/**
 * With `known` (every field name of the request schemas, which all refuse unknown fields), the
 * rewrite stops at the first name past MAX_UNKNOWN_FIELDS that no schema has: such a body is a
 * 400 anyway, and its unknown keys would each be rewritten, copied and validated (~1 µs each; a
 * megabyte of them ~100 ms) only to be listed in an answer that shows 100 problems at most.
 */
export const MAX_UNKNOWN_FIELDS = 100;

interface Walk {
  known: ReadonlySet<string> | undefined;
  unknown: number;
}

/**
 * Copy-on-write: a body that is already camelCase is returned as is, with no allocation.
 * Recursive: callers check the body's depth first (`bodyShapeError`, shared/platform/http/body-shape.ts).
 * @throws InvalidArgumentError when `known` is given and the body has too many unknown fields
 */
export function camelizeKeys(value: unknown, known?: ReadonlySet<string>): unknown {
  return camelize(value, { known, unknown: 0 });
}

function camelize(value: unknown, walk: Walk): unknown {
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const v = camelize(value[i], walk);
      if (v !== value[i]) (out ??= value.slice())[i] = v;
    }
    return out ?? value;
  }
  if (value === null || typeof value !== 'object') return value;
  const obj = value as Record<string, unknown>;
  let out: Record<string, unknown> | undefined;
  const keys = Object.keys(obj);
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i];
    const ck = snakeToCamel(k);
    if (walk.known !== undefined && !walk.known.has(ck) && ++walk.unknown > MAX_UNKNOWN_FIELDS) {
      throw invalidField('(body)', `more than ${MAX_UNKNOWN_FIELDS} unknown fields (one is "${ck.slice(0, 64)}")`);
    }
    const v = obj[k];
    const cv =
      USER_MAPS.has(ck) && v !== null && typeof v === 'object' && !Array.isArray(v) ? camelizeMapValues(v as Record<string, unknown>, walk) : camelize(v, walk);
    if (out === undefined && (ck !== k || cv !== v)) {
      out = {};
      for (let j = 0; j < i; j++) out[keys[j]] = obj[keys[j]];
    }
    if (out !== undefined) out[ck] = cv;
  }
  return out ?? obj;
}

/** A user-data map keeps its keys (the customer's names); its values are PropertyValues. */
function camelizeMapValues(map: Record<string, unknown>, walk: Walk): Record<string, unknown> {
  let out: Record<string, unknown> | undefined;
  const keys = Object.keys(map);
  for (let i = 0; i < keys.length; i++) {
    const v = map[keys[i]];
    const cv = camelize(v, walk);
    if (out === undefined && cv !== v) {
      out = {};
      for (let j = 0; j < i; j++) out[keys[j]] = map[keys[j]];
    }
    if (out !== undefined) out[keys[i]] = cv;
  }
  return out ?? map;
}

/** Every property name of the given JSON schemas (request bodies), at any depth. */
export function schemaFieldNames(schemas: readonly unknown[]): Set<string> {
  const names = new Set<string>();
  const visit = (s: unknown): void => {
    if (s === null || typeof s !== 'object') return;
    const schema = s as Record<string, unknown>;
    for (const [name, sub] of Object.entries((schema.properties ?? {}) as Record<string, unknown>)) {
      names.add(name);
      visit(sub);
    }
    for (const sub of Object.values((schema.patternProperties ?? {}) as Record<string, unknown>)) visit(sub);
    if (typeof schema.additionalProperties === 'object') visit(schema.additionalProperties);
    visit(schema.items);
    for (const key of ['anyOf', 'oneOf', 'allOf'] as const) for (const sub of (schema[key] as unknown[] | undefined) ?? []) visit(sub);
  };
  schemas.forEach(visit);
  return names;
}
