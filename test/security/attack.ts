import type { AddressInfo } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { FastifyInstance } from 'fastify';
import { expect } from 'vitest';

/**
 * D45: no request may block the event loop for more than 50 ms. Measured on a shared 2-core
 * machine, so the assertions leave a margin for load (GC, other processes); the attacks they
 * guard against cost seconds.
 */
export const STALL_BOUND_MS = 50;
export const MARGIN_MS = 100;

/** A real listener on an ephemeral port for an app built by createTestApp. */
export async function listen(app: FastifyInstance): Promise<string> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
}

export interface Answer {
  status: number;
  body: any;
  text: string;
}

/** POST with a body sent as given (a pre-built string, so building it is not measured). */
export async function post(url: string, path: string, body: string, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  const text = await res.text();
  let parsed: unknown;
  // a large answer (a delivered megabyte of content) is not parsed here: the client shares the
  // process, and its own parsing would count as the server's stall
  if (text.length < 100_000 || res.status >= 400) {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
  }
  return { status: res.status, body: parsed, text: text.length < 100_000 ? text : text.slice(0, 1000) };
}

export interface UnderAttack<T> {
  result: T;
  /** the slowest `/healthz` answer while the attack ran */
  slowestHealthzMs: number;
  healthzAnswers: number;
  /** the longest the event loop was blocked meanwhile */
  maxLoopDelayMs: number;
}

/**
 * Runs `attack` while `/healthz` is asked every few ms on its own connection and the event
 * loop's delay is recorded: both say whether every other client of the process was served.
 */
export async function underAttack<T>(url: string, attack: () => Promise<T>): Promise<UnderAttack<T>> {
  // warm the healthz connection so its set-up is not counted
  await fetch(`${url}/healthz`).then((r) => r.text());
  const loop = monitorEventLoopDelay({ resolution: 5 });
  let done = false;
  let slowest = 0;
  let answers = 0;
  const prober = (async () => {
    while (!done) {
      const t0 = performance.now();
      const res = await fetch(`${url}/healthz`);
      await res.text();
      expect(res.status).toBe(200);
      slowest = Math.max(slowest, performance.now() - t0);
      answers++;
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  loop.enable();
  try {
    const result = await attack();
    return { result, slowestHealthzMs: slowest, healthzAnswers: answers, maxLoopDelayMs: loop.max / 1e6 };
  } finally {
    done = true;
    loop.disable();
    await prober;
  }
}

/** The attack answered a D4 4xx, and the process kept serving everyone else meanwhile. */
export function expectRejectedWithoutStall(r: UnderAttack<Answer>, status = 400, field?: string | RegExp): void {
  const { result } = r;
  expect(result.status, result.text.slice(0, 500)).toBe(status);
  expect(result.body?.error?.code).toBe(status);
  expect(typeof result.body?.error?.status).toBe('string');
  expect(Array.isArray(result.body?.error?.details)).toBe(true);
  if (field !== undefined) {
    const fields = (result.body.error.details as { field: string }[]).map((d) => d.field);
    expect(fields.some((f) => (typeof field === 'string' ? f === field : field.test(f))), `details fields: ${fields.join(', ').slice(0, 500)}`).toBe(true);
  }
  expectNoStall(r);
}

export function expectNoStall(r: UnderAttack<unknown>): void {
  if (process.env.SECURITY_TEST_VERBOSE) console.log(`loop ${r.maxLoopDelayMs.toFixed(1)} ms, healthz ${r.slowestHealthzMs.toFixed(1)} ms (${r.healthzAnswers} answers)`);
  expect(r.maxLoopDelayMs, 'event loop blocked').toBeLessThan(STALL_BOUND_MS + MARGIN_MS);
  expect(r.slowestHealthzMs, '/healthz answered late').toBeLessThan(STALL_BOUND_MS + MARGIN_MS);
}
