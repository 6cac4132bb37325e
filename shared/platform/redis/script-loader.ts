import { readdirSync, readFileSync } from 'node:fs';
import { repoFile } from '../repo-root.js';
import { RedisScript } from './redis-script.js';

/**
 * The service's Lua scripts: one file each in `scripts/`, named `<name>-<numberOfKeys>.lua`
 * (a script always given that many keys) or `<name>.lua` (as many keys as its caller passes).
 * A line `--- @include "<name>"` is replaced by `scripts/includes/<name>.lua` (helpers shared by
 * several scripts, as in BullMQ's commands).
 * Every key a script touches arrives in KEYS, which is how Redis Cluster routes it. The files
 * are resolved from the repository root, so the TypeScript sources and the compiled `dist/`
 * read the same ones (the container image copies the directory), and read once, on first use.
 */
const SCRIPTS_DIR = repoFile('shared/platform/redis/scripts/');

const FILE_NAME = /^([a-z][a-z0-9-]*?)(?:-(\d+))?\.lua$/;
const INCLUDE = /^--- @include "([a-z][a-z0-9-]*)"$/gm;

let scripts: Map<string, RedisScript> | undefined;

function readScripts(): Map<string, RedisScript> {
  const out = new Map<string, RedisScript>();
  for (const file of readdirSync(SCRIPTS_DIR)) {
    if (!file.endsWith('.lua')) continue;
    const m = FILE_NAME.exec(file);
    if (!m) throw new Error(`Lua script file name ${file} is not <name>[-<numberOfKeys>].lua (lower-case, kebab-case)`);
    const [, name, keys] = m;
    out.set(name, new RedisScript(name, withIncludes(readFileSync(new URL(file, SCRIPTS_DIR), 'utf8')), keys === undefined ? undefined : Number(keys)));
  }
  return out;
}

function withIncludes(lua: string): string {
  return lua.replace(INCLUDE, (_line, name: string) => readFileSync(new URL(`includes/${name}.lua`, SCRIPTS_DIR), 'utf8'));
}

/** The script of `scripts/<name>[-<numberOfKeys>].lua`; throws when there is none. */
export function redisScript(name: string): RedisScript {
  scripts ??= readScripts();
  const script = scripts.get(name);
  if (!script) throw new Error(`no Lua script "${name}" in ${SCRIPTS_DIR.pathname}`);
  return script;
}
