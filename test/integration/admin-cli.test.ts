import { freePort, portAnswers } from '../helpers/child-service.js';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminOperations } from '../../api/admin.routes.js';
import { createTestApp, uniquePrefix, type TestApp } from '../helpers/context.js';

const ROOT = resolve(import.meta.dirname, '../..');
const TSX = resolve(ROOT, 'node_modules/.bin/tsx');
const PREFIX = uniquePrefix('cli');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI as its own process, as an operator would; no server is running for it. */
function cli(args: string[], env: Record<string, string> = {}): Promise<Run> {
  const { LOG_LEVEL: _l, ADMIN_TOKEN: _a, ...base } = process.env;
  return new Promise((done) => {
    execFile(
      TSX,
      ['api/cli/admin-cli.ts', ...args],
      { cwd: ROOT, env: { ...base, REDIS_URL: t.ctx.config.redisUrl, REDIS_PREFIX: PREFIX, AUTO_START_REDIS: 'false', ...env }, timeout: 45_000 },
      (err, stdout, stderr) => {
        done({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr });
      },
    );
  });
}

let t: TestApp;
const projectId = `cli-${Date.now().toString(36)}`;

beforeAll(async () => {
  t = await createTestApp({ REDIS_PREFIX: PREFIX });
});
afterAll(async () => {
  await t?.close();
});

/** A /v1 call on an app that shares the CLI's Redis prefix. */
const getAllSurfaces = (key: string) => t.app.inject({ method: 'POST', url: '/v1/GetAllSurfaces', headers: { 'x-api-key': key }, payload: { projectId } });

function expectD4(text: string, code: number, status: string): any {
  const body = JSON.parse(text);
  expect(body).toEqual({ error: { code, status, message: expect.any(String), details: expect.any(Array) } });
  return body;
}

// Each case starts one or more `tsx` processes; on a loaded machine that takes seconds.
describe('npm run admin', { timeout: 90_000 }, () => {
  it('create-project prints the created project as JSON and nothing else', async () => {
    const r = await cli(['create-project', '--project-id', projectId, '--display-name', 'CLI shop']);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual({
      project: { projectId, displayName: 'CLI shop', deliveryEndpoint: 'BASE', createTime: expect.any(String), globalHoldoutPercentage: 0 },
    });
    expect(await t.ctx.projects.projects.get(projectId)).toMatchObject({ displayName: 'CLI shop' });
  });

  it('a second create-project fails with exit 1 and ALREADY_EXISTS on stderr', async () => {
    const r = await cli(['create-project', '--project-id', projectId]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expectD4(r.stderr, 409, 'ALREADY_EXISTS');
  });

  it('create-api-key prints a key that authenticates against an app on the same Redis prefix; revoke-api-key stops it at once', async () => {
    const created = await cli(['create-api-key', '--project-id', projectId, '--permissions', 'DELIVERY,TREATMENT_MANAGEMENT', '--description', 'from the cli']);
    expect(created.code).toBe(0);
    const out = JSON.parse(created.stdout);
    expect(out.apiKey).toMatchObject({ projectId, permissions: ['DELIVERY', 'TREATMENT_MANAGEMENT'], description: 'from the cli' });

    const ok = await getAllSurfaces(out.key);
    expect(ok.statusCode).toBe(200);
    expect(ok.json()).toEqual({ surfaces: [] });

    const listed = await cli(['list-api-keys', '--project-id', projectId]);
    expect(JSON.parse(listed.stdout).apiKeys.map((k: any) => k.keyId)).toEqual([out.apiKey.keyId]);
    expect(listed.stdout).not.toContain(out.key.split('_').slice(2).join('_'));

    const revoked = await cli(['revoke-api-key', '--project-id', projectId, '--key-id', out.apiKey.keyId]);
    expect(revoked.code).toBe(0);
    expect(JSON.parse(revoked.stdout).apiKey.revokeTime).toEqual(expect.any(String));
    expect((await getAllSurfaces(out.key)).statusCode).toBe(401);
  });

  it('records the changes it makes with the actor "cli"', async () => {
    const r = await cli(['list-changes', '--project-id', projectId, '--page-size', '2']);
    expect(r.code).toBe(0);
    const page = JSON.parse(r.stdout);
    expect(page.changes.map((c: any) => [c.operation, c.actor])).toEqual([
      ['RevokeApiKey', 'cli'],
      ['CreateApiKey', 'cli'],
    ]);
    expect(page.nextPageToken).toEqual(expect.any(String));
  });

  it('takes the whole body as --json', async () => {
    const r = await cli(['update-project', '--json', JSON.stringify({ project_id: projectId, delivery_endpoint: 'ALT' })]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).project).toMatchObject({ projectId, deliveryEndpoint: 'ALT', displayName: 'CLI shop' });
  });

  it('a bad flag exits 2 with an API error body on stderr, before touching Redis', async () => {
    const r = await cli(['create-api-key', '--project-id', projectId, '--permissions', 'DELIVERY', '--colour', 'red'], { REDIS_URL: 'redis://127.0.0.1:1' });
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    const body = expectD4(r.stderr, 400, 'INVALID_ARGUMENT');
    expect(body.error.details).toEqual([{ field: '--colour', description: expect.stringMatching(/unknown option/) }]);
  });

  it('a body that breaks the schema or a permission rule exits 2 naming the field', async () => {
    const bad = await cli(['create-api-key', '--project-id', 'has space', '--permissions', 'DELIVERY']);
    expect(bad.code).toBe(2);
    expect(expectD4(bad.stderr, 400, 'INVALID_ARGUMENT').error.details[0].field).toBe('projectId');
    const combo = await cli(['create-api-key', '--project-id', projectId, '--permissions', 'LOG_EVENTS', '--permissions', 'DELIVERY']);
    expect(combo.code).toBe(2);
    expect(expectD4(combo.stderr, 400, 'INVALID_ARGUMENT').error.details[0].field).toBe('permissions');
  });

  it('an unknown command exits 2', async () => {
    const r = await cli(['drop-everything']);
    expect(r.code).toBe(2);
    expect(expectD4(r.stderr, 400, 'INVALID_ARGUMENT').error.message).toContain('drop-everything');
  });

  it('a bad configuration exits 2 naming the variable', async () => {
    const r = await cli(['list-projects'], { REDIS_URL: 'http://x' });
    expect(r.code).toBe(2);
    expect(expectD4(r.stderr, 400, 'INVALID_ARGUMENT').error.details[0].field).toBe('REDIS_URL');
  });

  it('help lists every admin command with its summary', async () => {
    const r = await cli(['help']);
    expect(r.code).toBe(0);
    for (const op of adminOperations) expect(r.stdout).toContain(`${op.command}`);
    expect(r.stdout).toContain(adminOperations[0].summary);
  });

  it('with nothing at a local REDIS_URL, starts Redis on DATA_DIR for the command, stops it, and the data persists', async () => {
    const port = await freePort();
    const dataDir = mkdtempSync(join(tmpdir(), 'tds-cli-'));
    const env = { REDIS_URL: `redis://127.0.0.1:${port}`, AUTO_START_REDIS: 'true', DATA_DIR: dataDir };
    try {
      const created = await cli(['create-project', '--project-id', 'offline'], env);
      expect(created.code, created.stderr).toBe(0);
      expect(await portAnswers(port)).toBe(false);
      const read = await cli(['get-project', '--project-id', 'offline'], env);
      expect(read.code, read.stderr).toBe(0);
      expect(JSON.parse(read.stdout)).toEqual(JSON.parse(created.stdout));
      expect(await portAnswers(port)).toBe(false);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
