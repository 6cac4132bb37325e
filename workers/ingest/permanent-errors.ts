import { UnrecoverableError } from 'bullmq';
import { classifyClickhouseError } from '../../shared/clients/clickhouse.js';

/**
 * Runs `fn`, turning errors that no retry can cure into UnrecoverableError (the job, or the
 * request of a merged job, becomes a dead letter instead of being retried for ever): a RangeError
 * is input the row mapping can never store (the API rejects it; this guards old jobs), and
 * ClickHouse may reject rows for good (bad data).
 */
export async function asPermanent<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof RangeError) throw new UnrecoverableError(`unstorable input: ${err.message}`);
    if (!(err instanceof UnrecoverableError) && classifyClickhouseError(err) === 'permanent') {
      throw new UnrecoverableError(`rejected by ClickHouse: ${(err as Error).message}`);
    }
    throw err;
  }
}
