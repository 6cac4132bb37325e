import type { TSchema } from 'typebox';
import { Value } from 'typebox/value';
import { InvalidArgumentError, type ErrorDetail } from '../../shared/platform/errors.js';
import { camelizeKeys, snakeToCamel } from '../../shared/platform/http/camelize.js';
import { validationDetails, type SchemaError } from '../../shared/platform/http/validation-errors.js';

/** What the CLI needs of an admin operation (kept structural so this file stays pure). */
export interface CliCommand {
  command: string;
  summary: string;
  body: TSchema;
}

/** The subset of JSON Schema the flag parser looks at. */
interface SchemaShape {
  type?: string | string[];
  properties?: Record<string, SchemaShape>;
  required?: string[];
  items?: SchemaShape;
  anyOf?: SchemaShape[];
  const?: unknown;
}

type Kind = 'array' | 'integer' | 'number' | 'boolean' | 'json' | 'string';

/** `--project-id` / `--project_id` → `projectId`. */
export function flagToField(flag: string): string {
  return snakeToCamel(flag.replace(/^--/, '').replace(/-+([a-zA-Z0-9])/g, (_m, c: string) => c.toUpperCase()));
}

/** `projectId` → `--project-id`. */
export function fieldToFlag(field: string): string {
  return `--${field.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}

function kindOf(s: SchemaShape | undefined): Kind {
  if (!s) return 'json';
  const t = Array.isArray(s.type) ? s.type[0] : s.type;
  if (t === 'array') return 'array';
  if (t === 'integer' || t === 'number' || t === 'boolean' || t === 'string') return t;
  if (s.anyOf) {
    // A union that admits strings (enums of literals, int64 as number-or-string) takes the text as is.
    return s.anyOf.some((b) => kindOf(b) === 'string') ? 'string' : 'json';
  }
  return 'json';
}

function convert(s: SchemaShape | undefined, raw: string): unknown {
  switch (kindOf(s)) {
    case 'integer':
      return /^-?\d+$/.test(raw) ? Number(raw) : raw;
    case 'number':
      return raw.trim() !== '' && Number.isFinite(Number(raw)) ? Number(raw) : raw;
    case 'boolean':
      return raw === 'true' ? true : raw === 'false' ? false : raw;
    case 'json':
      try {
        return JSON.parse(raw);
      } catch {
        return raw;
      }
    default:
      return raw;
  }
}

/** Array flags take a JSON array, or comma-separated values; repeated flags add up. */
function convertList(s: SchemaShape, raw: string): unknown[] {
  if (raw.trimStart().startsWith('[')) {
    try {
      const parsed: unknown = JSON.parse(raw);
      if (Array.isArray(parsed)) return parsed;
    } catch {
      // not JSON: fall through to the comma-separated form
    }
  }
  if (kindOf(s.items) === 'json') return [convert(s.items, raw)];
  return raw
    .split(',')
    .map((v) => v.trim())
    .filter((v) => v !== '')
    .map((v) => convert(s.items, v));
}

function parseJsonBody(raw: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(raw);
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) return camelizeKeys(v) as Record<string, unknown>;
  } catch {
    // reported by the caller
  }
  return undefined;
}

interface RawOption {
  flag: string;
  /** Undefined for a bare boolean flag. */
  value?: string;
}

/** Splits argv into options: `--name value`, `--name=value`, or a bare `--name` for a boolean. */
function readOptions(args: readonly string[], props: Record<string, SchemaShape>, details: ErrorDetail[]): RawOption[] {
  const out: RawOption[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (!arg.startsWith('--') || arg === '--') {
      details.push({ field: arg, description: 'unexpected argument: options are written --name value' });
      continue;
    }
    const eq = arg.indexOf('=');
    if (eq > 0) {
      out.push({ flag: arg.slice(0, eq), value: arg.slice(eq + 1) });
      continue;
    }
    const next = args[i + 1];
    const prop = props[flagToField(arg)];
    if (prop && kindOf(prop) === 'boolean') out.push({ flag: arg, value: /^(true|false)$/.test(next ?? '') ? args[++i] : undefined });
    else if (next === undefined || next.startsWith('--')) details.push({ field: arg, description: 'expects a value' });
    else out.push({ flag: arg, value: args[++i] });
  }
  return out;
}

/**
 * Turns `--flag value` arguments into a request body shaped by the operation's schema:
 * `--project-id demo` → `projectId`, arrays from repeated or comma-separated values, integers and
 * booleans converted, object fields as JSON. `--json '{...}'` gives the whole body; flags add to
 * it. Throws InvalidArgumentError naming every bad argument at once.
 */
export function argsToBody(schema: TSchema, args: readonly string[]): Record<string, unknown> {
  const props = (schema as SchemaShape).properties ?? {};
  const details: ErrorDetail[] = [];
  let base: Record<string, unknown> = {};
  const fromFlags: Record<string, unknown> = {};
  for (const { flag, value } of readOptions(args, props, details)) {
    const field = flagToField(flag);
    const prop = props[field];
    if (flag === '--json') {
      const parsed = parseJsonBody(value ?? '');
      if (parsed) base = parsed;
      else details.push({ field: flag, description: 'expected a JSON object (the whole request body)' });
    } else if (!prop) {
      details.push({ field: flag, description: `unknown option (known: ${[...Object.keys(props).map(fieldToFlag), '--json'].join(', ')})` });
    } else if (kindOf(prop) === 'array') {
      fromFlags[field] = [...((fromFlags[field] as unknown[] | undefined) ?? []), ...convertList(prop, value ?? '')];
    } else if (field in fromFlags) {
      details.push({ field: flag, description: 'given more than once' });
    } else {
      fromFlags[field] = value === undefined ? true : convert(prop, value);
    }
  }
  if (details.length) throw argumentsError(details);
  return { ...base, ...fromFlags };
}

function argumentsError(details: ErrorDetail[]): InvalidArgumentError {
  return new InvalidArgumentError(`invalid arguments: ${details.map((d) => `${d.field}: ${d.description}`).join('; ')}`, details);
}

/**
 * Checks `body` against the operation's schema; details use the JSON paths of the HTTP API's
 * errors. The branches of a union are folded into one line per field, as the HTTP handler does.
 */
export function schemaErrors(schema: TSchema, body: unknown): ErrorDetail[] {
  return validationDetails([...Value.Errors(schema, body)] as SchemaError[]);
}

/** Parses and validates in one step; throws InvalidArgumentError (400, exit code 2). */
export function bodyFromArgs(schema: TSchema, args: readonly string[]): Record<string, unknown> {
  const body = argsToBody(schema, args);
  const details = schemaErrors(schema, body);
  if (details.length) throw new InvalidArgumentError(`invalid request: ${details.map((d) => `${d.field}: ${d.description}`).join('; ')}`, details);
  return body;
}

export function formatHelp(commands: readonly CliCommand[]): string {
  const width = Math.max(...commands.map((c) => c.command.length));
  const lines = commands.map((c) => `  ${c.command.padEnd(width)}  ${c.summary}`);
  return [
    "usage: npm run admin -- <command> [--option value ...] [--json '{...}']",
    '',
    'commands:',
    ...lines,
    '',
    'npm run admin -- help <command> lists the options of a command. Output is JSON on stdout;',
    'errors are JSON on stderr (exit 2: bad arguments, 1: the operation failed).',
  ].join('\n');
}

function typeLabel(s: SchemaShape): string {
  const consts = s.anyOf?.filter((b) => b.const !== undefined).map((b) => String(b.const));
  if (consts?.length) return consts.join('|');
  const k = kindOf(s);
  if (k === 'array') return `${typeLabel(s.items ?? {})},...`;
  return k;
}

export function formatCommandHelp(cmd: CliCommand): string {
  const s = cmd.body as SchemaShape;
  const required = new Set(s.required ?? []);
  const opts = Object.entries(s.properties ?? {}).map(([name, p]) => `  ${fieldToFlag(name)} <${typeLabel(p)}>${required.has(name) ? '  (required)' : ''}`);
  return [`${cmd.command}: ${cmd.summary}`, '', 'options:', ...opts, '  --json <object>  the whole request body as JSON'].join('\n');
}
