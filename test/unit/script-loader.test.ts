import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { redisScript } from '../../shared/platform/redis/script-loader.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const SCRIPTS = join(ROOT, 'shared/platform/redis/scripts');

describe('Lua scripts', () => {
  it('every file of scripts/ loads under its name, with the key count its file name gives', () => {
    const files = readdirSync(SCRIPTS).filter((f) => f.endsWith('.lua'));
    expect(files.length).toBeGreaterThan(5);
    for (const file of files) {
      const [, name, keys] = /^(.+?)(?:-(\d+))?\.lua$/.exec(file)!;
      const script = redisScript(name);
      const text = readFileSync(join(SCRIPTS, file), 'utf8');
      expect(script.lua.startsWith(text.slice(0, text.indexOf('\n')))).toBe(true);
      expect(script.lua).not.toMatch(/@include/);
      expect(script.numberOfKeys).toBe(keys === undefined ? undefined : Number(keys));
    }
    expect(() => redisScript('no-such-script')).toThrow(/no-such-script/);
    // an include is pasted in place of its line
    expect(redisScript('apply-events').lua).toMatch(/local function keepExtreme\(/);
  });

  it('refuses a call with another number of keys than the script declares, before anything is sent', async () => {
    const unused = {} as Redis;
    await expect(redisScript('apply-ranking').run(unused, ['only-one'], [])).rejects.toThrow(/takes 2 keys, got 1/);
  });

  it('no Lua lives in TypeScript strings: scripts are files, loaded by the one loader', () => {
    const offenders: string[] = [];
    const walk = (dir: string) => {
      for (const e of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
        const path = join(dir, e.name);
        if (e.isDirectory()) walk(path);
        else if (e.name.endsWith('.ts') && /\bKEYS\[|\bARGV\[|\bcjson\./.test(readFileSync(join(ROOT, path), 'utf8'))) offenders.push(path);
      }
    };
    for (const d of ['api', 'workers', 'shared']) walk(d);
    expect(offenders).toEqual([]);
  });
});
