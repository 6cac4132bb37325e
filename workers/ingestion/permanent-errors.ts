import { UnrecoverableError } from 'bullmq';
import { classifyClickhouseError } from '../../shared/platform/warehouse/clickhouse.js';

/**
 * Reply errors that say "not now" rather than "never": the server is loading, busy, out of memory
 * (noeviction), failing over, or the credentials/ACL are being fixed by an operator. Jobs keep
 * retrying through them like through a connection error.
 */
const TRANSIENT_REPLY_CODES: ReadonlySet<string> = new Set([
  'LOADING',
  'BUSY',
  'TRYAGAIN',
  'CLUSTERDOWN',
  'MASTERDOWN',
  'READONLY',
  'OOM',
  'NOREPLICAS',
  'MISCONF',
  'NOAUTH',
  'NOPERM',
  'WRONGPASS',
  'MOVED',
  'ASK',
  'NOSCRIPT',
  'UNBLOCKED',
  'EXECABORT',
]);
const TRANSIENT_INSIDE = /\b(LOADING|BUSY|TRYAGAIN|CLUSTERDOWN|MASTERDOWN|READONLY|OOM|NOREPLICAS|MISCONF)\b|max number of clients|killed by user/;

/**
 * A Redis reply error that no retry can cure: WRONGTYPE (a key holds another kind of value), a
 * script error, a bad argument. Connection errors are not reply errors and stay retryable.
 */
export function isPermanentRedisError(err: unknown): err is Error {
  if (!(err instanceof Error) || err.name !== 'ReplyError') return false;
  const code = err.message.split(' ', 1)[0];
  if (TRANSIENT_REPLY_CODES.has(code)) return false;
  return !TRANSIENT_INSIDE.test(err.message);
}

/**
 * Runs `fn`, turning errors that no retry can cure into UnrecoverableError (the job, or the
 * request of a merged job, becomes a dead letter with the reason instead of being retried for
 * days): a RangeError is input the row mapping can never store (the API rejects it; this guards
 * old jobs), ClickHouse may reject rows for good (bad data), and Redis may answer a reply error.
 */
export async function asPermanent<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof RangeError) throw new UnrecoverableError(`unstorable input: ${err.message}`);
    if (err instanceof UnrecoverableError) throw err;
    if (isPermanentRedisError(err)) throw new UnrecoverableError(`rejected by Redis: ${err.message.slice(0, 500)}`);
    if (classifyClickhouseError(err) === 'permanent') {
      throw new UnrecoverableError(`rejected by ClickHouse: ${(err as Error).message}`);
    }
    throw err;
  }
}
