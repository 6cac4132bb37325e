import type { FetchLike } from '../../client/src/http.js';

/** One request the client made. */
export interface Sent {
  operation: string;
  headers: Record<string, string>;
  body: any;
  bytes: number;
  keepalive: boolean;
  at: number;
}

export type Reply = { status: number; body?: unknown; headers?: Record<string, string> } | 'network-error' | 'hang';

/**
 * A `fetch` for the client's unit tests: answers each request with what `reply` decides (an
 * answer, a refused connection, or no answer until aborted) and records every request, so a test
 * reads exactly what the client sent. The integration tests use the real service instead.
 */
export function scriptedFetch(reply: (s: Sent, n: number) => Reply | Promise<Reply>): { fetch: FetchLike; sent: Sent[] } {
  const sent: Sent[] = [];
  const fetch: FetchLike = async (url, init) => {
    const s: Sent = {
      operation: url.slice(url.lastIndexOf('/') + 1),
      headers: init.headers,
      body: JSON.parse(init.body),
      bytes: Buffer.byteLength(init.body),
      keepalive: init.keepalive === true,
      at: Date.now(),
    };
    sent.push(s);
    const r = await reply(s, sent.length);
    if (r === 'network-error') throw new TypeError('fetch failed');
    if (r === 'hang') {
      return new Promise((_, reject) => {
        const abort = () => reject(new DOMException('aborted', 'AbortError'));
        if (init.signal?.aborted) abort();
        init.signal?.addEventListener('abort', abort);
      });
    }
    const headers = new Map(Object.entries(r.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
    return {
      status: r.status,
      headers: { get: (name: string) => headers.get(name.toLowerCase()) ?? null },
      text: async () => (r.body === undefined ? '' : JSON.stringify(r.body)),
    };
  };
  return { fetch, sent };
}

export const ok = (body: unknown = {}): Reply => ({ status: 200, body });
export const error = (status: number, code: string, extra: { details?: { field: string; description: string }[]; retryAfter?: string } = {}): Reply => ({
  status,
  body: { error: { code: status, status: code, message: `${code} for the test`, details: extra.details ?? [] } },
  headers: extra.retryAfter ? { 'retry-after': extra.retryAfter } : {},
});

/** The insertIds of every LogEvents request sent, in order. */
export const insertIdsOf = (sent: readonly Sent[]): string[] =>
  sent.filter((s) => s.operation === 'LogEvents').flatMap((s) => s.body.events.map((e: any) => e.insertId));

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
