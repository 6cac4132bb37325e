import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createManagementClient } from '../../client/src/management.js';
import { waitUntil } from '../helpers/context.js';
import { projectWithKeys, startTestService, type TestService } from '../helpers/service.js';
import { NO_LOAD_SHEDDING, pointedAt, readmeBlocks, seedReadmeCatalogue } from './readme-examples.js';

/**
 * The README's Node.js example of the client, and docs/client.md's management example, type-checked
 * and run as written (in a process of their own, through tsx) against a running service holding the
 * curl tour's `demo` project. The README's browser example runs in client-browser.test.ts.
 */
let s: TestService;
let keys: { projectId: string; management: string; delivery: string; logEvents: string };
let dir: string;
const field: Record<string, string> = {};
const ROOT = new URL('../../', import.meta.url).pathname;
const CLIENT = `${ROOT}client/src/`;

beforeAll(async () => {
  // inside the repository (git-ignored), so the type check finds the packages' types
  mkdirSync(join(ROOT, 'test-artifacts'), { recursive: true });
  dir = mkdtempSync(join(ROOT, 'test-artifacts', 'readme-'));
  s = await startTestService(NO_LOAD_SHEDDING);
  keys = await projectWithKeys(s, 'demo');
  const mgmt = createManagementClient({ baseUrl: s.baseUrl, projectId: 'demo', apiKey: keys.management });
  await seedReadmeCatalogue(mgmt);
  const made = await mgmt.getDataFields({
    dataFieldParams: [
      { eventDataFieldParams: { eventSchemaName: 'purchase', dailyCountAggregation: { windowName: 'LAST_7D' } } },
      { treatmentDataFieldParams: { surfaceName: 'home_banner', treatmentInteractionType: 'VIEWED', dailyCountAggregation: { windowName: 'LAST_1D' } } },
    ],
  });
  [field.purchases, field.viewed] = made.dataFields.map((f) => f.dataFieldId);
}, 120_000);

afterAll(async () => {
  await s?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/**
 * Type-checks, then runs a TypeScript example (the package's import pointed at the client's
 * sources): its exit code and output.
 */
function runExample(code: string, env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  const file = join(dir, `example-${Math.random().toString(36).slice(2)}.mts`);
  writeFileSync(file, code.replaceAll("'@tds/client/management'", `'${CLIENT}management.ts'`).replaceAll("'@tds/client'", `'${CLIENT}index.ts'`));
  const tsc = [
    '--ignoreConfig',
    '--noEmit',
    '--strict',
    '--target',
    'es2022',
    '--module',
    'nodenext',
    '--moduleResolution',
    'nodenext',
    '--types',
    'node',
    '--skipLibCheck',
    '--allowImportingTsExtensions',
    file,
  ];
  execFileSync(process.execPath, [`${ROOT}node_modules/typescript/bin/tsc`, ...tsc], { cwd: ROOT, stdio: 'inherit' });
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', file], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('exit', (exitCode) => resolve({ code: exitCode, out }));
  });
}

async function countOf(userId: string, dataFieldId: string): Promise<unknown> {
  return (await s.admin('GetUserProfile', { projectId: 'demo', userId })).body.profile.dataFields[dataFieldId];
}

describe("the README's client examples", () => {
  it('the Node.js example gets the treatments, reports the view and tracks the purchase', async () => {
    const [example] = readmeBlocks('ts');
    expect(example).toContain("from '@tds/client'");
    const r = await runExample(pointedAt(example, s.baseUrl), { DK: keys.delivery, LK: keys.logEvents });
    expect(r.code, r.out).toBe(0);
    expect(r.out).toContain("[ 'Hi friend' ]");
    await waitUntil(async () => (await countOf('u1', field.purchases)) === '1', 30_000, 100);
    await waitUntil(async () => (await countOf('u1', field.viewed)) === '1', 30_000, 100);
  }, 60_000);

  it("docs/client.md's management example runs with a management key", async () => {
    const example = readmeBlocks('ts', 'docs/client.md', '## Management')[0];
    const r = await runExample(pointedAt(example, s.baseUrl), { MK: keys.management });
    expect(r.code, r.out).toBe(0);
    expect((await s.post('/v1/GetAllSurfaces', { projectId: 'demo' }, { 'x-api-key': keys.management })).body.surfaces.map((x: any) => x.name)).toContain(
      'checkout',
    );
  }, 60_000);
});
