import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { redisScript } from '../../shared/platform/redis/script-loader.js';

const ROOT = new URL('../../', import.meta.url).pathname;

/** Every file under the source tiers whose name passes `keep`, relative to the root. */
function sourceFiles(keep: (name: string) => boolean): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      const path = join(dir, e.name);
      if (e.isDirectory()) walk(path);
      else if (keep(e.name)) out.push(path);
    }
  };
  for (const d of ['api', 'workers', 'shared']) walk(d);
  return out;
}

const INCLUDES = 'shared/platform/redis/scripts/includes/';

describe('Lua scripts', () => {
  it('every script file loads under its name, with the key count its file name gives', () => {
    const files = sourceFiles((f) => f.endsWith('.lua')).filter((f) => !f.startsWith(INCLUDES));
    expect(files.length).toBeGreaterThan(5);
    for (const file of files) {
      const [, name, keys] = /^(.+?)(?:-(\d+))?\.lua$/.exec(file.slice(file.lastIndexOf('/') + 1))!;
      const script = redisScript(pathToFileURL(join(ROOT, file)));
      const text = readFileSync(join(ROOT, file), 'utf8');
      expect(script.name).toBe(name);
      expect(script.lua.startsWith(text.slice(0, text.indexOf('\n')))).toBe(true);
      expect(script.lua).not.toMatch(/@include/);
      expect(script.numberOfKeys).toBe(keys === undefined ? undefined : Number(keys));
    }
    expect(() => redisScript(pathToFileURL(join(ROOT, 'shared/no-such-script-1.lua')))).toThrow(/no-such-script/);
    // an include is pasted in place of its line
    expect(redisScript(pathToFileURL(join(ROOT, 'shared/profiles/apply-events.lua'))).lua).toMatch(/local function keepExtreme\(/);
  });

  it('refuses a call with another number of keys than the script declares, before anything is sent', async () => {
    const unused = {} as Redis;
    await expect(redisScript(pathToFileURL(join(ROOT, 'shared/delivery/apply-ranking-2.lua'))).run(unused, ['only-one'], [])).rejects.toThrow(
      /takes 2 keys, got 1/,
    );
  });

  it('no Lua lives in TypeScript strings: scripts are files, loaded by the one loader', () => {
    const offenders = sourceFiles((f) => f.endsWith('.ts')).filter((path) => /\bKEYS\[|\bARGV\[|\bcjson\./.test(readFileSync(join(ROOT, path), 'utf8')));
    expect(offenders).toEqual([]);
  });
});
