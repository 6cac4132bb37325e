import { pino, stdSerializers, type DestinationStream, type Logger } from 'pino';
import { createRequire } from 'node:module';

/** Paths that may hold secrets; pino replaces them before a line is written. */
const REDACT = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.query.api_key',
  'req.query["api-key"]',
  'headers.authorization',
  'headers["x-api-key"]',
  'key',
  'secret',
  'secretHash',
  '*.secretHash',
  'password',
  '*.password',
  'adminToken',
];

const CENSOR = '[redacted]';
/** Fields whose value is a secret, wherever they appear in a logged error. */
const SECRET_FIELD = /^(?:secret|secret_?hash|password|passwd|token|admin_?token|authorization|cookie|x-api-key|api[_-]?key|raw_?key)$/i;
/**
 * Fields that carry the arguments of a command: ioredis puts a failed command's arguments on
 * `err.command.args` (key names with user ids, script arguments with whole records), some
 * clients on `err.args`. Only the command's name is kept.
 */
const ARGS_FIELD = /^(?:args|argv|arguments|parameters|params|values|query_params)$/i;
/** API keys as issued (`tds_<keyId>_<secret>`), bearer credentials and key query parameters inside any string. */
const IN_STRING: readonly [RegExp, string][] = [
  [/tds_[0-9a-f]{16}_[A-Za-z0-9_-]{20,}/g, `tds_${CENSOR}`],
  [/\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]+/gi, `$1 ${CENSOR}`],
  [/([?&](?:api[_-]?key|key|token)=)[^&#\s]*/gi, `$1${CENSOR}`],
  // credentials in a connection URL (redis://user:password@host)
  [/(\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@]*:)[^\s@/]+@/gi, `$1${CENSOR}@`],
];
const MAX_DEPTH = 8;
const MAX_ITEMS = 50;

export function scrubString(s: string): string {
  let out = s;
  for (const [re, by] of IN_STRING) out = out.replace(re, by);
  return out;
}

/** A deep copy of a serialized error (or anything) without command arguments or secrets. */
export function scrub(value: unknown, depth = 0, seen = new WeakSet<object>()): unknown {
  if (typeof value === 'string') return scrubString(value);
  if (value === null || typeof value !== 'object') return value;
  if (depth > MAX_DEPTH || seen.has(value)) return '[…]';
  seen.add(value);
  if (Buffer.isBuffer(value) || ArrayBuffer.isView(value)) return `[${(value as Uint8Array).byteLength} bytes]`;
  if (Array.isArray(value)) return value.slice(0, MAX_ITEMS).map((v) => scrub(v, depth + 1, seen));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if (SECRET_FIELD.test(k)) out[k] = CENSOR;
    else if (ARGS_FIELD.test(k)) out[k] = Array.isArray(v) ? `[${v.length} arguments]` : CENSOR;
    else if (k === 'command' && v !== null && typeof v === 'object') {
      const name = (v as { name?: unknown }).name;
      out[k] = { name: typeof name === 'string' ? name : undefined };
    } else out[k] = scrub(v, depth + 1, seen);
  }
  return out;
}

/** pino's error serializer (type, message, stack, causes), then scrubbed. */
function serializeError(err: unknown): unknown {
  return scrub(err instanceof Error ? stdSerializers.err(err) : err);
}

function serializeRequest(req: unknown): unknown {
  if (req === null || typeof req !== 'object') return req;
  const r = req as { method?: unknown; url?: unknown; id?: unknown };
  return { method: r.method, url: typeof r.url === 'string' ? scrubString(r.url) : undefined, id: r.id };
}

export interface LoggerOptions {
  /** Where lines go (tests capture them); stdout by default. */
  destination?: DestinationStream;
  /** Human-readable lines instead of JSON; by default when standard output is a terminal (`prettyWanted`). */
  pretty?: boolean;
}

/**
 * Whether a process writes human-readable log lines: when its standard output is a terminal
 * (`npm start` in a shell), and JSON lines otherwise (a pipe, a file, a container's log driver, a
 * log collector), where the lines are read by programs.
 */
export function prettyWanted(stdout: { isTTY?: boolean } = process.stdout): boolean {
  return stdout.isTTY === true;
}

/**
 * pino-pretty inside the process (no pipe to another process, which would sit between a signal
 * and the service): each JSON line is formatted synchronously and written to standard output,
 * which Node writes synchronously to a terminal, so a line logged just before `process.exit` is
 * not lost.
 */
export function prettyDestination(write: (s: string) => void = (s) => void process.stdout.write(s)): DestinationStream {
  // loaded only for a terminal: a process logging JSON (production) never holds it
  const { isColorSupported, prettyFactory } = createRequire(import.meta.url)('pino-pretty') as typeof import('pino-pretty');
  const format = prettyFactory({ colorize: isColorSupported, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' });
  return { write: (line: string) => write(format(line)) };
}

/**
 * The process logger. Errors go through a serializer that keeps no command arguments and no
 * secrets (however deep: causes, aggregated errors), and strings are cleared of API keys and
 * bearer credentials, so a 5xx log line never carries a user id in a Redis key name, a key
 * record's `secretHash` in a script argument, or a key given in a query string. Lines are JSON,
 * or pretty-printed when standard output is a terminal (see `prettyWanted`).
 */
export function createLogger(level: string, name = 'tds', opts: LoggerOptions = {}): Logger {
  const options = {
    name,
    level,
    redact: { paths: REDACT, censor: CENSOR },
    serializers: { err: serializeError, error: serializeError, cause: serializeError, req: serializeRequest },
  };
  // JSON lines are written synchronously too: pino's default stream buffers, and a fatal line
  // (flushed at once) would then overtake the lines logged before it
  const destination = opts.destination ?? ((opts.pretty ?? prettyWanted()) ? prettyDestination() : pino.destination({ dest: 1, sync: true }));
  return pino(options, destination);
}

export type { Logger };
