import { readFile, stat } from 'node:fs/promises';
import { extname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { NotFoundError } from '../../shared/platform/errors.js';
import { repoFile } from '../../shared/platform/repo-root.js';

/**
 * Where `npm run build:console` writes the web console (git-ignored): `dist/console` under the
 * directory of `package.json`, found the same way from the TypeScript sources (`api/console/`) and
 * from the compiled JavaScript (`dist/api/console/`, one directory deeper).
 */
export const CONSOLE_DIR = fileURLToPath(repoFile('dist/console'));

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2',
};

/**
 * The web console at `/console`: the built single-page app's files, and for any
 * other path without an extension its index.html (the app routes in the browser). Nothing outside
 * the build folder is reachable: the path is resolved and must stay under it.
 */
export function registerConsoleRoutes(app: FastifyInstance, root: string = CONSOLE_DIR): void {
  const base = resolve(root);
  const sendIndex = async (reply: FastifyReply) => {
    let html: Buffer;
    try {
      html = await readFile(join(base, 'index.html'));
    } catch {
      throw new NotFoundError('the web console is not built: run `npm run build:console`');
    }
    return reply
      .header('cache-control', 'no-cache')
      .header(
        'content-security-policy',
        "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
      )
      .header('x-content-type-options', 'nosniff')
      .type(TYPES['.html'])
      .send(html);
  };
  app.get('/console', { schema: { hide: true } }, async (_req, reply) => reply.redirect('/console/'));
  app.get('/console/*', { schema: { hide: true } }, async (req, reply) => {
    const rel = (req.params as { '*': string })['*'] ?? '';
    let decoded: string;
    try {
      decoded = decodeURIComponent(rel);
    } catch {
      throw new NotFoundError('no such file');
    }
    const file = resolve(base, '.' + sep + decoded);
    if (file !== base && !file.startsWith(base + sep)) throw new NotFoundError('no such file');
    const ext = extname(file);
    if (decoded === '' || ext === '') return sendIndex(reply);
    const type = TYPES[ext];
    const info = await stat(file).catch(() => undefined);
    if (!type || !info?.isFile()) throw new NotFoundError('no such file');
    // Vite names the bundles by content hash: they never change under one name.
    const immutable = decoded.startsWith('assets/');
    return reply
      .header('cache-control', immutable ? 'public, max-age=31536000, immutable' : 'no-cache')
      .header('x-content-type-options', 'nosniff')
      .type(type)
      .send(await readFile(file));
  });
}
