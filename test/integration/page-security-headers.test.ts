import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../api/app.js';
import { queueDashboardPlugin } from '../../api/http/queue-dashboard.plugin.js';
import { ADMIN_TOKEN, createTestApp, type TestApp } from '../helpers/context.js';

/**
 * Pages that can act (the queue dashboard empties and obliterates queues; the API browser sends
 * requests) cannot be framed by another site and never have their type guessed: every page, every
 * asset it loads and every answer of their routes (401s and 404s included) carries
 * `X-Frame-Options: DENY` and `X-Content-Type-Options: nosniff`, as the console does.
 */

let t: TestApp;
let app: FastifyInstance;
const bearer = { authorization: `Bearer ${ADMIN_TOKEN}` };

beforeAll(async () => {
  t = await createTestApp();
  app = await buildApp(t.ctx, { listener: 'base', extraPlugins: [queueDashboardPlugin(t.ctx)] });
});

afterAll(async () => {
  await app?.close();
  await t?.close();
});

/** GET `url`, following redirects inside the app; every answer on the way must carry both headers. */
async function get(url: string, headers: Record<string, string> = {}): Promise<{ url: string; status: number; body: string; type: string }> {
  for (let hops = 0; hops < 5; hops++) {
    const res = await app.inject({ method: 'GET', url, headers });
    expect(res.headers['x-frame-options'], `${url} (${res.statusCode})`).toBe('DENY');
    expect(res.headers['x-content-type-options'], `${url} (${res.statusCode})`).toBe('nosniff');
    if (res.statusCode >= 300 && res.statusCode < 400) {
      url = new URL(String(res.headers.location), `http://x${url}`).pathname;
      continue;
    }
    return { url, status: res.statusCode, body: res.body, type: String(res.headers['content-type'] ?? '') };
  }
  throw new Error(`too many redirects from ${url}`);
}

/** The same-origin scripts, styles, icons and images an HTML page loads, as absolute paths. */
function assetsOf(page: { url: string; body: string }): string[] {
  const [baseTag, ...refs] = [
    /<base href=["']([^"']+)["']/.exec(page.body)?.[1],
    ...[...page.body.matchAll(/<(?:script|link|img)\b[^>]*?\b(?:src|href)=["']([^"'#]+)["']/g)].map((m) => m[1]),
  ];
  const base = baseTag ?? (page.url.endsWith('/') ? page.url : page.url.replace(/[^/]*$/, ''));
  return [...new Set(refs.filter((r) => !/^[a-z]+:|^\/\//i.test(r)).map((r) => new URL(r, `http://x${base}`).pathname))];
}

describe('/docs (the API browser)', () => {
  it('sends both headers on the page, every asset it loads and the document it reads', async () => {
    const page = await get('/docs');
    expect(page.status).toBe(200);
    expect(page.type).toMatch(/text\/html/);
    const assets = assetsOf(page);
    expect(assets.filter((a) => a.endsWith('.js')).length, JSON.stringify(assets)).toBeGreaterThanOrEqual(2);
    expect(assets.some((a) => a.endsWith('.css'))).toBe(true);
    for (const asset of [...assets, '/docs/json', '/docs/yaml']) expect((await get(asset)).status, asset).toBe(200);
    // the initializer it runs, and a path that does not exist
    expect((await get('/docs/static/swagger-initializer.js')).status).toBe(200);
    expect((await get('/docs/static/no-such-file.js')).status).toBe(404);
  });
});

describe('/admin/queues (the queue dashboard)', () => {
  it('sends both headers on the page, every asset it loads and its API', async () => {
    const page = await get('/admin/queues', bearer);
    expect(page.status).toBe(200);
    expect(page.type).toMatch(/text\/html/);
    const assets = assetsOf(page);
    expect(assets.filter((a) => a.endsWith('.js')).length, JSON.stringify(assets)).toBeGreaterThanOrEqual(1);
    for (const asset of assets) expect((await get(asset, bearer)).status, asset).toBe(200);
    expect((await get('/admin/queues/api/queues', bearer)).status).toBe(200);
    expect((await get('/admin/queues/queue/events', bearer)).status).toBe(200);
  });

  it('sends them on the refusals too (no token, a wrong token)', async () => {
    expect((await get('/admin/queues')).status).toBe(401);
    expect((await get('/admin/queues/api/queues', { authorization: 'Bearer wrong-token' })).status).toBe(401);
  });
});
