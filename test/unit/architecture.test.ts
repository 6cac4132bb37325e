import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { CONSOLE, importsOf, PLATFORM_ADAPTERS, ROOMS, ROOT, roomOf, sources } from '../helpers/import-graph.js';

/**
 * The shape of the code, checked: tiers (shared never imports api or workers), feature rooms and
 * their doors, pure logic (a room's files without an adapter suffix import no storage, queue,
 * HTTP or warehouse code) and file size. Circles and what pure files load through chains of
 * imports: architecture-graph.test.ts.
 *
 * A room has three doors:
 * - its index.ts: types and pure functions only (adapters' types with `export type`), the only door
 *   for other rooms;
 * - its create-<room>.ts factory, which builds its adapters (stores, queues, caches, services):
 *   imported only by the composition roots (and tests), which pass what it built down;
 * - its wire modules (*.schemas, *.presenter, *.codec: request and response shapes, payload
 *   decoding; *.warehouse: its ClickHouse rows and SQL), which api/ and workers/ (the edges that
 *   speak the wire and write the rows) may import directly.
 *   Schemas load nothing but typebox, so index.ts may also export them.
 */
const ALL = [...sources('api'), ...sources('shared'), ...sources('workers')];
/** The service's sources, whose tiers, rooms and purity are checked. */
const FILES = ALL.filter((f) => !f.startsWith(CONSOLE));
const GRAPH = new Map(FILES.map((f) => [f, importsOf(f)]));

/** Files of a room that talk to Redis, queues, the wire (codecs, presenters, schemas) or other processes say so in their name. */
const ADAPTER_SUFFIX = /\.(store|queue|cache|service|codec|presenter|schemas|warehouse)\.ts$/;
const WIRE_DOOR = /\.(schemas|presenter|codec|warehouse)\.ts$/;
const FACTORY = /^shared\/[^/]+\/create-[^/]+\.ts$/;
/** Logic may name the wire shapes' types (derived from the one schema with Static<>), never load them. */
const WIRE_TYPES = /(\.schemas\.ts|^typebox)$/;
const ADAPTER_PACKAGES = ['ioredis', 'bullmq', '@clickhouse/client', 'chdb', 'fastify', '@google-cloud/pubsub', 'typebox', 'pino', 'prom-client'];

/** The processes' and roles' composition: the only files outside a room that call its factory. */
const COMPOSITION_ROOTS = /^(api\/compose-api\.ts|api\/server\.ts|workers\/main\.ts|api\/cli\/[^/]+\.ts)$/;

/** Every import of a room file from outside that room, as `importer -> target`. */
function intoRooms(): { from: string; to: string; edge: string }[] {
  return FILES.flatMap((from) =>
    GRAPH.get(from)!
      .filter((i) => i.target && roomOf(i.target) && roomOf(i.target) !== roomOf(from))
      .map((i) => ({ from, to: i.target!, edge: `${from} -> ${i.target}` })),
  );
}

describe('architecture', () => {
  it('finds the sources and their imports (the checks below are not vacuous)', () => {
    expect(FILES.length).toBeGreaterThan(100);
    expect(GRAPH.get('api/server.ts')!.length).toBeGreaterThan(3);
    for (const r of ROOMS) expect(FILES).toContain(`shared/${r}/index.ts`);
    expect(ALL).toContain(`${CONSOLE}pages/Treatments.tsx`);
    expect(intoRooms().length).toBeGreaterThan(100);
  });

  it('shared/ never imports api/ or workers/', () => {
    const shared = FILES.filter((f) => f.startsWith('shared/'));
    expect(shared.flatMap((f) => GRAPH.get(f)!).filter((i) => i.target).length).toBeGreaterThan(200);
    const bad = shared.flatMap((f) =>
      GRAPH.get(f)!
        .filter((i) => i.target && /^(api|workers)\//.test(i.target))
        .map((i) => `${f} -> ${i.target}`),
    );
    expect(bad).toEqual([]);
  });

  it('another room is entered through its index.ts; api/ and workers/ also through its wire modules and, from a composition root, its factory', () => {
    const doorOf = ({ from, to }: { from: string; to: string }): string | undefined => {
      if (to === `shared/${roomOf(to)}/index.ts`) return 'index';
      if (from.startsWith('shared/')) return undefined;
      if (WIRE_DOOR.test(to)) return 'wire';
      if (FACTORY.test(to) && COMPOSITION_ROOTS.test(from)) return 'factory';
      return undefined;
    };
    const edges = intoRooms().map((e) => ({ ...e, door: doorOf(e) }));
    expect(edges.filter((e) => e.door === undefined).map((e) => e.edge)).toEqual([]);
    const doors = { index: 0, wire: 0, factory: 0 };
    for (const { door } of edges) if (door && door in doors) doors[door as keyof typeof doors]++;
    expect(doors.index).toBeGreaterThan(100);
    expect(doors.wire).toBeGreaterThan(5);
    expect(doors.factory).toBeGreaterThan(8);
  });

  it('outside its room, a factory (create-<room>.ts) is imported only by the composition roots', () => {
    const users = intoRooms().filter(({ to }) => FACTORY.test(to));
    expect(users.filter(({ from }) => from === 'api/compose-api.ts').length).toBeGreaterThanOrEqual(8);
    expect(users.filter(({ from }) => from === 'workers/main.ts').length).toBeGreaterThan(3);
    expect(users.filter(({ from }) => !COMPOSITION_ROOTS.test(from)).map(({ edge }) => edge)).toEqual([]);
  });

  it("a room's index.ts exports adapters (and factories) as types only", () => {
    const barrels = FILES.filter((f) => roomOf(f) && f.endsWith('/index.ts'));
    expect(barrels.length).toBe(ROOMS.length);
    const exported = barrels.flatMap((f) => GRAPH.get(f)!.map((i) => ({ f, i })));
    expect(exported.filter(({ i }) => i.typeOnly).length).toBeGreaterThan(10);
    const bad = exported
      .filter(({ i }) => !i.typeOnly && i.target && (/\.(store|queue|cache|service|codec|presenter|warehouse)\.ts$/.test(i.target) || FACTORY.test(i.target)))
      .map(({ f, i }) => `${f} -> ${i.target}`);
    expect(bad).toEqual([]);
  });

  it('pure logic imports no storage, queue, wire or warehouse code', () => {
    const pure = FILES.filter((f) => roomOf(f) && !ADAPTER_SUFFIX.test(f) && !f.endsWith('/index.ts') && !FACTORY.test(f));
    expect(pure.length).toBeGreaterThan(20);
    const bad = pure.flatMap((f) =>
      GRAPH.get(f)!
        .filter((i) => !(i.typeOnly && WIRE_TYPES.test(i.target ?? i.spec)))
        .filter((i) => (i.target ? ADAPTER_SUFFIX.test(i.target) || PLATFORM_ADAPTERS.some((p) => i.target!.startsWith(p)) : ADAPTER_PACKAGES.includes(i.spec)))
        .map((i) => `${f} -> ${i.target ?? i.spec}`),
    );
    expect(bad).toEqual([]);
  });

  it('the client (client/src) runs on its own: it imports only its own files, and no package', () => {
    const client = sources('client/src');
    expect(client).toContain('client/src/index.ts');
    const bad = client.flatMap((f) =>
      importsOf(f)
        .filter((i) => !i.target?.startsWith('client/src/'))
        .map((i) => `${f} -> ${i.target ?? i.spec}`),
    );
    expect(bad).toEqual([]);
  });

  it('no source file is over 400 lines (generated files aside)', () => {
    const all = [...ALL, ...sources('bench'), ...sources('test'), ...sources('client/src'), ...sources('client/scripts')];
    expect(all.length).toBeGreaterThan(300);
    const long = all
      .filter((f) => !f.endsWith('.generated.ts'))
      .map((f) => ({ f, lines: readFileSync(join(ROOT, f), 'utf8').split('\n').length }))
      .filter(({ lines }) => lines > 400)
      .map(({ f, lines }) => `${relative('.', f)}: ${lines}`);
    expect(long).toEqual([]);
  });
});
