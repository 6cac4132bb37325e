/** How long to wait before the next attempt of a send that failed `attempt` times in a row. */
export interface BackoffOptions {
  /** First wait. @defaultValue 500 */
  initialDelayMs?: number;
  /** Longest wait (except that a longer `Retry-After` is always honoured). @defaultValue 30000 */
  maxDelayMs?: number;
}

/**
 * Exponential backoff with jitter: attempt n waits between half and all of
 * min(max, initial × 2^(n−1)), so clients that failed together do not return together. A
 * `Retry-After` the service sent is a floor, spread over up to half as long again.
 */
export function backoffMs(attempt: number, o: Required<BackoffOptions>, retryAfterMs?: number, random: () => number = Math.random): number {
  const exponential = Math.min(o.maxDelayMs, o.initialDelayMs * 2 ** Math.max(0, attempt - 1));
  const jittered = exponential * (0.5 + random() / 2);
  if (retryAfterMs === undefined) return Math.round(jittered);
  return Math.round(Math.max(jittered, retryAfterMs * (1 + random() / 2)));
}

/** A v4 UUID: `crypto.randomUUID` where there is one (Node 20, secure browser contexts), else from getRandomValues. */
export function uuid(): string {
  const c = (globalThis as { crypto?: { randomUUID?: () => string; getRandomValues?: (a: Uint8Array) => Uint8Array } }).crypto;
  if (c?.randomUUID) return c.randomUUID();
  const b = new Uint8Array(16);
  if (c?.getRandomValues) c.getRandomValues(b);
  else for (let i = 0; i < 16; i++) b[i] = Math.floor(Math.random() * 256);
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
