import { HEAP_FLAGS } from '../../api/supervisor.js';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { healthcheckTargets } from '../../api/healthcheck.js';
import { loadConfig } from '../../shared/platform/config.js';

/**
 * The deployable artefacts cannot be built on this machine (no Docker daemon), so their content is
 * checked here: compose.yaml parses, runs the topology of the README, and sets only variables that
 * shared/platform/config.ts reads, with values it accepts; the Dockerfile builds dist/ and runs node on it
 * as a non-root user with the files read at run time; the npm scripts keep `exec`; the runtime
 * dependencies are exactly what production code imports.
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
  volumes?: string[];
  stop_grace_period?: string;
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
      // the heap flags the supervisor would give a child of that role, on node's command line
      expect(s.command).toEqual(['node', ...HEAP_FLAGS[s.environment?.ROLE === 'api' ? 'api' : 'background'], 'dist/api/server.js']);
      expect(s.depends_on).toEqual({ redis: { condition: 'service_healthy' }, clickhouse: { condition: 'service_healthy' } });
    }
  });

  it('sets only variables shared/platform/config.ts reads, with values it accepts (no silent drift)', () => {
    const known = configVariables();
    expect(known.size).toBeGreaterThan(15);
    for (const [name, s] of appServices) {
      const env = s.environment ?? {};
      expect(
        Object.keys(env).filter((k) => !known.has(k)),
        name,
      ).toEqual([]);
      for (const k of ['REDIS_URL', 'CLICKHOUSE_URL', 'ADMIN_TOKEN', 'ROLE', 'HOST', 'OPS_HOST', 'OPS_PORT']) expect(env, `${name}: ${k}`).toHaveProperty(k);
      const resolved = Object.fromEntries(
        Object.entries(env).map(([k, v]) => [k, interpolate(String(v), { ADMIN_TOKEN: 'a-token-of-32-characters-at-least' })]),
      );
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

  it('pins the ClickHouse server release of the engine the SQL is tested on (the chdb package)', () => {
    const engine = spawnSync(process.execPath, ['-e', "process.stdout.write(String(require('chdb').query('SELECT version()', 'TSV')))"], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 60_000,
    });
    const version = engine.stdout.trim();
    expect(version, engine.stderr).toMatch(/^\d+\.\d+\.\d+/);
    const [major, minor] = version.split('.');
    expect(compose.services.clickhouse.image).toBe(`clickhouse/clickhouse-server:${major}.${minor}`);
    expect(read('docs/operations.md')).toContain(`clickhouse/clickhouse-server:${major}.${minor}`);
  });

  it('runs Redis with infra/redis.conf (AOF, noeviction, the intset size the profiles rely on)', () => {
    const redis = compose.services.redis;
    const [bin, conf, ...rest] = redis.command!;
    expect(bin).toBe('redis-server');
    expect(redis.volumes).toContain(`./infra/redis.conf:${conf}:ro`);
    // reached over the compose network only: protected mode would refuse every non-loopback client
    expect(rest).toEqual(['--protected-mode', 'no']);
    const settings = read('infra/redis.conf');
    for (const line of ['appendonly yes', 'maxmemory-policy noeviction', 'set-max-intset-entries 4096']) expect(settings).toMatch(new RegExp(`^${line}$`, 'm'));
  });

  it('gives every app container longer to stop than the ordered stop takes', () => {
    const serverDeadline = Number(/SHUTDOWN_DEADLINE_MS = ([\d_]+)/.exec(read('api/server.ts'))![1].replace(/_/g, ''));
    for (const [name, s] of appServices) expect(Number(/^(\d+)s$/.exec(s.stop_grace_period ?? '')?.[1]) * 1000, name).toBeGreaterThan(serverDeadline);
  });

  it("every app container is healthy only when its ops listener's /readyz answers 200", () => {
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

  it("both stages run Node 24 (the current LTS), a version package.json's engines accept", () => {
    expect(stages.map((st) => st.split('\n')[0])).toEqual(['node:24-bookworm-slim AS build', 'node:24-bookworm-slim AS runtime']);
    expect(satisfiesEngines('24.11.0')).toBe(true);
  });

  it('its healthcheck probes every process the supervisor runs (API process i on OPS_PORT + i)', () => {
    const runtime = stages[1];
    expect(runtime).toMatch(/^HEALTHCHECK .*\\\n\s+CMD \["node", "dist\/api\/healthcheck\.js"\]$/m);
    const envBlock = /^ENV ((?:.*\\\n)*.*)$/m.exec(runtime)![1];
    const env = Object.fromEntries([...envBlock.matchAll(/([A-Z_]+)=(\S+)/g)].map((m) => [m[1], m[2]]));
    const ports = (extra: Record<string, string>) => healthcheckTargets(loadConfig({ ...env, ...extra })).map((t) => t.url);
    expect(ports({})).toEqual(['http://127.0.0.1:9464/readyz', 'http://127.0.0.1:9465/readyz']);
    expect(ports({ API_PROCESSES: '3' })).toEqual([9464, 9465, 9466, 9467].map((p) => `http://127.0.0.1:${p}/readyz`));
    expect(ports({ ROLE: 'api', API_PROCESSES: '2' })).toEqual(['http://127.0.0.1:9465/readyz', 'http://127.0.0.1:9466/readyz']);
    expect(ports({ ROLE: 'workers' })).toEqual(['http://127.0.0.1:9464/readyz']);
    expect(() => healthcheckTargets(loadConfig({ ...env, OPS_PORT: '0' }))).toThrow(/OPS_PORT/);
  });

  it("says how long a stop needs: --stop-timeout 30 beyond the supervisor's stop deadline, here and in docs/operations.md", () => {
    const deadline = Number(/STOP_DEADLINE_MS = ([\d_]+)/.exec(read('api/supervisor.ts'))![1].replace(/_/g, ''));
    expect(deadline).toBeLessThan(30_000);
    expect(docker).toContain('--stop-timeout 30');
    expect(stages[1]).toMatch(/^STOPSIGNAL SIGTERM$/m);
    const ops = read('docs/operations.md');
    for (const s of ['--stop-timeout 30', 'stop_grace_period: 30s', 'terminationGracePeriodSeconds: 30']) expect(ops).toContain(s);
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
    expect([...readAtRunTime].sort()).toEqual(['dist/console', 'infra/clickhouse/migrations/', 'shared/ingestion/proto/tds/v1/events.proto']);
    // Lua scripts are read beside the module that runs them: the build copies them into dist/
    expect((JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts.build).toContain('npm run build:lua');
    // dist/ (the console's build included) comes from the build stage, the rest from the context
    const copied = ['dist', ...[...runtime.matchAll(/^COPY (?!--from)(\S+) \.\/(\S+)$/gm)].map((m) => m[2])];
    for (const p of readAtRunTime)
      expect(
        copied.some((c) => p.startsWith(c)),
        p,
      ).toBe(true);
    for (const c of copied.filter((c) => c !== 'dist')) expect(existsSync(join(ROOT, c)), c).toBe(true);
  });

  it('.dockerignore keeps node_modules, dist and local data out of the build context', () => {
    const ignored = read('.dockerignore')
      .split('\n')
      .map((l) => l.trim());
    for (const p of ['node_modules', 'dist', 'data', '.git']) expect(ignored).toContain(p);
    // and nothing the image needs
    for (const p of ['api', 'workers', 'shared', 'infra', 'package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json'])
      expect(ignored).not.toContain(p);
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

/** `^X`, `^X.Y` alternatives joined by `||`, the only forms package.json's engines uses. */
const engines = (JSON.parse(read('package.json')) as { engines: { node: string } }).engines.node;
function satisfiesEngines(version: string): boolean {
  const [major, minor] = version.replace(/^v/, '').split('.').map(Number);
  return engines.split('||').some((alt) => {
    const m = /^\s*\^(\d+)(?:\.(\d+))?\s*$/.exec(alt);
    if (!m) throw new Error(`engines.node: unexpected range "${alt}"`);
    return major === Number(m[1]) && minor >= Number(m[2] ?? 0);
  });
}

describe('Node versions', () => {
  it("engines accepts the LTS lines we test on (20.19+, 22, 24) and this machine's Node", () => {
    expect(engines).toBe('^20.19 || ^22 || ^24');
    expect(satisfiesEngines(process.version)).toBe(true);
    expect(satisfiesEngines('20.18.0')).toBe(false);
    expect(satisfiesEngines('23.0.0')).toBe(false);
  });

  it('@types/node is of the oldest supported major, so code cannot use an API it lacks', () => {
    const pkg = JSON.parse(read('package.json')) as { devDependencies: Record<string, string> };
    const oldest = Math.min(...engines.split('||').map((alt) => Number(/\^(\d+)/.exec(alt)![1])));
    expect(pkg.devDependencies['@types/node'].split('.')[0]).toBe(String(oldest));
  });
});

const IMPORT =
  /(?:^|\n)\s*(?:import|export)\s+(type\s+)?(?:[^'";]*?\s+from\s+)?['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)|\brequire\(\s*['"]([^'"]+)['"]\s*\)|\bcreateRequire\([^)]*\)\(\s*['"]([^'"]+)['"]\s*\)/g;

/** The packages the files under `dirs` load (type-only imports do not load anything), with a file of each. */
function packagesImported(dirs: string[], skip: (file: string) => boolean = () => false): Map<string, string> {
  const found = new Map<string, string>();
  const walk = (dir: string) => {
    for (const e of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      const p = `${dir}/${e.name}`;
      if (e.isDirectory()) walk(p);
      else if (/\.(ts|tsx)$/.test(e.name) && !skip(p)) {
        for (const m of read(p).matchAll(IMPORT)) {
          if (m[1]) continue;
          const spec = m[2] ?? m[3] ?? m[4] ?? m[5];
          if (/^[./]/.test(spec) || spec.startsWith('node:') || builtinModules.includes(spec)) continue;
          const name = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0];
          if (!found.has(name)) found.set(name, p);
        }
      }
    }
  };
  for (const d of dirs) walk(d);
  return found;
}

describe('dependencies', () => {
  const pkg = JSON.parse(read('package.json')) as { dependencies: Record<string, string>; devDependencies: Record<string, string> };
  // production code: the service's sources, not the console's browser sources or its build config
  const isConsoleSource = (f: string) => f.startsWith('api/console/') && f !== 'api/console/console.route.ts';
  const production = packagesImported(['api', 'workers', 'shared'], isConsoleSource);

  it('the runtime dependencies are exactly the packages production code loads (npm ls --omit=dev lists only those)', () => {
    expect(production.size).toBeGreaterThan(10);
    expect(production.get('chdb')).toBe('shared/platform/warehouse/clickhouse.ts'); // createRequire(...)('chdb/connection')
    const missing = [...production].filter(([name]) => !(name in pkg.dependencies)).map(([name, file]) => `${name} (${file})`);
    expect(missing, 'imported by production code, not a runtime dependency').toEqual([]);
    const unused = Object.keys(pkg.dependencies).filter((name) => !production.has(name));
    expect(unused, 'runtime dependencies production code never imports').toEqual([]);
  });

  it('tests, benchmarks and the console import only declared packages', () => {
    const other = packagesImported(['test', 'bench', 'api/console'], (f) => f.startsWith('api/') && !isConsoleSource(f));
    expect(other.has('vitest') && other.has('react')).toBe(true);
    const undeclared = [...other].filter(([name]) => !(name in pkg.dependencies) && !(name in pkg.devDependencies)).map(([name, file]) => `${name} (${file})`);
    expect(undeclared).toEqual([]);
  });

  it('package-lock.json matches package.json and installs one copy of each bull-board package', () => {
    const lock = JSON.parse(read('package-lock.json')) as {
      packages: Record<string, { version: string; dependencies?: Record<string, string>; devDependencies?: Record<string, string> }>;
    };
    expect(lock.packages[''].dependencies).toEqual(pkg.dependencies);
    expect(lock.packages[''].devDependencies).toEqual(pkg.devDependencies);
    for (const name of ['@bull-board/api', '@bull-board/ui', '@bull-board/fastify']) {
      const copies = Object.keys(lock.packages).filter((k) => k.endsWith(`node_modules/${name}`));
      expect(copies, name).toEqual([`node_modules/${name}`]);
    }
    expect(pkg.dependencies['@bull-board/api']).toBe(pkg.dependencies['@bull-board/fastify']);
  });
});
