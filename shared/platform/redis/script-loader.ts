import { readFileSync } from 'node:fs';
import { RedisScript } from './redis-script.js';

/**
 * The service's Lua scripts: each one a file beside the store that runs it, named
 * `<name>-<numberOfKeys>.lua` (a script always given that many keys) or `<name>.lua` (as many
 * keys as its caller passes), as in BullMQ's commands. A line `--- @include "<name>"` is replaced
 * by `scripts/includes/<name>.lua` of this directory (helpers shared by scripts of several rooms).
 * Every key a script touches arrives in KEYS, which is how Redis Cluster routes it. A caller
 * names its file relative to itself (`new URL('./x-1.lua', import.meta.url)`): `npm run build`
 * copies every `.lua` file into `dist/` beside the compiled module, so the TypeScript sources and
 * the compiled service read the same layout. Read once, when the calling module loads.
 */
const INCLUDES_DIR = new URL('./scripts/includes/', import.meta.url);

const FILE_NAME = /^([a-z][a-z0-9-]*?)(?:-(\d+))?\.lua$/;
const INCLUDE = /^--- @include "([a-z][a-z0-9-]*)"$/gm;

function withIncludes(lua: string): string {
  return lua.replace(INCLUDE, (_line, name: string) => readFileSync(new URL(`${name}.lua`, INCLUDES_DIR), 'utf8'));
}

/** The script of the file `<name>[-<numberOfKeys>].lua`; throws when there is none or its name does not say that. */
export function redisScript(file: URL): RedisScript {
  const base = file.pathname.slice(file.pathname.lastIndexOf('/') + 1);
  const m = FILE_NAME.exec(base);
  if (!m) throw new Error(`Lua script file name ${base} is not <name>[-<numberOfKeys>].lua (lower-case, kebab-case)`);
  const [, name, keys] = m;
  let lua: string;
  try {
    lua = readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`no Lua script "${name}" at ${file.pathname}`, { cause: err });
  }
  return new RedisScript(name, withIncludes(lua), keys === undefined ? undefined : Number(keys));
}
