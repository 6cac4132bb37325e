import { describe, expect, it } from 'vitest';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The platform knows no feature: `shared/platform/**` imports no feature room (neither at run
 * time nor `import type`), and the Lua files it keeps in `redis/scripts/` are the includes shared
 * by scripts of several rooms; a script used by one room lives beside the code that runs it.
 */
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const PLATFORM = 'shared/platform/';
const SHARED_SCRIPTS = 'shared/platform/redis/scripts/';

function files(dir: string, keep: (name: string) => boolean, out: string[] = []): string[] {
  for (const e of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const p = `${dir}/${e.name}`;
    if (e.isDirectory()) {
      if (e.name !== 'node_modules') files(p, keep, out);
    } else if (keep(e.name)) out.push(p);
  }
  return out;
}

const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');
const TIERS = ['api', 'workers', 'shared'];
const SOURCES = TIERS.flatMap((d) => files(d, (n) => /\.tsx?$/.test(n)));
const LUA = TIERS.flatMap((d) => files(d, (n) => n.endsWith('.lua')));
/** Every room of shared/ but the platform: the features (and any room added later). */
const FEATURE_ROOMS = readdirSync(join(ROOT, 'shared'), { withFileTypes: true })
  .filter((e) => e.isDirectory() && e.name !== 'platform')
  .map((e) => e.name);

/** Static imports and re-exports (type-only ones too), side-effect imports and dynamic import() calls. */
const IMPORT = /(?:^|\n)\s*(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\s+from\s+)?['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

/** The repository paths a file imports (relative imports only: packages are not rooms). */
function importsOf(file: string): string[] {
  return [...read(file).matchAll(IMPORT)]
    .map((m) => m[1] ?? m[2])
    .filter((spec) => spec.startsWith('.'))
    .map((spec) => normalize(join(dirname(file), spec)).replace(/\.js$/, '.ts'));
}

/** The room of a path in any tier: `shared/<room>/…`, `workers/<room>/…`, `api/<room>/…`; the tier itself for its top-level files. */
function roomOf(path: string): string {
  const [tier, room, rest] = path.split('/');
  return rest === undefined ? tier : room;
}

/** A script's users: the files that load it (`redisScript(new URL('./x.lua', import.meta.url))`) and the scripts that include it. */
function usersOf(): Map<string, Set<string>> {
  const users = new Map<string, Set<string>>(LUA.map((f) => [f, new Set<string>()]));
  for (const f of SOURCES) {
    for (const m of read(f).matchAll(/new URL\('([^']+\.lua)', import\.meta\.url\)/g)) users.get(normalize(join(dirname(f), m[1])))?.add(f);
  }
  for (const f of LUA) {
    for (const m of read(f).matchAll(/^--- @include "([a-z0-9-]+)"$/gm)) users.get(`${SHARED_SCRIPTS}includes/${m[1]}.lua`)?.add(f);
  }
  return users;
}

describe('architecture: the platform knows no feature', () => {
  it("finds the sources, the rooms, the platform's imports and the Lua scripts (the checks below are not vacuous)", () => {
    expect(SOURCES.length).toBeGreaterThan(100);
    expect(FEATURE_ROOMS).toEqual(expect.arrayContaining(['delivery', 'impact', 'ingestion', 'profiles', 'aggregation']));
    const platform = SOURCES.filter((f) => f.startsWith(PLATFORM));
    expect(platform.length).toBeGreaterThan(20);
    expect(platform.flatMap(importsOf).length).toBeGreaterThan(50);
    expect(LUA.length).toBeGreaterThan(10);
    expect(LUA.some((f) => f.startsWith(SHARED_SCRIPTS))).toBe(true);
  });

  it('shared/platform imports no feature room, not even a type', () => {
    const bad = SOURCES.filter((f) => f.startsWith(PLATFORM)).flatMap((f) =>
      importsOf(f)
        .filter((target) => FEATURE_ROOMS.some((room) => target.startsWith(`shared/${room}/`)))
        .map((target) => `${f} -> ${target}`),
    );
    expect(bad).toEqual([]);
  });

  it('every Lua file under shared/platform/redis/scripts is used by scripts of more than one room', () => {
    const users = usersOf();
    const bad = LUA.filter((f) => f.startsWith(SHARED_SCRIPTS))
      .map((f) => ({ f, rooms: new Set([...users.get(f)!].map(roomOf)) }))
      .filter(({ rooms }) => rooms.size < 2)
      .map(({ f, rooms }) => `${f} is used by ${rooms.size === 0 ? 'no room' : `only ${[...rooms].join('')}`}: move it beside its user`);
    expect(bad).toEqual([]);
  });

  it('every script a module loads is a file beside it, and every script file is loaded or included', () => {
    const missing = SOURCES.flatMap((f) =>
      [...read(f).matchAll(/redisScript\(new URL\('([^']+)', import\.meta\.url\)\)/g)]
        .filter((m) => !m[1].startsWith('./') || m[1].includes('/', 2) || !existsSync(join(ROOT, dirname(f), m[1])))
        .map((m) => `${f} -> ${m[1]}`),
    );
    expect(missing).toEqual([]);
    const unused = [...usersOf()].filter(([, by]) => by.size === 0).map(([f]) => f);
    expect(unused).toEqual([]);
  });
});
