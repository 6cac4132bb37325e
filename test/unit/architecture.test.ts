import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The shape of the code, checked: tiers (shared never imports api or workers), feature rooms
 * (another room is reached only through its index.ts), pure logic (a room's files without an
 * adapter suffix import no storage, queue, HTTP or warehouse code) and file size. The web console
 * (api/console/src) is a separate browser front-end: only the size rule covers it.
 */
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const ROOMS = ['projects', 'catalog', 'treatments', 'delivery', 'ingestion', 'profiles', 'aggregation', 'impact'];
/** Files of a room that talk to Redis, queues, the wire (codecs, presenters, schemas) or other processes say so in their name. */
const ADAPTER_SUFFIX = /\.(store|queue|cache|service|codec|presenter|schemas|warehouse)\.ts$/;
/** Logic may name the wire shapes' types (derived from the one schema with Static<>), never load them. */
const WIRE_TYPES = /(\.schemas\.ts|^typebox)$/;
const ADAPTER_PACKAGES = ['ioredis', 'bullmq', '@clickhouse/client', 'chdb', 'fastify', '@google-cloud/pubsub', 'typebox', 'pino', 'prom-client'];
const PLATFORM_ADAPTERS = ['shared/platform/redis/', 'shared/platform/warehouse/', 'shared/platform/http/', 'shared/platform/pubsub/', 'shared/platform/limits/', 'shared/platform/queues.ts', 'shared/platform/metrics.ts', 'shared/platform/logger.ts', 'shared/platform/config.ts', 'shared/platform/ops-server.ts'];

const CONSOLE = 'api/console/src/';

function sources(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const p = `${dir}/${e.name}`;
    if (e.isDirectory()) {
      if (e.name !== 'node_modules') sources(p, out);
    } else if (/\.tsx?$/.test(e.name)) out.push(p);
  }
  return out;
}

interface Import {
  spec: string;
  /** repository-relative .ts path of a relative import, else undefined */
  target?: string;
  typeOnly: boolean;
}

const IMPORT = /(?:^|\n)\s*(import|export)\s+(type\s+)?(?:[^'";]*?\s+from\s+)?['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

function importsOf(file: string): Import[] {
  const src = readFileSync(join(ROOT, file), 'utf8');
  const out: Import[] = [];
  for (const m of src.matchAll(IMPORT)) {
    const spec = m[3] ?? m[4];
    const typeOnly = m[2] !== undefined;
    const target = spec.startsWith('.') ? normalize(join(dirname(file), spec)).replace(/\.js$/, '.ts') : undefined;
    out.push({ spec, target, typeOnly });
  }
  return out;
}

const roomOf = (path: string): string | undefined => ROOMS.find((r) => path.startsWith(`shared/${r}/`));
const ALL = [...sources('api'), ...sources('shared'), ...sources('workers')];
/** The service's sources, whose tiers, rooms and purity are checked. */
const FILES = ALL.filter((f) => !f.startsWith(CONSOLE));
const GRAPH = new Map(FILES.map((f) => [f, importsOf(f)]));

describe('architecture', () => {
  it('finds the sources and their imports (the checks below are not vacuous)', () => {
    expect(FILES.length).toBeGreaterThan(100);
    expect(GRAPH.get('api/server.ts')!.length).toBeGreaterThan(3);
    for (const r of ROOMS) expect(FILES).toContain(`shared/${r}/index.ts`);
    expect(ALL).toContain(`${CONSOLE}pages/Treatments.tsx`);
  });

  it('shared/ never imports api/ or workers/', () => {
    const bad = FILES.filter((f) => f.startsWith('shared/')).flatMap((f) => GRAPH.get(f)!.filter((i) => i.target && /^(api|workers)\//.test(i.target)).map((i) => `${f} -> ${i.target}`));
    expect(bad).toEqual([]);
  });

  it('a feature room is entered only through its index.ts', () => {
    const bad = FILES.flatMap((f) =>
      GRAPH.get(f)!
        .filter((i) => i.target && roomOf(i.target) && roomOf(i.target) !== roomOf(f) && i.target !== `shared/${roomOf(i.target)}/index.ts`)
        .map((i) => `${f} -> ${i.target}`),
    );
    expect(bad).toEqual([]);
  });

  it('pure logic imports no storage, queue, wire or warehouse code', () => {
    const pure = FILES.filter((f) => roomOf(f) && !ADAPTER_SUFFIX.test(f) && !f.endsWith('/index.ts') && !/\/create-[^/]+\.ts$/.test(f));
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
    const bad = client.flatMap((f) => importsOf(f).filter((i) => !i.target?.startsWith('client/src/')).map((i) => `${f} -> ${i.target ?? i.spec}`));
    expect(bad).toEqual([]);
  });

  it('no source file is over 400 lines (generated files aside)', () => {
    const long = [...ALL, ...sources('bench'), ...sources('test'), ...sources('client/src'), ...sources('client/scripts')]
      .filter((f) => !f.endsWith('.generated.ts'))
      .map((f) => ({ f, lines: readFileSync(join(ROOT, f), 'utf8').split('\n').length }))
      .filter(({ lines }) => lines > 400)
      .map(({ f, lines }) => `${relative('.', f)}: ${lines}`);
    expect(long).toEqual([]);
  });
});
