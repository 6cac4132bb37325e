import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The project's imports as the architecture tests read them: every `import` / `export … from` /
 * `import()` of a source file, resolved to a repository-relative path when it is relative.
 */
export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The feature rooms of shared/, bottom first: each may import only rooms before it (checked as "no circle"). */
export const ROOMS = ['rules', 'projects', 'ingestion', 'profiles', 'aggregation', 'catalog', 'impact', 'treatments', 'delivery'];

export const CONSOLE = 'api/console/src/';

/** The platform's adapters (Redis, ClickHouse, HTTP, Pub/Sub, queues, metrics, logging, configuration, the process's wiring). */
export const PLATFORM_ADAPTERS = [
  ...['shared/platform/redis/', 'shared/platform/warehouse/', 'shared/platform/http/', 'shared/platform/pubsub/', 'shared/platform/limits/'],
  ...[
    'shared/platform/queues.ts',
    'shared/platform/queue-handles.ts',
    'shared/platform/metrics.ts',
    'shared/platform/metrics-snapshots.ts',
    'shared/platform/logger.ts',
    'shared/platform/config.ts',
    'shared/platform/ops-server.ts',
  ],
  'shared/platform/platform.ts',
];

export function sources(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const p = `${dir}/${e.name}`;
    if (e.isDirectory()) {
      if (e.name !== 'node_modules') sources(p, out);
    } else if (/\.tsx?$/.test(e.name)) out.push(p);
  }
  return out;
}

export interface Import {
  spec: string;
  /** repository-relative path of a relative import (.js read as .ts; the console's bare paths as .ts/.tsx), else undefined */
  target?: string;
  /** Erased at compile time: `import type`, `export type`, or braces holding only `type` names. */
  typeOnly: boolean;
}

const IMPORT = /(?:^|\n)\s*(import|export)\s+(type\s+)?(?:([^'";]*?)\s+from\s+)?['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

function onlyTypeNames(clause: string | undefined): boolean {
  const braces = clause?.trim().match(/^\{([^}]*)\}$/);
  if (!braces) return false;
  const names = braces[1]
    .split(',')
    .map((n) => n.trim())
    .filter((n) => n !== '');
  return names.length > 0 && names.every((n) => n.startsWith('type '));
}

function resolve(file: string, spec: string): string {
  const p = normalize(join(dirname(file), spec));
  if (p.endsWith('.js')) return p.replace(/\.js$/, '.ts');
  if (/\.(tsx?|css)$/.test(p)) return p;
  for (const ext of ['.ts', '.tsx', '/index.ts']) if (existsSync(join(ROOT, p + ext))) return p + ext;
  return p;
}

export function importsOf(file: string): Import[] {
  const src = readFileSync(join(ROOT, file), 'utf8');
  const out: Import[] = [];
  for (const m of src.matchAll(IMPORT)) {
    const spec = m[4] ?? m[5];
    const typeOnly = m[5] === undefined && (m[2] !== undefined || onlyTypeNames(m[3]));
    out.push({ spec, target: spec.startsWith('.') ? resolve(file, spec) : undefined, typeOnly });
  }
  return out;
}

export const roomOf = (path: string): string | undefined => ROOMS.find((r) => path.startsWith(`shared/${r}/`));

/** A circle of `graph` as the path that closes it (first node repeated at the end), or undefined. */
export function findCycle(graph: ReadonlyMap<string, ReadonlySet<string>>): string[] | undefined {
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (n: string): string[] | undefined => {
    if (state.get(n) === 'done') return undefined;
    if (state.get(n) === 'open') return [...stack.slice(stack.indexOf(n)), n];
    state.set(n, 'open');
    stack.push(n);
    for (const next of graph.get(n) ?? []) {
      const found = visit(next);
      if (found) return found;
    }
    stack.pop();
    state.set(n, 'done');
    return undefined;
  };
  for (const n of graph.keys()) {
    const found = visit(n);
    if (found) return found;
  }
  return undefined;
}

/**
 * The first forbidden file or package `start` loads at run time, as the chain of imports that
 * reaches it (`start -> … -> forbidden`), or undefined. Type-only imports are not followed.
 */
export function runtimeChainTo(start: string, graph: ReadonlyMap<string, Import[]>, forbidden: (i: Import) => boolean): string[] | undefined {
  const parent = new Map<string, string>([[start, '']]);
  const queue = [start];
  const chain = (to: string): string[] => {
    const out = [to];
    for (let n = parent.get(to); n; n = parent.get(n)) out.unshift(n);
    return out;
  };
  while (queue.length > 0) {
    const file = queue.shift()!;
    for (const i of graph.get(file) ?? []) {
      if (i.typeOnly) continue;
      if (forbidden(i)) return [...chain(file), i.target ?? i.spec];
      if (i.target && graph.has(i.target) && !parent.has(i.target)) {
        parent.set(i.target, file);
        queue.push(i.target);
      }
    }
  }
  return undefined;
}
