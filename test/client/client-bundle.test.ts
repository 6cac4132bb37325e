import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ok, scriptedFetch } from './fake-fetch.js';

/**
 * The built client: the browser bundle is at most 10 KB gzipped and carries no TypeBox and no
 * Node.js module, and the ESM build with its declarations stands alone (no path out of the
 * package). Both are loaded and used as a program would.
 */
const BUNDLE = join(process.cwd(), 'client/dist/browser/tds-client.js');
const BUDGET_GZIP_BYTES = 10 * 1024;
let esmDir: string;

beforeAll(() => {
  execFileSync('bash', ['infra/scripts/ensure-client-built.sh'], { stdio: 'inherit' });
  esmDir = mkdtempSync(join(tmpdir(), 'tds-client-esm-'));
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'client/tsconfig.json', '--outDir', esmDir, '--sourceMap', 'false'], {
    stdio: 'inherit',
  });
}, 120_000);

afterAll(() => {
  if (esmDir) rmSync(esmDir, { recursive: true, force: true });
});

describe('the browser bundle', () => {
  it('is at most 10 KB gzipped', () => {
    const gz = gzipSync(readFileSync(BUNDLE), { level: 9 }).length;
    expect(gz, `${gz} bytes gzipped`).toBeLessThanOrEqual(BUDGET_GZIP_BYTES);
  });

  it('imports nothing: no TypeBox, no Node.js module, no other file', () => {
    const code = readFileSync(BUNDLE, 'utf8');
    expect(code).not.toMatch(/\bimport\s*[^(]|\brequire\(|node:/);
    expect(code.toLowerCase()).not.toContain('typebox');
    expect(code).not.toContain('MANAGEMENT_OPERATIONS');
  });

  it('runs: getTreatments and a tracked event through it', async () => {
    const { TdsClient } = await import(pathToFileURL(BUNDLE).href);
    const f = scriptedFetch((s) =>
      ok(
        s.operation === 'GetTreatments'
          ? {
              responseId: 'r',
              userTreatments: [
                {
                  treatmentId: 't',
                  treatmentTrackingId: 't_r',
                  surface: 'home',
                  rank: '1',
                  treatmentType: 'b',
                  treatmentContent: '{}',
                  contentLanguageCode: 'en',
                },
              ],
            }
          : {},
      ),
    );
    const c = new TdsClient({ baseUrl: 'http://tds.test', projectId: 'p', apiKey: 'k', fetch: f.fetch, flushAt: 1 });
    const a = await c.getTreatments({ userId: 'u', surfaces: [{ surface: 'home' }] });
    expect(a.userTreatments[0]).toMatchObject({ treatmentTrackingId: 't_r', userId: 'u' });
    c.track({ userId: 'u', eventName: 'e' });
    expect(await c.close(1000)).toMatchObject({ sent: 1 });
    expect(f.sent.map((s) => s.operation)).toEqual(['GetTreatments', 'LogEvents']);
  });
});

describe('the ESM build with declarations', () => {
  it('declares every module it ships, and its declarations reach nothing outside the package', () => {
    const files = readdirSync(esmDir);
    for (const name of ['index', 'client', 'management', 'wire.generated', 'event-queue']) {
      expect(files).toContain(`${name}.js`);
      expect(files).toContain(`${name}.d.ts`);
    }
    for (const f of files.filter((x) => x.endsWith('.d.ts') || x.endsWith('.js'))) {
      const text = readFileSync(join(esmDir, f), 'utf8');
      const specifiers = [...text.matchAll(/(?:from|import)\s*\(?\s*['"]([^'"]+)['"]/g)].map((m) => m[1]);
      expect(
        specifiers.filter((s) => !/^\.\/[a-z.-]+\.js$/.test(s)),
        f,
      ).toEqual([]);
    }
  });

  it('loads in Node.js, the management client included', async () => {
    const { createManagementClient } = await import(pathToFileURL(join(esmDir, 'management.js')).href);
    const f = scriptedFetch(() => ok({ surfaces: [] }));
    const m = createManagementClient({ baseUrl: 'http://tds.test', projectId: 'p', apiKey: 'k', fetch: f.fetch });
    expect(await m.getAllSurfaces({})).toEqual({ surfaces: [] });
    const { TdsError } = await import(pathToFileURL(join(esmDir, 'index.js')).href);
    expect(new TdsError({ operation: 'X', kind: 'http', status: 503, message: 'm' }).unavailable).toBe(true);
  });
});
