import { TdsError, type ErrorDetail } from './errors.js';

/** A `fetch` the client can use: the global one, or any with its signature (tests, proxies, tracing). */
export type FetchLike = (
  input: string,
  init: { method: string; headers: Record<string, string>; body: string; signal?: AbortSignal; keepalive?: boolean },
) => Promise<{
  status: number;
  headers: { get(name: string): string | null };
  text(): Promise<string>;
}>;

export interface Transport {
  /** The service's address, e.g. `https://tds.example.com` (no trailing slash). */
  baseUrl: string;
  fetch: FetchLike;
}

export interface PostOptions {
  /** Abandons the call after this long (a `timeout` error). */
  timeoutMs: number;
  signal?: AbortSignal;
  /** `fetch` keepalive: the request outlives the page (its body must be at most 64 KB). */
  keepalive?: boolean;
  /** Extra headers, e.g. `x-request-id`. */
  headers?: Record<string, string>;
}

/** The address as given, without trailing slashes; a clear error for anything but http(s). */
export function normaliseBaseUrl(baseUrl: string): string {
  if (typeof baseUrl !== 'string' || !/^https?:\/\/[^/]/i.test(baseUrl))
    throw new TypeError(`baseUrl must be the service's http(s) address, e.g. https://tds.example.com; got ${String(baseUrl)}`);
  return baseUrl.replace(/\/+$/, '');
}

export function defaultFetch(): FetchLike {
  if (typeof fetch !== 'function') throw new TypeError('no global fetch: run on Node.js 20 or newer or a browser, or pass the `fetch` option');
  return fetch as unknown as FetchLike;
}

/** `Retry-After` in milliseconds: whole seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs(value: string | null, now = Date.now()): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  const t = value.trim();
  if (/^\d+$/.test(t)) return Number(t) * 1000;
  const at = Date.parse(t);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/**
 * POST /v1/<operation> with the key, as JSON: the 200 answer's body, or a TdsError. `body` is
 * the JSON text, serialised once by the caller (so a batch's size is known before it is sent).
 */
export async function postJson<T>(t: Transport, operation: string, apiKey: string, body: string, o: PostOptions): Promise<T> {
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, o.timeoutMs);
  const onAbort = () => controller.abort();
  o.signal?.addEventListener('abort', onAbort);
  try {
    if (o.signal?.aborted) throw new TdsError({ operation, kind: 'aborted', message: `${operation} aborted by the caller` });
    let res: Awaited<ReturnType<FetchLike>>;
    let text: string;
    try {
      res = await t.fetch(`${t.baseUrl}/v1/${operation}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': apiKey, ...o.headers },
        body,
        signal: controller.signal,
        ...(o.keepalive ? { keepalive: true } : {}),
      });
      text = await res.text();
    } catch (cause) {
      if (timedOut) throw new TdsError({ operation, kind: 'timeout', message: `${operation}: no answer within ${o.timeoutMs} ms`, cause });
      if (o.signal?.aborted) throw new TdsError({ operation, kind: 'aborted', message: `${operation} aborted by the caller`, cause });
      throw new TdsError({
        operation,
        kind: 'network',
        message: `${operation}: the service could not be reached (${(cause as Error)?.message ?? String(cause)})`,
        cause,
      });
    }
    if (res.status !== 200) throw httpError(operation, res.status, text, res.headers.get('retry-after'));
    try {
      return (text === '' ? {} : JSON.parse(text)) as T;
    } catch (cause) {
      // not the service answering (a proxy's page): as good as no answer
      throw new TdsError({ operation, kind: 'network', message: `${operation}: the answer is not the service's JSON: ${text.slice(0, 100)}`, cause });
    }
  } finally {
    clearTimeout(timer);
    o.signal?.removeEventListener('abort', onAbort);
  }
}

function httpError(operation: string, status: number, text: string, retryAfter: string | null): TdsError {
  let error: { status?: string; message?: string; details?: ErrorDetail[] } | undefined;
  try {
    error = (JSON.parse(text) as { error?: typeof error }).error;
  } catch {
    error = undefined;
  }
  return new TdsError({
    operation,
    kind: 'http',
    status,
    code: error?.status,
    details: Array.isArray(error?.details) ? error.details : [],
    message: `${operation}: ${status} ${error?.status ?? ''} ${error?.message ?? text.slice(0, 200)}`.replace(/\s+/g, ' ').trim(),
    retryAfterMs: retryAfterMs(retryAfter),
  });
}
