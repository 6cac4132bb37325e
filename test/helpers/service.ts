import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Warehouse } from '../../shared/platform/warehouse/warehouse.js';
import { startService, type RunningService } from '../../api/server.js';
import type { ApiServices } from '../../api/compose-api.js';
import { createLogger } from '../../shared/platform/logger.js';
import { createRedis } from '../../shared/platform/redis/redis.js';
import { ADMIN_TOKEN, okBody, testConfig } from './context.js';
import { deletePrefix } from './redis-cleanup.js';

export interface TestService {
  service: RunningService;
  /** The API role's services; throws in a test service without the api role. */
  readonly ctx: ApiServices;
  /** Throws in a test service without ClickHouse. */
  readonly clickhouse: Warehouse;
  baseUrl: string;
  altUrl: string;
  dataDir: string;
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<{ status: number; body: any }>;
  admin(operation: string, body: unknown): Promise<{ status: number; body: any }>;
  stop(): Promise<void>;
}

/**
 * The whole service in this process (every role, embedded ClickHouse in a fresh directory, its
 * own Redis prefix) on ephemeral ports. One per test file: chDB allows one engine per process.
 */
export async function startTestService(overrides: Record<string, string> = {}): Promise<TestService> {
  const dataDir = overrides.DATA_DIR ?? mkdtempSync(join(tmpdir(), 'tds-test-'));
  const config = testConfig({ PORT: '0', ALT_PORT: '0', DATA_DIR: dataDir, ...overrides });
  const service = await startService(config, createLogger(config.logLevel));
  const addr = (i: number) => {
    const a = service.apps[i].server.address();
    if (!a || typeof a === 'string') throw new Error('no address');
    return `http://127.0.0.1:${a.port}`;
  };
  const baseUrl = addr(0);
  const post = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };
  return {
    service,
    get ctx() {
      if (!service.api) throw new Error('this test service has no api role');
      return service.api;
    },
    get clickhouse() {
      if (!service.clickhouse) throw new Error('this test service has no ClickHouse (no workers or scheduler role)');
      return service.clickhouse;
    },
    baseUrl,
    altUrl: addr(1),
    dataDir,
    post,
    admin: (operation, body) => post(`/admin/v1/${operation}`, body, { authorization: `Bearer ${ADMIN_TOKEN}` }),
    async stop() {
      const prefix = config.redisPrefix;
      await service.stop();
      const r = createRedis(config, 'worker', 'test-cleanup');
      await deletePrefix(r, prefix);
      r.disconnect();
    },
  };
}

/** Creates a project and one key per permission through the admin API. */
export async function projectWithKeys(
  s: TestService,
  projectId: string,
): Promise<{ projectId: string; management: string; delivery: string; logEvents: string }> {
  const p = await s.admin('CreateProject', { projectId });
  if (p.status !== 200) throw new Error(JSON.stringify(p.body));
  const key = async (permissions: string[]) => (await s.admin('CreateApiKey', { projectId, permissions })).body.key as string;
  return { projectId, management: await key(['TREATMENT_MANAGEMENT']), delivery: await key(['DELIVERY']), logEvents: await key(['LOG_EVENTS']) };
}

/**
 * `v1(op, key, body)` POSTs /v1/<op> for the project (`projectId()` unless given), `ok` also
 * requires a 200 and returns its body. Getters, as the service starts in a hook.
 */
export function v1Calls(service: () => TestService, projectId: () => string) {
  const v1 = (op: string, key: string, body: Record<string, unknown>, project = projectId()): Promise<{ status: number; body: any }> =>
    service().post(`/v1/${op}`, { projectId: project, ...body }, { 'x-api-key': key });
  const ok = (op: string, key: string, body: Record<string, unknown>): Promise<any> => okBody(v1(op, key, body), op);
  return { v1, ok };
}
