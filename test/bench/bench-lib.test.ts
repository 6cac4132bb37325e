import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createServer as createTcpServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { docsBlock, docsMarkers, docsRefusal, DOCS_MARKERS, writeDocsBlock, type DocsRun } from '../../bench/lib/docs-writer.js';
import { DOCS_FILE } from '../../bench/run.js';
import { runOpenLoop } from '../../bench/lib/open-loop.js';
import { RecoveryDetector } from '../../bench/lib/overload.js';
import { threadCpuOf, threadCpuPer } from '../../bench/lib/proc-stat.js';
import { parseResponse } from '../../bench/lib/raw-http.js';
import { eventRequest, eventRequestBody, logEventsBody } from '../../bench/lib/event-generator.js';
import { runRetryingLoad } from '../../bench/lib/retrying-load.js';
import { figure } from '../../bench/lib/scenario.js';
import { ScenarioRun } from '../../bench/lib/scenario-run.js';
import { markdownTable, resultsTable } from '../../bench/lib/table-printer.js';
import { BENCH_PORTS, ephemeralRange, freePorts } from '../../bench/lib/tsx-child.js';

/** The bench's own machinery, without a service: ports, the open loop's accounting, recovery, the docs table. */

describe('CPU per unit by thread group', () => {
  it('is the growth of each group between two readings per unit, in µs, largest first, small ones left out', () => {
    const before = new Map([
      ['main', 1.0],
      ['ThreadPool', 0.5],
      ['node', 0.2],
    ]);
    // a group that appears only in the second reading counts from zero
    const after = new Map([
      ['main', 1.5],
      ['ThreadPool', 0.5001],
      ['node', 0.4],
      ['MergeMutate', 0.3],
    ]);
    expect(threadCpuPer(before, after, 100_000, 0.01)).toEqual([
      ['main', expect.closeTo(5, 9)],
      ['MergeMutate', expect.closeTo(3, 9)],
      ['node', expect.closeTo(2, 9)],
    ]);
  });

  it("reads this process's own threads, its main thread named main", () => {
    const groups = threadCpuOf(process.pid, { splitMainKernel: true });
    expect(groups.has('main')).toBe(true);
    expect(groups.has('main in the kernel')).toBe(true);
  });
});

describe('ports the bench hands out', () => {
  it('are outside the kernel ephemeral range, free, consecutive in a block, and never handed out twice', async () => {
    const eph = ephemeralRange();
    const seen = new Set<number>();
    for (let n = 0; n < 20; n++) {
      const first = await freePorts(3);
      for (const p of [first, first + 1, first + 2]) {
        expect(p >= BENCH_PORTS.low && p <= BENCH_PORTS.high, `${p}`).toBe(true);
        expect(p < eph.low || p > eph.high, `${p} in ${eph.low}-${eph.high}`).toBe(true);
        expect(seen.has(p), `${p} handed out twice`).toBe(false);
        seen.add(p);
      }
      // free: this process can bind it
      await new Promise<void>((resolve, reject) => {
        const s = createTcpServer().once('error', reject);
        s.listen(first + 2, '127.0.0.1', () => s.close(() => resolve()));
      });
    }
  });
});

describe("the open loop's HTTP client", () => {
  const b = (s: string) => Buffer.from(s, 'latin1');
  it('finds where a response ends: Content-Length, chunked, no body; nothing while incomplete', () => {
    const one = 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\ncontent-length: 2\r\n\r\n{}';
    expect(parseResponse(b(one + 'HTTP/1.1 503'))).toEqual({ status: 200, length: one.length, close: false });
    expect(parseResponse(b(one.slice(0, -1)))).toBeUndefined();
    expect(parseResponse(b('HTTP/1.1 200 OK\r\nConte'))).toBeUndefined();
    const chunked = 'HTTP/1.1 503 Service Unavailable\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3\r\nabc\r\nA\r\n0123456789\r\n0\r\n\r\n';
    expect(parseResponse(b(chunked))).toEqual({ status: 503, length: chunked.length, close: true });
    expect(parseResponse(b(chunked.slice(0, -2)))).toBeUndefined();
    expect(parseResponse(b(chunked.slice(0, 70)))).toBeUndefined();
    expect(parseResponse(b('HTTP/1.1 204 No Content\r\n\r\n'))).toEqual({ status: 204, length: 27, close: false });
  });

  it("reads a refusal's Retry-After, and none of an answer's", () => {
    const refused = 'HTTP/1.1 503 Service Unavailable\r\nRetry-After: 2\r\ncontent-length: 2\r\n\r\n{}';
    expect(parseResponse(b(refused))).toEqual({ status: 503, length: refused.length, close: false, retryAfterSec: 2 });
    const ok = 'HTTP/1.1 200 OK\r\nretry-after: 2\r\ncontent-length: 0\r\n\r\n';
    expect(parseResponse(b(ok))).toEqual({ status: 200, length: ok.length, close: false });
  });
});

describe('the ingest load', () => {
  it('builds the bytes JSON.stringify makes of the generated request, without it', () => {
    for (const eventsPerRequest of [1, 3, 100]) {
      const stream = { runId: 'ab12', users: 7, eventsPerRequest };
      for (const i of [0, 1, 6, 7, 12_345]) {
        const body = eventRequestBody('proj "x"', stream, i, 1_765_000_000_123);
        expect(body).toBe(logEventsBody('proj "x"', eventRequest(stream, i, 1_765_000_000_123)));
        expect(JSON.parse(body).events).toHaveLength(eventsPerRequest);
      }
    }
  });

  it('gets every request accepted: a refusal is sent again after its Retry-After, another status fails', async () => {
    // each request body's first attempt is refused (503, Retry-After: 1); "bad" answers 400
    const seen = new Map<string, number>();
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        const tries = (seen.get(body) ?? 0) + 1;
        seen.set(body, tries);
        if (req.headers['x-api-key'] !== 'k') return void res.writeHead(401).end('{}');
        if (body === 'bad') return void res.writeHead(400).end('{}');
        if (tries === 1) return void res.writeHead(503, { 'retry-after': '1' }).end('{}');
        res.writeHead(200).end('{}');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const { port } = server.address() as { port: number };
      const started = performance.now();
      const r = await runRetryingLoad({
        baseUrl: `http://127.0.0.1:${port}`,
        path: '/v1/LogEvents',
        connections: 3,
        requests: 6,
        headers: { 'x-api-key': 'k' },
        body: (i) => (i === 5 ? 'bad' : `request ${i}`),
        maxSec: 20,
      });
      expect(r).toMatchObject({ accepted: 5, refused: 5, failed: 1, statusCodes: { 200: 5, 503: 5, 400: 1 } });
      expect(r.failures).toEqual(['request 5: status 400']);
      // every accepted request waited its Retry-After once
      expect(performance.now() - started).toBeGreaterThanOrEqual(1000);
      expect([...seen.entries()].filter(([b]) => b !== 'bad').every(([, n]) => n === 2)).toBe(true);
    } finally {
      server.close();
    }
  });
});

describe('open loop', () => {
  let server: Server;
  let baseUrl: string;
  let n = 0;
  beforeAll(async () => {
    // every other request is refused at once with 503; the others answer after 30 ms; every 7th
    // answer closes its connection; /hang never answers
    server = createServer((req, res) => {
      req.resume();
      if (req.url === '/hang') return;
      const k = n++;
      const close = k % 7 === 6 ? { connection: 'close' } : {};
      if (k % 2 === 1) return void res.writeHead(503, { 'retry-after': '1', ...close }).end('{}');
      setTimeout(() => res.writeHead(200, close).end(k % 4 === 0 ? 'x'.repeat(100_000) : '{}'), 30);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const a = server.address();
    baseUrl = `http://127.0.0.1:${a && typeof a === 'object' ? a.port : 0}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('counts a 503 as an answer with its own latency, and the longest wait over every answer', async () => {
    const answers: number[] = [];
    n = 0;
    const r = await runOpenLoop({
      baseUrl,
      path: '/x',
      rate: 200,
      durationSec: 0.5,
      connections: 20,
      body: () => '{}',
      preconnect: true,
      onAnswer: (a) => answers.push(a.status),
    });
    expect(r.sent).toBe(100);
    // preconnect: one request answered on each of the 20 connections before the clock started
    expect(n).toBe(120);
    expect(r.answered).toBe(100);
    expect(r.ok).toBe(50);
    expect(r.refused).toBe(50);
    expect(r.errors).toBe(0);
    expect(answers.filter((s) => s === 503)).toHaveLength(50);
    expect(r.refusedP50).toBeLessThan(r.p50);
    expect(r.p50).toBeGreaterThanOrEqual(29);
    expect(r.maxWaitMs).toBeGreaterThanOrEqual(r.max);
  });

  it('abandons a request unanswered in time as a timeout, its wait counted', async () => {
    const r = await runOpenLoop({ baseUrl, path: '/hang', rate: 20, durationSec: 0.1, connections: 2, body: () => '{}', requestTimeoutMs: 300 });
    expect(r.sent).toBe(2);
    expect(r.answered).toBe(0);
    expect(r.timeouts).toBe(2);
    expect(r.errors).toBe(2);
    expect(r.maxWaitMs).toBeGreaterThanOrEqual(300);
  });

  it('tells a request that waited for a free connection from one the generator sent late', async () => {
    // one connection: the second request waits until the first is abandoned (300–400 ms)
    const r = await runOpenLoop({ baseUrl, path: '/hang', rate: 20, durationSec: 0.1, connections: 1, body: () => '{}', requestTimeoutMs: 300 });
    expect(r.sent).toBe(2);
    expect(r.maxSendLagMs).toBeLessThan(100);
    expect(r.maxWriteLagMs).toBeGreaterThanOrEqual(200);
    const second = r.slowest.find((x) => x.dueSec >= 0.04);
    expect(second?.writeLagMs).toBeGreaterThanOrEqual(200);
    expect(r.slowest.find((x) => x.dueSec < 0.04)?.writeLagMs).toBeLessThan(100);
  });

  it('stops sending when its signal aborts and still awaits what it sent', async () => {
    const stop = new AbortController();
    setTimeout(() => stop.abort(), 200);
    const r = await runOpenLoop({ baseUrl, path: '/x', rate: 100, durationSec: 10, connections: 10, body: () => '{}', signal: stop.signal });
    expect(r.sent).toBeGreaterThan(5);
    expect(r.sent).toBeLessThan(100);
    expect(r.answered).toBe(r.sent);
  });
});

describe('recovery after overload', () => {
  it('is the first of `window` consecutive normal probes, judged in the order they were due', () => {
    const d = new RecoveryDetector(3, 5);
    // probe 0 slow, 1 refused, then 2..4 normal: answers arrive out of order
    d.add(3, 200, 1);
    d.add(0, 200, 50);
    d.add(2, 200, 1);
    expect(d.recoveredAt).toBeUndefined();
    d.add(1, 503, 1);
    expect(d.recoveredAt).toBeUndefined();
    d.add(4, 200, 4);
    expect(d.recoveredAt).toBe(2);
    d.add(5, 200, 9);
    d.add(6, 200, 1);
    expect(d.relapses).toBe(1);
  });
});

describe('the results table', () => {
  const results = [
    {
      scenario: 'delivery',
      size: 'full' as const,
      startedAt: '',
      seconds: 1,
      params: {},
      notes: [],
      figures: {
        requestsPerSec: figure({
          label: 'GetTreatments requests/s',
          unit: 'req/s',
          value: 7000,
          baseline: 20000,
          baselineLabel: 'bare | route',
          better: 'higher',
          target: { on: 'ratio', bound: 'min', limit: 0.5 },
        }),
        decisionLogCost: figure({
          label: 'decision log cost',
          unit: 'share',
          value: 0.084,
          baseline: 0.02,
          baselineLabel: 'noise',
          better: 'lower',
          target: { on: 'value', bound: 'max', limit: 0.1 },
        }),
        recoveryMs: figure({ label: 'recovery', unit: 'ms', value: 2500, better: 'lower', target: { on: 'value', bound: 'max', limit: 2000 } }),
      },
    },
  ];

  it('prints every target beside its figure as met / NOT MET, a share as a percentage, no ratio without a baseline', () => {
    const lines = resultsTable(results).split('\n');
    expect(lines.find((l) => l.includes('GetTreatments requests/s'))).toMatch(/0\.35\s+ratio ≥ 0\.5\s+NOT MET$/);
    expect(lines.find((l) => l.includes('decision log cost'))).toMatch(/8\.4 %\s+2\.0 %\s+4\.20\s+≤ 10 %\s+met$/);
    expect(lines.find((l) => l.includes('recovery'))).toMatch(/2,500\.0 ms\s+≤ 2,000 ms\s+NOT MET$/);
  });

  it('writes Markdown between the markers of the docs page and nowhere else; refuses a run on a busy machine or at toy size', () => {
    const run: DocsRun = {
      machine: { cpus: 2, cpuModel: 'EPYC', node: 'v20', platform: 'linux x64' },
      size: 'full',
      startedAt: '2026-12-01T10:00:00Z',
      loadAverage: { before: 0.4, after: 2.1 },
      results,
      failures: [],
    };
    expect(docsRefusal(run)).toBeUndefined();
    expect(docsRefusal({ ...run, loadAverage: { before: 1.6, after: 0.2 } })).toMatch(/load average was 1\.60/);
    expect(docsRefusal({ ...run, loadAverage: { before: NaN, after: 0.2 } })).toBeDefined();
    expect(docsRefusal({ ...run, size: 'tiny' })).toMatch(/tiny/);
    const md = markdownTable(results);
    expect(md).toContain('| delivery | GetTreatments requests/s | 7,000 req/s | 20,000 req/s | 0.35 | ratio ≥ 0.5 | **not met** |');
    expect(md).toContain('| delivery | recovery | 2,500.0 ms |  |  | ≤ 2,000 ms | **not met** |');
    expect(md).toContain('- delivery: bare | route; noise');

    const dir = mkdtempSync(join(tmpdir(), 'tds-bench-docs-'));
    try {
      const file = join(dir, 'benchmarks.md');
      writeFileSync(file, `# Benchmarks\n\nintro\n\n${DOCS_MARKERS.start}\nold table\n${DOCS_MARKERS.end}\n\nanalysis by hand\n`);
      writeDocsBlock(file, docsBlock(run, 'abc1234'));
      const text = readFileSync(file, 'utf8');
      expect(text).not.toContain('old table');
      expect(text).toMatch(/^# Benchmarks\n\nintro\n\n/);
      expect(text).toMatch(/analysis by hand\n$/);
      expect(text).toContain('load average (1 min) 0.40 when it started, 2.10 when it ended');
      expect(text).toContain('commit abc1234');
      // written twice: still one table
      writeDocsBlock(file, docsBlock(run, 'abc1234'));
      expect(readFileSync(file, 'utf8').split('| delivery | GetTreatments requests/s').length).toBe(2);
      writeFileSync(file, 'no markers\n');
      expect(() => writeDocsBlock(file, 'x')).toThrow(/markers/);
      // the real page has them, so --write-docs can write it
      expect(() => docsMarkers(DOCS_FILE)).not.toThrow();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("a scenario run's second place", () => {
  it('gives a second service its own prefix and data directory, and close() removes both with the run’s own', async () => {
    const workDir = mkdtempSync(join(tmpdir(), 'tds-place-'));
    const ctx = { size: 'tiny' as const, redisUrl: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', progress: () => undefined, workDir, previous: new Map() };
    const run = ScenarioRun.open(ctx, 'place-test');
    const other = run.place('log-off');
    expect(other.prefix).not.toBe(run.prefix);
    // neither prefix's keys match the other's pattern (`prefix:*`)
    expect(other.prefix.startsWith(`${run.prefix}:`)).toBe(false);
    expect(other.dataDir).not.toBe(run.dataDir);
    expect(existsSync(other.dataDir)).toBe(true);
    expect(other.keys.prefix).toBe(other.prefix);
    await run.redis.set(`${run.prefix}:k`, '1');
    await run.redis.set(`${other.prefix}:k`, '1');
    const check = new Redis(ctx.redisUrl);
    try {
      await run.close();
      expect(await check.exists(`${run.prefix}:k`, `${other.prefix}:k`)).toBe(0);
      expect(existsSync(other.dataDir)).toBe(false);
      expect(existsSync(run.dataDir)).toBe(false);
    } finally {
      check.disconnect();
      rmSync(workDir, { recursive: true, force: true });
    }
  });
});
