import { describe, expect, it } from 'vitest';
import { CONSOLE, findCycle, importsOf, PLATFORM_ADAPTERS, ROOMS, roomOf, runtimeChainTo, sources, type Import } from '../helpers/import-graph.js';

/**
 * The shape of the code through chains of imports (architecture.test.ts checks single imports):
 * no circle between the rooms of shared/ nor among the console's files, what a pure file or a
 * room's index.ts loads at run time, and the bottom room (shared/rules) that imports nothing.
 */
const FILES = [...sources('api'), ...sources('shared'), ...sources('workers')].filter((f) => !f.startsWith(CONSOLE));
const GRAPH = new Map(FILES.map((f) => [f, importsOf(f)]));

/** A room's files that hold storage, queue, cache, service or wire-coding code (schemas hold shapes only: they load typebox, followed below). */
const ADAPTER_FILE = /\.(store|queue|cache|service|codec|presenter|warehouse)\.ts$/;
/** The platform's wire building blocks (typebox only), under http/ but not an adapter. */
const PLATFORM_PURE = ['shared/platform/http/common.schemas.ts'];
const ADAPTER_PACKAGES = ['bullmq', 'ioredis', '@google-cloud/pubsub', 'protobufjs', '@clickhouse/client', 'chdb', 'fastify', 'pino', 'prom-client'];
/** The pure helpers shared/rules may use; nothing else of the project, and no package. */
const RULES_HELPERS = ['shared/platform/rfc3339.ts', 'shared/platform/int64.ts', 'shared/platform/ids.ts'];

const adapter = (i: Import): boolean =>
  i.target
    ? ADAPTER_FILE.test(i.target) || (PLATFORM_ADAPTERS.some((p) => i.target!.startsWith(p)) && !PLATFORM_PURE.includes(i.target))
    : ADAPTER_PACKAGES.some((p) => i.spec === p || i.spec.startsWith(`${p}/`));

/** Room-level graph of shared/: an edge for each import (run-time or type) of another room's file. */
function roomGraph(): Map<string, Set<string>> {
  const graph = new Map(ROOMS.map((r) => [r, new Set<string>()]));
  for (const [f, imports] of GRAPH) {
    const from = roomOf(f);
    if (!from) continue;
    for (const i of imports) {
      const to = i.target && roomOf(i.target);
      if (to && to !== from) graph.get(from)!.add(to);
    }
  }
  return graph;
}

function consoleGraph(): Map<string, Set<string>> {
  const files = sources(CONSOLE.slice(0, -1));
  return new Map(files.map((f) => [f, new Set(importsOf(f).flatMap((i) => (i.target?.startsWith(CONSOLE) ? [i.target] : [])))]));
}

describe('architecture: chains of imports', () => {
  it('the circle finder finds a circle (the checks below are not vacuous)', () => {
    const circle = new Map([
      ['a', new Set(['b'])],
      ['b', new Set(['c'])],
      ['c', new Set(['a'])],
      ['d', new Set(['a'])],
    ]);
    expect(findCycle(circle)).toEqual(['a', 'b', 'c', 'a']);
    expect(
      findCycle(
        new Map([
          ['a', new Set(['b'])],
          ['b', new Set<string>()],
        ]),
      ),
    ).toBeUndefined();
  });

  it('no circle between the rooms of shared/ (run-time and type imports)', () => {
    const graph = roomGraph();
    expect([...graph.values()].reduce((n, to) => n + to.size, 0)).toBeGreaterThan(10);
    expect(findCycle(graph)?.join(' -> ')).toBeUndefined();
  });

  it('no circle among the files of the console (api/console/src)', () => {
    const graph = consoleGraph();
    expect(graph.size).toBeGreaterThan(20);
    expect([...graph.values()].reduce((n, to) => n + to.size, 0)).toBeGreaterThan(40);
    expect(findCycle(graph)?.join(' -> ')).toBeUndefined();
  });

  it("a pure file and a room's index.ts load no adapter through any chain of run-time imports", () => {
    const pure = FILES.filter(
      (f) => roomOf(f) && !/\.(store|queue|cache|service|codec|presenter|schemas|warehouse)\.ts$/.test(f) && !/\/create-[^/]+\.ts$/.test(f),
    );
    expect(pure.filter((f) => f.endsWith('/index.ts')).length).toBe(ROOMS.length);
    expect(pure.length).toBeGreaterThan(40);
    // the same search does find a chain where there is one: a factory builds adapters
    const factory = 'shared/delivery/create-delivery.ts';
    expect(runtimeChainTo(factory, GRAPH, adapter)).toEqual([factory, 'shared/delivery/catalog.cache.ts']);
    expect(runtimeChainTo('shared/delivery/assessment.ts', GRAPH, (i) => i.target === 'shared/rules/eligibility.ts')?.length).toBeGreaterThan(2);
    const bad = pure.flatMap((f) => {
      const chain = runtimeChainTo(f, GRAPH, adapter);
      return chain ? [chain.join(' -> ')] : [];
    });
    expect(bad).toEqual([]);
  });

  it('shared/rules imports nothing of the project but its pure helpers, and no package', () => {
    const rules = FILES.filter((f) => roomOf(f) === 'rules');
    expect(rules.length).toBeGreaterThanOrEqual(5);
    const imports = rules.flatMap((f) => GRAPH.get(f)!.map((i) => ({ f, i })));
    expect(imports.filter(({ i }) => i.target && RULES_HELPERS.includes(i.target)).length).toBeGreaterThan(0);
    const allowed = (target: string | undefined) => target !== undefined && (target.startsWith('shared/rules/') || RULES_HELPERS.includes(target));
    const bad = imports.filter(({ i }) => !allowed(i.target)).map(({ f, i }) => `${f} -> ${i.target ?? i.spec}`);
    expect(bad).toEqual([]);
  });
});
