import type { ErrorDetail } from '../errors.js';

/**
 * The one formatter of schema errors into error details, for every path that validates a body
 * against a schema: the HTTP API (Fastify's validator), the admin CLI and the Pub/Sub intake
 * (TypeBox's). Both report JSON-schema errors of the same shape, with their parameters spelled
 * a little differently (`missingProperty` vs `requiredProperties`).
 */
export interface SchemaError {
  instancePath: string;
  schemaPath?: string;
  keyword: string;
  message?: string;
  params: Record<string, unknown>;
}

/** At most this many problems are listed: a body with 30,000 unknown fields must not get a 3 MB answer. */
export const MAX_ERROR_DETAILS = 100;

/** `/events/0/eventName` → `events[0].eventName`; the root is `root`. */
export function jsonPath(instancePath: string, extra?: string, root = '(body)'): string {
  const parts = instancePath
    .split('/')
    .filter(Boolean)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (extra) parts.push(extra);
  let out = '';
  for (const p of parts) out += /^\d+$/.test(p) ? `[${p}]` : out ? `.${p}` : p;
  return out || root;
}

const UNION = new Set(['anyOf', 'oneOf']);

function names(value: unknown): string[] {
  return Array.isArray(value) ? value.map(String) : value === undefined ? [] : [String(value)];
}

/**
 * One line per field, the first problem found for it. The branches of a union are folded into
 * one line: "must be one of …" for a union of constants, else "value does not match any allowed form".
 */
export function validationDetails(errors: readonly SchemaError[], root = '(body)'): ErrorDetail[] {
  const unions = errors.filter((e) => UNION.has(e.keyword) && e.schemaPath !== undefined).map((e) => `${e.schemaPath}/${e.keyword}/`);
  const byField = new Map<string, ErrorDetail>();
  const add = (field: string, description: string) => {
    if (!byField.has(field)) byField.set(field, { field, description });
  };
  for (const e of errors) {
    if (byField.size >= MAX_ERROR_DETAILS) {
      byField.set(root, { field: root, description: `${errors.length} problems in all; the first ${MAX_ERROR_DETAILS} fields are listed` });
      break;
    }
    if (e.schemaPath !== undefined && unions.some((u) => e.schemaPath!.startsWith(u))) continue;
    const path = (extra?: string) => jsonPath(e.instancePath, extra, root);
    if (e.keyword === 'required') for (const n of names(e.params.missingProperty ?? e.params.requiredProperties)) add(path(n), 'required field is missing');
    else if (e.keyword === 'additionalProperties')
      for (const n of names(e.params.additionalProperty ?? e.params.additionalProperties)) add(path(n), 'unknown field');
    else if (e.keyword === 'boolean')
      continue; // `additionalProperties: false`, reported by name above
    else if (e.keyword === 'enum') add(path(), `must be one of ${names(e.params.allowedValues).join(', ')}`);
    else if (UNION.has(e.keyword)) add(path(), unionDescription(errors, e));
    else add(path(), e.message ?? e.keyword);
  }
  return [...byField.values()];
}

function unionDescription(errors: readonly SchemaError[], union: SchemaError): string {
  const branch = `${union.schemaPath}/${union.keyword}/`;
  const allowed = errors.filter((e) => e.keyword === 'const' && e.schemaPath?.startsWith(branch)).map((e) => e.params.allowedValue);
  return allowed.length ? `must be one of ${allowed.join(', ')}` : 'value does not match any allowed form';
}

/** `field: description; …` for an error message. */
export function detailsText(details: readonly ErrorDetail[]): string {
  return details.map((d) => `${d.field}: ${d.description}`).join('; ');
}
