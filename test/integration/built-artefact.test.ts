import { spawn, spawnSync, execFileSync, type ChildProcess } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { Redis } from 'ioredis';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConsoleDriver, launchConsoleBrowser } from '../console/console-driver.js';
import { freePort, freePorts } from '../helpers/child-service.js';
import { uniquePrefix, waitUntil, within } from '../helpers/context.js';
import { deletePrefix } from '../helpers/redis-cleanup.js';

/**
 * The production artefact, as the image builds and runs it: `npm run build` in a copy of the
 * build stage's context, then `node dist/api/supervisor.js` in a directory laid out as the
 * runtime stage (the Dockerfile's COPY lines: package files, dist/, the files read at run time;
 * no TypeScript sources), with its own ports, data directory and Redis prefix. Checked: the
 * console loads in Chromium and signs in, /docs and /openapi.json, the README's curl tour as
 * pasted (a LogEvents and a GetTreatments round trip), the image's healthcheck, and a clean
 * SIGTERM. Building in a temporary copy leaves the repository's dist/ alone: the console test
 * beside it serves dist/console.
 */

const ROOT = new URL('../../', import.meta.url).pathname;
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const DOCKERFILE = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
/** The README's first command: `ADMIN_TOKEN=<token> npm start`; the tour uses the same token. */
const TOKEN = /ADMIN_TOKEN=(\S+) npm start/.exec(README)![1];

const work = mkdtempSync(join(tmpdir(), 'tds-built-'));
const prefix = uniquePrefix('built');
let proc: ChildProcess;
let exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
let log = '';
let base = '';
let env: Record<string, string> = {};
let appDir = '';
let browser: Browser | undefined;

/** The `sh` block under "## Try it with curl". */
function readmeTour(readme: string): string {
  const section = readme.slice(readme.indexOf('## Try it with curl'));
  const block = /```sh\n([\s\S]*?)```/.exec(section);
  if (!block) throw new Error("no sh block in the README's curl tour");
  return block[1];
}

/** `COPY a b ./dest` lines of a stage, without `--from`: [sources, destination]. */
function copies(stage: string): [string[], string][] {
  return [...stage.matchAll(/^COPY (?!--from)(.+)$/gm)].map((m) => {
    const parts = m[1].trim().split(/\s+/);
    return [parts.slice(0, -1), parts[parts.length - 1]];
  });
}

function copyInto(sources: string[], dest: string, from: string, to: string): void {
  for (const src of sources) {
    const target = dest.endsWith('/') || sources.length > 1 ? join(to, dest, basename(src)) : join(to, dest);
    cpSync(join(from, src), target, { recursive: true });
  }
}

beforeAll(async () => {
  const [buildStage, runtimeStage] = DOCKERFILE.split(/^FROM /m).slice(1);
  // the build stage: its COPY lines into a fresh directory, node_modules linked (the image runs
  // npm ci), then the build script itself
  const buildDir = join(work, 'build');
  mkdirSync(buildDir);
  for (const [sources, dest] of copies(buildStage)) copyInto(sources, dest, ROOT, buildDir);
  symlinkSync(join(ROOT, 'node_modules'), join(buildDir, 'node_modules'));
  execFileSync('npm', ['run', 'build'], { cwd: buildDir, stdio: ['ignore', 'ignore', 'inherit'], timeout: 300_000 });

  // the runtime stage: its COPY lines, and dist/ from the build
  appDir = join(work, 'app');
  mkdirSync(appDir);
  for (const [sources, dest] of copies(runtimeStage)) copyInto(sources, dest, ROOT, appDir);
  expect(runtimeStage).toMatch(/^COPY --from=build \/app\/dist \.\/dist$/m);
  cpSync(join(buildDir, 'dist'), join(appDir, 'dist'), { recursive: true });
  symlinkSync(join(ROOT, 'node_modules'), join(appDir, 'node_modules'));

  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  env = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? work,
    PORT: String(port),
    ALT_PORT: String(await freePort()),
    OPS_PORT: String(await freePorts(4)),
    DATA_DIR: join(work, 'data'),
    REDIS_PREFIX: prefix,
    ADMIN_TOKEN: TOKEN,
    AUTO_START_REDIS: 'false',
    LOG_LEVEL: 'info',
    NODE_ENV: 'production',
  };
  proc = spawn(process.execPath, ['dist/api/supervisor.js'], { cwd: appDir, env, stdio: ['ignore', 'pipe', 'pipe'] });
  proc.stdout!.on('data', (d) => (log += d));
  proc.stderr!.on('data', (d) => (log += d));
  exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  await waitUntil(async () => (await fetch(`${base}/readyz`).catch(() => undefined))?.status === 200, 90_000, 250);
}, 600_000);

afterAll(async () => {
  await browser?.close();
  if (proc && proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  const redis = new Redis();
  await deletePrefix(redis, prefix);
  redis.disconnect();
  rmSync(work, { recursive: true, force: true });
});

describe('the built artefact (node dist/api/supervisor.js)', { timeout: 180_000 }, () => {
  it('runs from dist/ alone: no TypeScript source beside it', () => {
    expect(spawnSync('find', [appDir, '-path', `${appDir}/node_modules`, '-prune', '-o', '-name', '*.ts', '-print']).stdout.toString()).toBe('');
    expect(log).toMatch(/"msg":"supervisor started"/);
  });

  it('serves the web console: the app loads in Chromium and signs in with the admin token', async () => {
    execFileSync('bash', ['infra/scripts/ensure-chromium.sh'], { cwd: ROOT, stdio: 'inherit' });
    const launched = await launchConsoleBrowser();
    browser = launched.browser;
    const ui = new ConsoleDriver(launched.page, base, work);
    await ui.signIn('admin', TOKEN, '', 'Ops');
    await launched.page.getByRole('heading', { level: 1, name: 'Projects and keys' }).waitFor();
    const index = await fetch(`${base}/console/`);
    expect(index.status).toBe(200);
    expect(index.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
  });

  it('serves /docs (with its assets) and /openapi.json', async () => {
    const docs = await fetch(`${base}/docs`);
    expect(docs.status).toBe(200);
    expect(await docs.text()).toContain('swagger-ui-bundle.js');
    expect(docs.headers.get('x-frame-options')).toBe('DENY');
    expect((await fetch(`${base}/docs/static/swagger-ui-bundle.js`)).status).toBe(200);
    const spec = (await (await fetch(`${base}/openapi.json`)).json()) as { openapi: string; paths: Record<string, unknown> };
    expect(spec.openapi).toMatch(/^3\./);
    for (const op of ['/v1/GetTreatments', '/v1/LogEvents', '/admin/v1/CreateProject']) expect(spec.paths).toHaveProperty([op]);
  });

  it("runs the README's curl tour as pasted: LogEvents feed the profile, GetTreatments answers the gold offer with its title rendered", () => {
    const tour = readmeTour(README);
    expect(tour).toContain(`T=${TOKEN}; B=http://127.0.0.1:8080`);
    const script = tour.replace('B=http://127.0.0.1:8080', `B=${base}`);
    const r = spawnSync('bash', ['-s'], { input: script, encoding: 'utf8', env, timeout: 120_000 });
    expect(r.status, r.stderr).toBe(0);
    const answers = r.stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, any>);
    expect(
      answers.filter((a) => a.error),
      r.stdout,
    ).toEqual([]);
    const inserted = answers.find((a) => JSON.stringify(a).includes('"gold offer"'));
    const treatmentId = inserted?.treatment?.treatmentId;
    expect(treatmentId, r.stdout).toBeDefined();
    // LogEvents answers {} (accepted), then GetTreatments, whose answer needs those events applied
    const deliveredAt = answers.findIndex((a) => 'responseId' in a);
    expect(answers[deliveredAt - 1], r.stdout).toEqual({});
    const delivered = answers[deliveredAt];
    expect(delivered?.userTreatments, r.stdout).toHaveLength(1);
    expect(delivered!.userTreatments[0]).toMatchObject({ treatmentId, surface: 'home_banner' });
    expect(JSON.parse(delivered!.userTreatments[0].treatmentContent)).toEqual({ title: 'Hi friend' });
  });

  it("passes the image's healthcheck (every process ready), and stops cleanly on SIGTERM: exit 0", async () => {
    const health = spawnSync(process.execPath, ['dist/api/healthcheck.js'], { cwd: appDir, env, encoding: 'utf8', timeout: 30_000 });
    expect(health.status, health.stderr).toBe(0);
    proc.kill('SIGTERM');
    const { code, signal } = await within(exited, 45_000, 'exit after SIGTERM');
    expect({ code, signal }, log.slice(-5000)).toEqual({ code: 0, signal: null });
    expect(log).toMatch(/"clean":true/);
    expect(log).not.toMatch(/deadline passed|did not stop cleanly|"level":(50|60)/);
    const after = spawnSync(process.execPath, ['dist/api/healthcheck.js'], { cwd: appDir, env, encoding: 'utf8', timeout: 30_000 });
    expect(after.status).toBe(1);
    expect(after.stderr).toMatch(/not ready: background/);
  });
});
