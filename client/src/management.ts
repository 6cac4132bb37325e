import { MANAGEMENT_OPERATIONS, type ManagementOperationName, type Operations } from './wire.generated.js';
import { TdsError } from './errors.js';
import { backoffMs } from './backoff.js';
import { defaultFetch, normaliseBaseUrl, postJson, type FetchLike, type Transport } from './http.js';

export { MANAGEMENT_OPERATIONS, type ManagementOperationName };

/** A request without `projectId`: the client's own is filled in. */
export type ManagementRequest<K extends ManagementOperationName> = Omit<Operations[K]['request'], 'projectId'> & { projectId?: string };

export interface CallOptions {
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** `insertSurface(...)`, `getAllTreatments(...)`, ...: one method per management operation. */
export type ManagementMethods = {
  [K in ManagementOperationName as Uncapitalize<K>]: (request: ManagementRequest<K>, o?: CallOptions) => Promise<Operations[K]['response']>;
};

export interface ManagementClient extends ManagementMethods {
  readonly projectId: string;
  /** Any management operation by name. */
  call<K extends ManagementOperationName>(operation: K, request: ManagementRequest<K>, o?: CallOptions): Promise<Operations[K]['response']>;
}

export interface ManagementClientOptions {
  /** The service's address, e.g. `https://tds.example.com`. */
  baseUrl: string;
  projectId: string;
  /**
   * A TREATMENT_MANAGEMENT key (keep it on servers and in CI secrets, never in a page). Required:
   * `undefined` (an unset environment variable) throws a TypeError saying so.
   */
  apiKey: string | undefined;
  /** @defaultValue 30000 */
  timeoutMs?: number;
  /**
   * Retries of a call the service did not take: after a 429 (always safe), and after a 503, a
   * timeout or no answer for reads only (Get…, List…, Explain…, Preview…), since a change may
   * have been applied before its answer was lost. @defaultValue 3
   */
  maxRetries?: number;
  /** @defaultValue globalThis.fetch */
  fetch?: FetchLike;
}

const READ = /^(Get|List|Explain|Preview)/;

function mayRetry(operation: string, err: unknown): err is TdsError {
  if (!(err instanceof TdsError)) return false;
  if (err.status === 429) return true;
  return READ.test(operation) && (err.status === 503 || err.kind === 'timeout' || err.kind === 'network');
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The management operations for scripts and CI pipelines (surfaces, treatment types, data
 * fields, treatments, reports), typed from the service's schemas. Errors are TdsErrors carrying
 * the service's `code` and per-field `details`.
 */
export function createManagementClient(o: ManagementClientOptions): ManagementClient {
  const apiKey = o?.apiKey;
  if (typeof apiKey !== 'string' || apiKey === '') throw new TypeError('apiKey (a TREATMENT_MANAGEMENT key) is required');
  if (typeof o.projectId !== 'string' || o.projectId === '') throw new TypeError('projectId is required');
  const transport: Transport = { baseUrl: normaliseBaseUrl(o.baseUrl), fetch: o.fetch ?? defaultFetch() };
  const maxRetries = o.maxRetries ?? 3;
  const call = async <K extends ManagementOperationName>(
    operation: K,
    request: ManagementRequest<K>,
    c: CallOptions = {},
  ): Promise<Operations[K]['response']> => {
    if (!(MANAGEMENT_OPERATIONS as readonly string[]).includes(operation)) throw new TypeError(`${String(operation)} is not a management operation`);
    const body = JSON.stringify({ ...request, projectId: request?.projectId ?? o.projectId });
    for (let attempt = 1; ; attempt++) {
      try {
        return await postJson<Operations[K]['response']>(transport, operation, apiKey, body, {
          timeoutMs: c.timeoutMs ?? o.timeoutMs ?? 30_000,
          signal: c.signal,
        });
      } catch (err) {
        if (attempt > maxRetries || !mayRetry(operation, err)) throw err;
        await sleep(backoffMs(attempt, { initialDelayMs: 250, maxDelayMs: 10_000 }, err.retryAfterMs));
      }
    }
  };
  const client = { projectId: o.projectId, call } as ManagementClient;
  const methods = client as unknown as Record<string, unknown>;
  for (const op of MANAGEMENT_OPERATIONS) methods[op[0].toLowerCase() + op.slice(1)] = (request: never, c?: CallOptions) => call(op, request, c);
  return client;
}
