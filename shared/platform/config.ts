import { isIP } from 'node:net';

/**
 * Configuration: one schema, parsed once at boot, frozen. A bad value stops the process with a
 * message naming the variable; nothing falls back silently.
 */
export type Role = 'api' | 'workers' | 'scheduler';
export const ROLES: readonly Role[] = ['api', 'workers', 'scheduler'];

export interface RedisNode {
  host: string;
  port: number;
}

export interface Config {
  /** Roles this process runs; `ROLE` unset = all of them (the all-in-one service). */
  roles: ReadonlySet<Role>;
  /** Main listener. @defaultValue 8080 */
  port: number;
  /** Alternate delivery listener (GetTreatments/GetTreatment only). @defaultValue 8081 */
  altPort: number;
  /** @defaultValue 127.0.0.1 */
  host: string;
  /**
   * Operations listener of this process (`/healthz`, `/readyz`, `/metrics`), served by every
   * role; 0 picks a free port (tests). Each process on one host needs its own. @defaultValue 9464
   */
  opsPort: number;
  /** Listen address of the operations listener; keep it off the public network. @defaultValue 127.0.0.1 */
  opsHost: string;
  /** @defaultValue redis://127.0.0.1:6379 */
  redisUrl: string;
  /**
   * Seed nodes of a Redis Cluster (`REDIS_CLUSTER_NODES=host:port,host:port,...`). When set, every
   * connection is an ioredis `Cluster` and REDIS_URL is ignored (no local redis-server is started).
   */
  redisClusterNodes?: readonly RedisNode[];
  /** Prefix of every Redis key (and BullMQ prefix), so several deployments or tests share one Redis. @defaultValue tds */
  redisPrefix: string;
  /** @defaultValue ./data */
  dataDir: string;
  /** Unset: embedded ClickHouse (chDB) under DATA_DIR. */
  clickhouseUrl?: string;
  clickhouseUser?: string;
  clickhousePassword?: string;
  clickhouseDatabase?: string;
  /** Unset: the admin API answers 404. */
  adminToken?: string;
  logLevel: string;
  /** GCP project that owns the service's own Pub/Sub subscriptions. @defaultValue tds-local */
  pubsubProjectId: string;
  /** When set, the Pub/Sub client talks to this emulator. */
  pubsubEmulatorHost?: string;
  /** Start a local redis-server when nothing answers at a local REDIS_URL. @defaultValue true */
  autoStartRedis: boolean;
  /**
   * How long a worker's hold on a job lasts without renewal; a job of a worker that died is
   * retried after about this long. @defaultValue 30000
   */
  workerLockMs: number;
  /**
   * How long an interaction sent without userId or surface waits for its decision in the
   * decision log before it becomes a dead letter (ms). @defaultValue 600000 (10 minutes)
   */
  interactionDecisionWaitMs: number;
  /**
   * Jobs processed at once per ingestion queue; the events queue holds at most 100 events per job
   * it may run. Enough for two 10,000-row inserts' worth of events: while one insert runs (its jobs
   * wait for it), the next one fills. @defaultValue 256
   */
  workerConcurrency: number;
  /** Events per merged LogEvents job at most (MERGED_JOB_EVENTS; see the producers'). @defaultValue 500 */
  mergedJobEvents: number;
  /**
   * Nice value (0–19) of a process that runs the workers or scheduler role without the api role
   * (the supervisor's background process): under CPU contention the API processes answer first
   * and ingestion uses what is left, catching up when load drops. 0 leaves them equal. Linux only.
   * @defaultValue 10
   */
  workersNice: number;
  /**
   * Whether that background process runs in Linux's idle CPU class while it keeps up (its
   * threads get a core only when no API process wants it), returning to `workersNice` for a
   * while when it starves (shared/platform/idle-scheduling.ts). Off with WORKERS_NICE=0.
   * @defaultValue true
   */
  workersSchedIdle: boolean;
  /**
   * Days events, interactions and decisions are kept (ClickHouse TTL), how long an untouched
   * profile lives in Redis, and how far in the past an accepted event or interaction may lie.
   * @defaultValue 400
   */
  retentionDays: number;
  /**
   * Requests per second per API key (burst: twice as many), in each API process: N processes
   * admit up to N times as many. A key's own `requestsPerSecond` (CreateApiKey) replaces it for
   * that key. The default is a ceiling above what one process can serve (a bare Fastify route
   * answers ~27,000 requests/s on one core), so it never refuses a customer's own traffic: a client
   * key ships in every copy of an app. Overload is refused by load shedding, not by this limit.
   * @defaultValue 50000
   */
  rateLimitPerKey: number;
  /** Failed authentications per second per client address, in each API process. @defaultValue 20 */
  rateLimitUnauthenticated: number;
  /**
   * Which proxies in front of the service are trusted to name the client's address in
   * `X-Forwarded-For` (Fastify's `trustProxy`): false (off: the connection's address counts, so
   * behind a load balancer every client shares its address), true (any: only when nothing can
   * reach the service but through the proxy), a hop count, or addresses and CIDRs.
   * @defaultValue false
   */
  trustProxy: boolean | number | readonly string[];
  /** Queued events beyond which ingestion answers 429 (Pub/Sub: nack) until the backlog drains. @defaultValue 2000000 */
  ingestMaxBacklog: number;
  /** API processes `npm start` (the supervisor) runs; they share the listeners. @defaultValue 1 */
  apiProcesses: number;
  /**
   * The decision log (`DECISION_LOG=on|off`): off, GetTreatments records nothing, ListDecisions
   * and GetTreatmentReport answer 400, and interactions must name their user, treatment and
   * surface. @defaultValue true
   */
  decisionLog: boolean;
  /** Decisions (responses) waiting in the decisions queue beyond which new ones are dropped and counted. @defaultValue 1000000 */
  decisionLogMaxBacklog: number;
  /**
   * How long an API process gathers decisions before it sends them as one job (ms; a job is also
   * sent when it holds 500 responses). Longer: fewer jobs; shorter: decisions readable sooner. @defaultValue 100
   */
  decisionLogFlushMs: number;
  /**
   * Event-loop lag (ms) beyond which an API process answers new public requests at once with 503
   * and `Retry-After` instead of queueing them; 0 turns the check off. @defaultValue 30
   */
  overloadMaxLagMs: number;
  /**
   * Client requests in flight in an API process beyond which new ones get 503 (0: no limit). The
   * requests of one event-loop turn are admitted up to it, so it bounds the work a turn takes on,
   * and with it the latency of the requests admitted, when more arrive than the process can
   * answer. @defaultValue 128
   */
  overloadMaxInFlight: number;
  /**
   * Event-loop lag (ms) that the in-flight limit, lowered while requests are being refused, keeps
   * an API process under: the latency of the requests it admits under overload. @defaultValue 3
   */
  overloadTargetLagMs: number;
  /**
   * HTTP_KEEP_ALIVE_TIMEOUT_MS: how long the public listeners keep an idle keep-alive connection
   * open (0: until the client closes it). Longer than a load balancer's or a client pool's own idle
   * timeout, so that they, not the service, close idle connections: a server that closes first races
   * the next request sent on the connection, which the client then sees fail (a load balancer
   * answers it 502). @defaultValue 72000 (Fastify's default; node:http's own is 5000)
   */
  httpKeepAliveTimeoutMs: number;
  /**
   * IDENTITY_MERGE (`on`/`off`): an event carrying `preLoginTempUserId` merges that anonymous id
   * into its signed-in user. `off` for apps whose user ids are all signed-in ids: nothing is
   * merged (ids merged before stay merged). @defaultValue on
   */
  identityMerge: boolean;
  /**
   * Web origins allowed to call the operations a client key may call (GetTreatments, GetTreatment,
   * LogEvents, LogTreatmentInteraction) from a browser (`CORS_ORIGINS`): serialised origins such
   * as `https://shop.example`, or `'*'` for any. Unset: no cross-origin access.
   */
  corsOrigins?: readonly string[] | '*';
}

/** Requests per second a key may make by default (RATE_LIMIT_PER_KEY): see `Config.rateLimitPerKey`. */
export const DEFAULT_RATE_LIMIT_PER_KEY = 50_000;
/** The highest per-key rate, of RATE_LIMIT_PER_KEY and of a key's own `requestsPerSecond`. */
export const MAX_RATE_LIMIT = 10_000_000;

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`invalid configuration: ${variable}: ${message}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

function port(env: Env, name: string, dflt: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return dflt;
  if (!/^\d+$/.test(raw) || Number(raw) > 65535) throw new ConfigError(name, `expected a port number 0-65535, got "${raw}"`);
  return Number(raw);
}

function optional(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v === '' ? undefined : v;
}

function int(env: Env, name: string, dflt: number, min: number, max: number): number {
  const raw = optional(env, name);
  if (raw === undefined) return dflt;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) throw new ConfigError(name, `expected an integer ${min}-${max}, got "${raw}"`);
  return Number(raw);
}

function bool(env: Env, name: string, dflt: boolean): boolean {
  const v = optional(env, name);
  if (v === undefined) return dflt;
  if (['1', 'true', 'yes'].includes(v.toLowerCase())) return true;
  if (['0', 'false', 'no'].includes(v.toLowerCase())) return false;
  throw new ConfigError(name, `expected true or false, got "${v}"`);
}

function onOff(env: Env, name: string, dflt: boolean): boolean {
  const v = optional(env, name);
  if (v === undefined) return dflt;
  if (v.toLowerCase() === 'on') return true;
  if (v.toLowerCase() === 'off') return false;
  throw new ConfigError(name, `expected on or off, got "${v}"`);
}

function roles(env: Env): Set<Role> {
  const raw = optional(env, 'ROLE');
  if (raw === undefined || raw === 'all') return new Set(ROLES);
  const parts = raw.split(',').map((s) => s.trim());
  for (const p of parts) {
    if (!ROLES.includes(p as Role)) throw new ConfigError('ROLE', `expected api, workers, scheduler (comma-separated) or all, got "${raw}"`);
  }
  return new Set(parts as Role[]);
}

/** `host:port,host:port,...` (an IPv6 host in brackets: `[::1]:7000`); at most 64 seed nodes. */
function clusterNodes(env: Env): RedisNode[] | undefined {
  const raw = optional(env, 'REDIS_CLUSTER_NODES');
  if (raw === undefined) return undefined;
  const expected = 'expected host:port[,host:port...] (the seed nodes of a Redis Cluster)';
  const parts = raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (parts.length === 0 || parts.length > 64) throw new ConfigError('REDIS_CLUSTER_NODES', expected);
  return parts.map((part) => {
    const m = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})$/.exec(part);
    const port = m ? Number(m[2]) : 0;
    if (!m || port < 1 || port > 65535) throw new ConfigError('REDIS_CLUSTER_NODES', `${expected}, got "${part}"`);
    return { host: m[1].startsWith('[') ? m[1].slice(1, -1) : m[1], port };
  });
}

/** proxy-addr's names for address ranges, accepted in TRUST_PROXY beside addresses and CIDRs. */
const PROXY_RANGE_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

/** `TRUST_PROXY`: unset/false, true, a hop count, or comma-separated addresses and CIDRs. */
function trustProxy(env: Env): boolean | number | string[] {
  const raw = optional(env, 'TRUST_PROXY');
  if (raw === undefined || raw.toLowerCase() === 'false') return false;
  if (raw.toLowerCase() === 'true') return true;
  if (/^\d+$/.test(raw)) {
    const hops = Number(raw);
    if (hops < 1 || hops > 100) throw new ConfigError('TRUST_PROXY', `a hop count must be 1-100, got "${raw}"`);
    return hops;
  }
  const parts = raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  for (const part of parts) {
    if (PROXY_RANGE_NAMES.includes(part)) continue;
    const [address, prefix, extra] = part.split('/');
    const family = isIP(address);
    const prefixOk = prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 6 ? 128 : 32));
    if (family === 0 || !prefixOk || extra !== undefined) {
      throw new ConfigError(
        'TRUST_PROXY',
        `expected true, false, a hop count, or comma-separated addresses and CIDRs (e.g. 10.0.0.0/8,::1) or ${PROXY_RANGE_NAMES.join(', ')}; got "${part}"`,
      );
    }
  }
  if (parts.length === 0) throw new ConfigError('TRUST_PROXY', 'expected at least one address or CIDR');
  return parts;
}

/**
 * `CORS_ORIGINS`: `*`, or comma-separated origins (scheme, host and port only, as a browser sends
 * them in `Origin`), normalised (lower-case host, default port dropped); at most 100.
 */
function corsOrigins(env: Env): readonly string[] | '*' | undefined {
  const raw = optional(env, 'CORS_ORIGINS');
  if (raw === undefined) return undefined;
  if (raw.trim() === '*') return '*';
  const parts = raw.split(',').map((s) => s.trim());
  if (parts.length > 100) throw new ConfigError('CORS_ORIGINS', `at most 100 origins, got ${parts.length}`);
  const origins = parts.map((part) => {
    if (part === '*') throw new ConfigError('CORS_ORIGINS', 'use * alone (any origin) or a list of origins, not both');
    let origin: string | undefined;
    try {
      // no path, query, fragment or credentials: what a browser sends in `Origin`
      if (/^https?:\/\/[^/?#@\s]+$/i.test(part)) origin = new URL(part).origin;
    } catch {
      origin = undefined;
    }
    if (origin === undefined)
      throw new ConfigError(
        'CORS_ORIGINS',
        `expected * or comma-separated origins such as https://shop.example or http://localhost:3000 (scheme, host, optional port; no path, no trailing slash), got "${part}"`,
      );
    return origin;
  });
  return Object.freeze([...new Set(origins)]);
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export function loadConfig(env: Env = process.env): Readonly<Config> {
  const redisUrl = optional(env, 'REDIS_URL') ?? 'redis://127.0.0.1:6379';
  try {
    const u = new URL(redisUrl);
    if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') throw new Error('protocol');
    if (u.pathname.length > 1 && !/^\/\d+$/.test(u.pathname)) throw new Error('db');
  } catch {
    throw new ConfigError('REDIS_URL', 'expected redis://[user:password@]host[:port][/db]');
  }
  const redisClusterNodes = clusterNodes(env);
  const clickhouseUrl = optional(env, 'CLICKHOUSE_URL');
  if (clickhouseUrl !== undefined) {
    try {
      const u = new URL(clickhouseUrl);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('protocol');
    } catch {
      throw new ConfigError('CLICKHOUSE_URL', 'expected an http(s):// URL of a ClickHouse server');
    }
  }
  const logLevel = optional(env, 'LOG_LEVEL') ?? 'info';
  if (!LOG_LEVELS.includes(logLevel)) throw new ConfigError('LOG_LEVEL', `expected one of ${LOG_LEVELS.join(', ')}`);
  const prefix = optional(env, 'REDIS_PREFIX') ?? 'tds';
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(prefix)) throw new ConfigError('REDIS_PREFIX', 'expected 1-64 letters, digits, _ . -');
  const adminToken = optional(env, 'ADMIN_TOKEN');
  if (adminToken !== undefined && adminToken.length < 16) throw new ConfigError('ADMIN_TOKEN', 'must be at least 16 characters');
  const cfg: Config = {
    roles: roles(env),
    port: port(env, 'PORT', 8080),
    altPort: port(env, 'ALT_PORT', 8081),
    host: optional(env, 'HOST') ?? '127.0.0.1',
    opsPort: port(env, 'OPS_PORT', 9464),
    opsHost: optional(env, 'OPS_HOST') ?? '127.0.0.1',
    redisUrl,
    redisClusterNodes,
    redisPrefix: prefix,
    dataDir: optional(env, 'DATA_DIR') ?? './data',
    clickhouseUrl,
    clickhouseUser: optional(env, 'CLICKHOUSE_USER'),
    clickhousePassword: optional(env, 'CLICKHOUSE_PASSWORD'),
    clickhouseDatabase: optional(env, 'CLICKHOUSE_DATABASE'),
    adminToken,
    logLevel,
    pubsubProjectId: optional(env, 'PUBSUB_PROJECT_ID') ?? 'tds-local',
    pubsubEmulatorHost: optional(env, 'PUBSUB_EMULATOR_HOST'),
    autoStartRedis: bool(env, 'AUTO_START_REDIS', true),
    workerLockMs: int(env, 'WORKER_LOCK_MS', 30_000, 1000, 600_000),
    interactionDecisionWaitMs: int(env, 'INTERACTION_DECISION_WAIT_SECONDS', 600, 1, 86_400) * 1000,
    workerConcurrency: int(env, 'WORKER_CONCURRENCY', 256, 1, 1000),
    mergedJobEvents: int(env, 'MERGED_JOB_EVENTS', 500, 1, 10_000),
    workersNice: int(env, 'WORKERS_NICE', 10, 0, 19),
    workersSchedIdle: bool(env, 'WORKERS_SCHED_IDLE', true),
    retentionDays: int(env, 'RETENTION_DAYS', 400, 1, 3650),
    rateLimitPerKey: int(env, 'RATE_LIMIT_PER_KEY', DEFAULT_RATE_LIMIT_PER_KEY, 1, MAX_RATE_LIMIT),
    rateLimitUnauthenticated: int(env, 'RATE_LIMIT_UNAUTHENTICATED', 20, 1, 1_000_000),
    trustProxy: trustProxy(env),
    ingestMaxBacklog: int(env, 'INGEST_MAX_BACKLOG', 2_000_000, 1, 1_000_000_000),
    apiProcesses: int(env, 'API_PROCESSES', 1, 1, 64),
    decisionLog: onOff(env, 'DECISION_LOG', true),
    decisionLogMaxBacklog: int(env, 'DECISION_LOG_MAX_BACKLOG', 1_000_000, 1000, 1_000_000_000),
    decisionLogFlushMs: int(env, 'DECISION_LOG_FLUSH_MS', 100, 1, 1000),
    overloadMaxLagMs: int(env, 'OVERLOAD_MAX_LAG_MS', 30, 0, 60_000),
    overloadMaxInFlight: int(env, 'OVERLOAD_MAX_IN_FLIGHT', 128, 0, 1_000_000),
    overloadTargetLagMs: int(env, 'OVERLOAD_TARGET_LAG_MS', 3, 1, 60_000),
    httpKeepAliveTimeoutMs: int(env, 'HTTP_KEEP_ALIVE_TIMEOUT_MS', 72_000, 0, 3_600_000),
    identityMerge: onOff(env, 'IDENTITY_MERGE', true),
    corsOrigins: corsOrigins(env),
  };
  // Caught here rather than as EADDRINUSE at listen time, so the message names the variable.
  if (cfg.roles.has('api') && cfg.port !== 0 && cfg.port === cfg.altPort) throw new ConfigError('ALT_PORT', `must differ from PORT (both are ${cfg.port})`);
  if (cfg.roles.has('api') && cfg.opsPort !== 0 && (cfg.opsPort === cfg.port || cfg.opsPort === cfg.altPort))
    throw new ConfigError('OPS_PORT', `must differ from PORT and ALT_PORT (${cfg.opsPort})`);
  return Object.freeze(cfg);
}

/** For a process entry: the configuration, or exit 2 with the message naming the bad variable. */
export function loadConfigOrExit(env: Env = process.env): Readonly<Config> {
  try {
    return loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(2);
    }
    throw err;
  }
}
