import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, uniquePrefix, waitUntil, admin, type TestApp } from '../helpers/context.js';
import { freePort, spawnService, type ChildService } from '../helpers/child-service.js';

/**
 * API processes never open ClickHouse: RunAggregations and ListDeadLetters travel to the workers
 * role over the rpc queue. Here the API is an in-process app (no ClickHouse, no workers) and the
 * workers role a separate process on the same Redis prefix, as in a `ROLE=api` ×N deployment.
 */
const ROOT = resolve(import.meta.dirname, '../..');
const TSX = resolve(ROOT, 'node_modules/.bin/tsx');
const PREFIX = uniquePrefix('rpc');
let t: TestApp;

beforeAll(async () => {
  t = await createTestApp({ REDIS_PREFIX: PREFIX });
  expect((await admin(t, 'CreateProject', { projectId: 'rpc' })).status).toBe(200);
});
afterAll(async () => {
  await t?.close();
});

function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const { LOG_LEVEL: _l, ADMIN_TOKEN: _a, ...base } = process.env;
  return new Promise((done) => {
    execFile(
      TSX,
      ['api/cli/admin-cli.ts', ...args],
      { cwd: ROOT, env: { ...base, REDIS_PREFIX: PREFIX, AUTO_START_REDIS: 'false' }, timeout: 60_000 },
      (err, stdout, stderr) => {
        done({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr });
      },
    );
  });
}

describe('warehouse reads from a process without ClickHouse', { timeout: 120_000 }, () => {
  it('with no workers process running: 503 UNAVAILABLE (no hang), naming the missing role', async () => {
    const res = await admin(t, 'ListDeadLetters', { projectId: 'rpc' });
    expect(res.status).toBe(503);
    expect(res.body.error).toMatchObject({ code: 503, status: 'UNAVAILABLE', message: expect.stringContaining('ROLE=workers') });
  });

  it('with a ROLE=workers process: the API and the CLI get their answers through it', async () => {
    let workers: ChildService | undefined;
    try {
      workers = spawnService({
        ROLE: 'workers',
        REDIS_PREFIX: PREFIX,
        DATA_DIR: mkdtempSync(join(tmpdir(), 'tds-rpc-')),
        AUTO_START_REDIS: 'false',
        PORT: String(await freePort()),
        ALT_PORT: String(await freePort()),
      });
      await waitUntil(async () => (await admin(t, 'ListDeadLetters', { projectId: 'rpc' })).status === 200, 60_000, 500);
      expect((await admin(t, 'ListDeadLetters', { projectId: 'rpc' })).body).toEqual({ deadLetters: [] });
      expect((await admin(t, 'RunAggregations', { projectId: 'rpc' })).body).toEqual({ dataFieldsRecomputed: 0, usersUpdated: 0 });
      // an error of the remote side keeps its status
      expect((await admin(t, 'RunAggregations', { projectId: 'absent' })).status).toBe(404);
      const run = await cli(['list-dead-letters', '--project-id', 'rpc']);
      expect(run.code, run.stderr).toBe(0);
      expect(JSON.parse(run.stdout)).toEqual({ deadLetters: [] });
    } finally {
      workers?.proc.kill('SIGTERM');
      await workers?.exited;
    }
  });
});
