import { pino, type Logger } from 'pino';

/** Paths that may hold secrets; pino replaces them before a line is written. */
const REDACT = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.query.api_key',
  'req.query["api-key"]',
  'key',
  'secret',
  'password',
  '*.password',
  'adminToken',
];

export function createLogger(level: string, name = 'tds'): Logger {
  return pino({ name, level, redact: { paths: REDACT, censor: '[redacted]' } });
}

export type { Logger };
