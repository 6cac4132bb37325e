import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadConfig } from '../../shared/platform/config.js';

/**
 * The deployable artefacts cannot be built on this machine (no Docker daemon), so their content is
 * checked here: compose.yaml parses, runs the topology of the README, and sets only variables that
 * shared/platform/config.ts reads, with values it accepts; the Dockerfile builds dist/ and runs node on it
 * as a non-root user with the files read at run time; the npm scripts keep `exec`.
 */

const ROOT = new URL('../../', import.meta.url).pathname;
const read = (p: string) => readFileSync(join(ROOT, p), 'utf8');

/** Every environment variable shared/platform/config.ts reads (`int(env, 'X', …)`, `optional(env, 'X')`, `env.X`, `env['X']`). */
function configVariables(): Set<string> {
  const src = read('shared/platform/config.ts');
  const names = new Set<string>();
  for (const m of src.matchAll(/\(env,\s*'([A-Z][A-Z0-9_]*)'/g)) names.add(m[1]);
  for (const m of src.matchAll(/\benv(?:\.([A-Z][A-Z0-9_]*)|\[['"]([A-Z][A-Z0-9_]*)['"]\])/g)) names.add(m[1] ?? m[2]);
  return names;
}

/** compose's `${VAR:-default}` / `${VAR:?message}` as docker compose would resolve them with `env`. */
function interpolate(value: string, env: Record<string, string>): string {
  return value.replace(/\$\{([A-Z_]+)(?::([-?])([^}]*))?\}/g, (_m, name: string, op?: string, rest?: string) => {
    if (env[name] !== undefined) return env[name];
    if (op === '-') return rest ?? '';
    throw new Error(`${name} unset: ${rest}`);
  });
}

interface ComposeService {
  image?: string;
  build?: unknown;
  command?: string[];
  environment?: Record<string, string>;
  healthcheck?: { test: string[] };
  depends_on?: Record<string, { condition: string }>;
}

const compose = parse(read('compose.yaml'), { merge: true }) as { services: Record<string, ComposeService> };
const appServices = Object.entries(compose.services).filter(([, s]) => s.build !== undefined);

describe('compose.yaml', () => {
  it('runs Redis, a ClickHouse server, two API processes, the workers and the scheduler', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['api-1', 'api-2', 'clickhouse', 'redis', 'scheduler', 'workers']);
    expect(compose.services.redis.image).toMatch(/^redis:/);
    expect(compose.services.clickhouse.image).toMatch(/^clickhouse\/clickhouse-server:/);
    const roles = Object.fromEntries(appServices.map(([name, s]) => [name, s.environment?.ROLE]));
    expect(roles).toEqual({ 'api-1': 'api', 'api-2': 'api', workers: 'workers', scheduler: 'scheduler' });
    for (const [, s] of appServices) {
      expect(s.command).toEqual(['node', 'dist/api/server.js']);
      expect(s.depends_on).toEqual({ redis: { condition: 'service_healthy' }, clickhouse: { condition: 'service_healthy' } });
    }
  });

  it('sets only variables shared/platform/config.ts reads, with values it accepts (no silent drift)', () => {
    const known = configVariables();
    expect(known.size).toBeGreaterThan(15);
    for (const [name, s] of appServices) {
      const env = s.environment ?? {};
      expect(Object.keys(env).filter((k) => !known.has(k)), name).toEqual([]);
      for (const k of ['REDIS_URL', 'CLICKHOUSE_URL', 'ADMIN_TOKEN', 'ROLE', 'HOST', 'OPS_HOST', 'OPS_PORT']) expect(env, `${name}: ${k}`).toHaveProperty(k);
      const resolved = Object.fromEntries(Object.entries(env).map(([k, v]) => [k, interpolate(String(v), { ADMIN_TOKEN: 'a-token-of-32-characters-at-least' })]));
      const config = loadConfig(resolved);
      expect(config.host).toBe('0.0.0.0');
      expect(config.opsHost).toBe('0.0.0.0');
      expect(config.clickhouseUrl).toBe('http://clickhouse:8123');
      expect(config.redisUrl).toBe('redis://redis:6379');
      expect(config.autoStartRedis).toBe(false);
    }
    // ADMIN_TOKEN has no default: compose refuses to start without one
    expect(() => interpolate(String(compose.services['api-1'].environment!.ADMIN_TOKEN), {})).toThrow(/ADMIN_TOKEN/);
  });

  it('every app container is healthy only when its ops listener\'s /readyz answers 200', () => {
    for (const [name, s] of appServices) {
      const test = s.healthcheck!.test.join(' ');
      expect(test, name).toContain(`http://127.0.0.1:${s.environment!.OPS_PORT}/readyz`);
      expect(test).toContain('process.exit(r.ok?0:1)');
    }
  });
});

describe('Dockerfile', () => {
  const docker = read('Dockerfile');
  const stages = docker.split(/^FROM /m).slice(1);

  it('builds dist/ in a build stage and runs node on it in a runtime stage of production dependencies, as a non-root user', () => {
    expect(stages).toHaveLength(2);
    const [build, runtime] = stages;
    expect(build).toMatch(/ AS build\n/);
    expect(build).toMatch(/^RUN npm ci$/m);
    expect(build).toMatch(/^RUN npm run build$/m);
    expect(runtime).toMatch(/^RUN npm ci --omit=dev/m);
    expect(runtime).toMatch(/^COPY --from=build \/app\/dist \.\/dist$/m);
    expect(runtime).toMatch(/^USER (?!root\b|0\b)\w+$/m);
    expect(runtime).toMatch(/^EXPOSE 8080 8081 9464$/m);
    expect(runtime).toMatch(/^CMD \["node", "dist\/api\/supervisor\.js"\]$/m);
    expect(existsSync(join(ROOT, 'tsconfig.build.json'))).toBe(true);
  });

  it('sets HOST and OPS_HOST to 0.0.0.0, and only variables the service knows', () => {
    const runtime = stages[1];
    const envBlock = /^ENV ((?:.*\\\n)*.*)$/m.exec(runtime)![1];
    const env = Object.fromEntries([...envBlock.matchAll(/([A-Z_]+)=(\S+)/g)].map((m) => [m[1], m[2]]));
    expect(env).toMatchObject({ HOST: '0.0.0.0', OPS_HOST: '0.0.0.0', OPS_PORT: '9464', PORT: '8080', ALT_PORT: '8081' });
    const known = configVariables();
    expect(Object.keys(env).filter((k) => k !== 'NODE_ENV' && !known.has(k))).toEqual([]);
    expect(() => loadConfig(env)).not.toThrow();
  });

  it('copies every file the service reads at run time (resolved from the repository root) into the runtime stage', () => {
    const runtime = stages[1];
    const readAtRunTime = new Set<string>();
    const walk = (dir: string) => {
      for (const e of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
        if (e.isDirectory()) walk(join(dir, e.name));
        else if (e.name.endsWith('.ts')) for (const m of read(join(dir, e.name)).matchAll(/repoFile\('([^']+)'\)/g)) readAtRunTime.add(m[1]);
      }
    };
    for (const d of ['api', 'workers', 'shared']) walk(d);
    expect([...readAtRunTime].sort()).toEqual(['infra/clickhouse/migrations/', 'shared/ingestion/proto/tds/v1/events.proto', 'shared/platform/redis/scripts/']);
    const copied = [...runtime.matchAll(/^COPY (?!--from)(\S+) \.\/(\S+)$/gm)].map((m) => m[2]);
    for (const p of readAtRunTime) expect(copied.some((c) => p.startsWith(c)), p).toBe(true);
    for (const c of copied) expect(existsSync(join(ROOT, c)), c).toBe(true);
  });

  it('.dockerignore keeps node_modules, dist and local data out of the build context', () => {
    const ignored = read('.dockerignore').split('\n').map((l) => l.trim());
    for (const p of ['node_modules', 'dist', 'data', '.git']) expect(ignored).toContain(p);
    // and nothing the image needs
    for (const p of ['api', 'workers', 'shared', 'infra', 'package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json']) expect(ignored).not.toContain(p);
  });
});

describe('npm scripts', () => {
  const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts;
  it('build compiles with tsconfig.build.json; start and start:prod exec the supervisor so a signal reaches it', () => {
    expect(scripts.build).toContain('tsc -p tsconfig.build.json');
    expect(scripts.start).toMatch(/exec node --import tsx api\/supervisor\.ts$/);
    expect(scripts['start:prod']).toBe('exec node dist/api/supervisor.js');
    const build = read('tsconfig.build.json');
    expect(build).toMatch(/"outDir": "dist"/);
    expect(build).toMatch(/"include": \["api", "workers", "shared"\]/);
  });
});
