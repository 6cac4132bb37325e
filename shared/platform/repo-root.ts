import { existsSync } from 'node:fs';

/**
 * The repository root (the directory of the service's `package.json`), found by walking up from
 * this module. Files the service reads at run time (ClickHouse migrations, .proto files) are
 * resolved from it, so they are found both from the TypeScript sources (`tsx`, tests) and from
 * the compiled JavaScript under `dist/` (`npm run build`, the container image), which sits one
 * directory deeper. `dist/` has no `package.json` of its own.
 */
function findRoot(): URL {
  let dir = new URL('./', import.meta.url);
  for (;;) {
    if (existsSync(new URL('package.json', dir))) return dir;
    const parent = new URL('../', dir);
    if (parent.href === dir.href) throw new Error(`no package.json above ${import.meta.url}`);
    dir = parent;
  }
}

let root: URL | undefined;

/** `relative` (a path under the repository root, `/`-separated) as a file URL. */
export function repoFile(relative: string): URL {
  root ??= findRoot();
  return new URL(relative, root);
}
