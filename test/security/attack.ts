import type { AddressInfo } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { FastifyInstance } from 'fastify';
import { expect } from 'vitest';

/**
 * No request may block the event loop for long. On a shared 2-core machine an absolute bound
 * flakes (GC, other processes), so an attack is compared with a benign body of the same size sent
 * to the same operation just before it: a linear parser costs a few times the benign body, the
 * super-linear ones these tests guard against cost hundreds of times more (seconds).
 */
export const STALL_RATIO = 20;
/**
 * The floor of a baseline: below it a measured baseline is noise, not cost (the loop-delay
 * monitor's resolution is 5 ms, and one young-generation collection or a neighbour's burst on the
 * shared machine adds a few more). A body of 1,000 refused timestamps answered in 122 ms against
 * a 6 ms benign body once failed the 20× bound with a 5 ms floor; the stalls guarded against
 * last seconds.
 */
export const LOOP_RESOLUTION_MS = 10;
/** A stall worth a second look in the fuzzer: the 50 ms an operation may block the loop. */
export const STALL_SCREEN_MS = 50;

/** A valid JSON object of exactly `length` characters (at least 15) with nothing to parse but one string. */
export function benignBody(length: number): string {
  return `{"padding":"${'a'.repeat(Math.max(0, length - 15))}"}`;
}

/** `attackMs` is at most STALL_RATIO times the benign `baselineMs` (floored at the monitor's resolution). */
export function withinRatio(attackMs: number, baselineMs: number): boolean {
  return attackMs <= STALL_RATIO * Math.max(baselineMs, LOOP_RESOLUTION_MS);
}

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

export interface Measured<T> extends UnderAttack<T> {
  /** the same measures for a benign body of the same size sent to the same operation */
  baseline: UnderAttack<Answer>;
}

/** POSTs `body` to `path` under attack, after measuring a benign body of the same size there. */
export async function attack(url: string, path: string, body: string, headers: Record<string, string> = {}): Promise<Measured<Answer>> {
  const baseline = await underAttack(url, () => post(url, path, benignBody(body.length), headers));
  return { ...(await underAttack(url, () => post(url, path, body, headers))), baseline };
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

/** The attack answered a 4xx error body, and the process kept serving everyone else meanwhile. */
export function expectRejectedWithoutStall(r: Measured<Answer>, status = 400, field?: string | RegExp): void {
  const { result } = r;
  expect(result.status, result.text.slice(0, 500)).toBe(status);
  expect(result.body?.error?.code).toBe(status);
  expect(typeof result.body?.error?.status).toBe('string');
  expect(Array.isArray(result.body?.error?.details)).toBe(true);
  if (field !== undefined) {
    const fields = (result.body.error.details as { field: string }[]).map((d) => d.field);
    expect(
      fields.some((f) => (typeof field === 'string' ? f === field : field.test(f))),
      `details fields: ${fields.join(', ').slice(0, 500)}`,
    ).toBe(true);
  }
  expectNoStall(r);
}

/** The attack blocked the loop and delayed /healthz no more than STALL_RATIO times the benign body did. */
export function expectNoStall(r: Measured<unknown>): void {
  const { baseline: b } = r;
  const shown = `loop ${r.maxLoopDelayMs.toFixed(1)} ms (benign ${b.maxLoopDelayMs.toFixed(1)}), healthz ${r.slowestHealthzMs.toFixed(1)} ms (benign ${b.slowestHealthzMs.toFixed(1)})`;
  if (process.env.SECURITY_TEST_VERBOSE) console.log(shown);
  expect(withinRatio(r.maxLoopDelayMs, b.maxLoopDelayMs), `event loop blocked: ${shown}`).toBe(true);
  expect(withinRatio(r.slowestHealthzMs, b.slowestHealthzMs), `/healthz answered late: ${shown}`).toBe(true);
}
