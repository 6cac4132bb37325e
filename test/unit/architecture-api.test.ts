import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The API's handlers get only what they use, checked on the text of api/: the operations' schema
 * generics are erased in one place (the registry helpers of api/http/v1-operation.ts), and an
 * operation module names the API's services only to pick the part its handlers use.
 */
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** The one file allowed to erase types with a double cast: the operation registry. */
const REGISTRY = 'api/http/v1-operation.ts';
/** Operation modules: a feature's `/v1` and admin operations. */
const OPERATION_MODULE = /^api\/(?!http\/|cli\/|console\/)[^/]+\/[^/]+\.(ops|admin)\.ts$/;

function sources(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const p = `${dir}/${e.name}`;
    if (e.isDirectory()) {
      if (e.name !== 'node_modules' && e.name !== 'dist') sources(p, out);
    } else if (/\.tsx?$/.test(e.name)) out.push(p);
  }
  return out;
}

const FILES = sources('api');
const text = (f: string) => readFileSync(join(ROOT, f), 'utf8');

describe('architecture of the API', () => {
  it('reads the API and its operation modules', () => {
    expect(FILES).toContain(REGISTRY);
    expect(FILES.filter((f) => OPERATION_MODULE.test(f)).length).toBeGreaterThan(10);
  });

  it('erases types with `as unknown as` only in the operation registry', () => {
    expect(text(REGISTRY)).toContain('as unknown as');
    const bad = FILES.filter((f) => f !== REGISTRY && text(f).includes('as unknown as'));
    expect(bad).toEqual([]);
  });

  it('operation modules declare the part of the services they use, never take all of it', () => {
    const bad = FILES.filter((f) => OPERATION_MODULE.test(f)).flatMap((f) => {
      const src = text(f);
      const declares = /\b(operationsUsing|adminOperationsUsing)</.test(src) || /\basAdminOperation\(/.test(src);
      // ApiServices appears only in `import type` and in `Pick<ApiServices, …>`
      const whole = src.split('\n').filter((l) => /\bApiServices\b/.test(l) && !/^import type /.test(l) && !/Pick<ApiServices,/.test(l));
      return [...(declares ? [] : [`${f}: defines no operation through operationsUsing/adminOperationsUsing`]), ...whole.map((l) => `${f}: ${l.trim()}`)];
    });
    expect(bad).toEqual([]);
  });
});
