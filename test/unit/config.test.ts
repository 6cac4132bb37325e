import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../shared/platform/config.js';
import { MERGED_JOB_EVENTS } from '../../shared/ingestion/index.js';

function configErrorOf(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error(`loadConfig accepted ${JSON.stringify(env)}`);
}

describe('loadConfig', () => {
  it('has the documented defaults with an empty environment', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      port: 8080,
      altPort: 8081,
      host: '127.0.0.1',
      redisUrl: 'redis://127.0.0.1:6379',
      redisPrefix: 'tds',
      dataDir: './data',
      logLevel: 'info',
      pubsubProjectId: 'tds-local',
      autoStartRedis: true,
    });
    expect([...c.roles].sort()).toEqual(['api', 'scheduler', 'workers']);
    expect(c.adminToken).toBeUndefined();
    expect(c.clickhouseUrl).toBeUndefined();
    expect(c.pubsubEmulatorHost).toBeUndefined();
  });

  it('merges LogEvents requests into jobs of up to 500 events unless MERGED_JOB_EVENTS says otherwise, within 1-10,000', () => {
    // the producers' default, which the config repeats (shared/platform does not import ingestion)
    expect(loadConfig({}).mergedJobEvents).toBe(MERGED_JOB_EVENTS);
    expect(MERGED_JOB_EVENTS).toBe(500);
    expect(loadConfig({ MERGED_JOB_EVENTS: '100' }).mergedJobEvents).toBe(100);
    for (const bad of ['0', '10001', '-5', '2.5', 'many']) expect(configErrorOf({ MERGED_JOB_EVENTS: bad }).message).toContain('MERGED_JOB_EVENTS');
  });

  it('treats empty variables as unset', () => {
    const c = loadConfig({ PORT: '', ADMIN_TOKEN: '', CLICKHOUSE_URL: '', ROLE: '' });
    expect(c.port).toBe(8080);
    expect(c.adminToken).toBeUndefined();
    expect(c.clickhouseUrl).toBeUndefined();
    expect(c.roles.size).toBe(3);
  });

  it('is frozen', () => {
    const c = loadConfig({});
    expect(Object.isFrozen(c)).toBe(true);
    expect(() => {
      (c as { port: number }).port = 1;
    }).toThrow();
  });

  it('reads every variable it documents', () => {
    const c = loadConfig({
      PORT: '0',
      ALT_PORT: '65535',
      HOST: '0.0.0.0',
      REDIS_URL: 'rediss://user:pw@redis.internal:6380',
      REDIS_PREFIX: 'prod.eu-1',
      DATA_DIR: '/var/lib/tds',
      CLICKHOUSE_URL: 'https://ch.internal:8443',
      CLICKHOUSE_USER: 'u',
      CLICKHOUSE_PASSWORD: 'p',
      CLICKHOUSE_DATABASE: 'tds',
      ADMIN_TOKEN: 'x'.repeat(16),
      LOG_LEVEL: 'debug',
      PUBSUB_PROJECT_ID: 'gcp-proj',
      PUBSUB_EMULATOR_HOST: 'localhost:8085',
      AUTO_START_REDIS: 'false',
    });
    expect(c).toMatchObject({
      port: 0,
      altPort: 65535,
      host: '0.0.0.0',
      redisUrl: 'rediss://user:pw@redis.internal:6380',
      redisPrefix: 'prod.eu-1',
      dataDir: '/var/lib/tds',
      clickhouseUrl: 'https://ch.internal:8443',
      clickhouseUser: 'u',
      clickhousePassword: 'p',
      clickhouseDatabase: 'tds',
      adminToken: 'x'.repeat(16),
      logLevel: 'debug',
      pubsubProjectId: 'gcp-proj',
      pubsubEmulatorHost: 'localhost:8085',
      autoStartRedis: false,
    });
  });

  it.each([
    ['PORT', 'abc'],
    ['PORT', '-1'],
    ['PORT', '8080.5'],
    ['ALT_PORT', '70000'],
    ['REDIS_URL', 'http://x'],
    ['REDIS_URL', 'not a url'],
    ['REDIS_URL', 'redis://localhost:6379/abc'],
    ['LOG_LEVEL', 'loud'],
    ['ROLE', 'web'],
    ['ROLE', 'api,web'],
    ['ADMIN_TOKEN', 'short'],
    ['ADMIN_TOKEN', 'x'.repeat(15)],
    ['CLICKHOUSE_URL', 'ftp://x'],
    ['CLICKHOUSE_URL', 'nonsense'],
    ['REDIS_PREFIX', 'has space'],
    ['AUTO_START_REDIS', 'maybe'],
    ['RATE_LIMIT_PER_KEY', '0'],
    ['RATE_LIMIT_PER_KEY', '10000001'],
    ['TRUST_PROXY', 'yes'],
    ['TRUST_PROXY', '0'],
    ['TRUST_PROXY', '10.0.0.0/33'],
    ['TRUST_PROXY', '10.0.0.1,proxy.internal'],
    ['TRUST_PROXY', '::1/129'],
    ['TRUST_PROXY', ','],
  ])('%s=%j throws a ConfigError naming the variable', (variable, value) => {
    const err = configErrorOf({ [variable]: value });
    expect(err.variable).toBe(variable);
    expect(err.message).toContain(variable);
  });

  it('RATE_LIMIT_PER_KEY defaults to a ceiling above what one API process serves (50,000/s)', () => {
    expect(loadConfig({}).rateLimitPerKey).toBe(50_000);
    expect(loadConfig({ RATE_LIMIT_PER_KEY: '200' }).rateLimitPerKey).toBe(200);
  });

  it('TRUST_PROXY: off by default; true, a hop count, or addresses, CIDRs and range names', () => {
    expect(loadConfig({}).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: 'false' }).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: 'true' }).trustProxy).toBe(true);
    expect(loadConfig({ TRUST_PROXY: '2' }).trustProxy).toBe(2);
    expect(loadConfig({ TRUST_PROXY: '10.0.0.5, 10.1.0.0/16,::1,fd00::/8,loopback' }).trustProxy).toEqual([
      '10.0.0.5',
      '10.1.0.0/16',
      '::1',
      'fd00::/8',
      'loopback',
    ]);
  });

  it('never echoes a rejected ADMIN_TOKEN (a secret) in the message', () => {
    expect(configErrorOf({ ADMIN_TOKEN: 'sekrit123' }).message).not.toContain('sekrit123');
  });

  it('PORT and ALT_PORT must differ for the API role (else ALT_PORT is named, not EADDRINUSE later)', () => {
    expect(configErrorOf({ PORT: '9000', ALT_PORT: '9000' }).variable).toBe('ALT_PORT');
    expect(configErrorOf({ ROLE: 'api', PORT: '8081' }).variable).toBe('ALT_PORT');
    expect(loadConfig({ PORT: '0', ALT_PORT: '0' }).port).toBe(0);
    expect(loadConfig({ ROLE: 'workers', PORT: '9000', ALT_PORT: '9000' }).roles.has('api')).toBe(false);
  });

  it('ROLE=api runs only the API', () => {
    expect([...loadConfig({ ROLE: 'api' }).roles]).toEqual(['api']);
  });

  it('ROLE=workers,scheduler runs both background roles and not the API', () => {
    const roles = loadConfig({ ROLE: 'workers, scheduler' }).roles;
    expect([...roles].sort()).toEqual(['scheduler', 'workers']);
    expect(roles.has('api')).toBe(false);
  });

  it('ROLE=all runs every role', () => {
    expect(loadConfig({ ROLE: 'all' }).roles.size).toBe(3);
  });

  it('accepts a database index in REDIS_URL', () => {
    expect(loadConfig({ REDIS_URL: 'redis://127.0.0.1:6379/3' }).redisUrl).toBe('redis://127.0.0.1:6379/3');
  });

  it.each(['1', 'true', 'YES', '0', 'false', 'No'])('AUTO_START_REDIS=%s is a boolean', (v) => {
    expect(loadConfig({ AUTO_START_REDIS: v }).autoStartRedis).toBe(['1', 'true', 'yes'].includes(v.toLowerCase()));
  });

  it('OPS_PORT and OPS_HOST: the ops listener of every process (9464 on 127.0.0.1; 0 = a free port)', () => {
    expect(loadConfig({})).toMatchObject({ opsPort: 9464, opsHost: '127.0.0.1' });
    expect(loadConfig({ OPS_PORT: '0', OPS_HOST: '0.0.0.0' })).toMatchObject({ opsPort: 0, opsHost: '0.0.0.0' });
    expect(configErrorOf({ OPS_PORT: 'x' }).variable).toBe('OPS_PORT');
    expect(configErrorOf({ OPS_PORT: '70000' }).variable).toBe('OPS_PORT');
    expect(configErrorOf({ OPS_PORT: '8080' }).variable).toBe('OPS_PORT');
    expect(configErrorOf({ OPS_PORT: '8081' }).variable).toBe('OPS_PORT');
    expect(loadConfig({ ROLE: 'workers', OPS_PORT: '8080' }).opsPort).toBe(8080);
  });

  it('IDENTITY_MERGE: on (default) or off, any case; anything else names the variable', () => {
    expect(loadConfig({}).identityMerge).toBe(true);
    expect(loadConfig({ IDENTITY_MERGE: '' }).identityMerge).toBe(true);
    expect(loadConfig({ IDENTITY_MERGE: 'on' }).identityMerge).toBe(true);
    expect(loadConfig({ IDENTITY_MERGE: 'off' }).identityMerge).toBe(false);
    expect(loadConfig({ IDENTITY_MERGE: 'OFF' }).identityMerge).toBe(false);
    for (const bad of ['no', 'disabled', '0']) {
      const err = configErrorOf({ IDENTITY_MERGE: bad });
      expect(err.variable).toBe('IDENTITY_MERGE');
      expect(err.message).toContain('on or off');
    }
  });

  it('REDIS_CLUSTER_NODES: seed nodes of a Redis Cluster, validated', () => {
    expect(loadConfig({}).redisClusterNodes).toBeUndefined();
    expect(loadConfig({ REDIS_CLUSTER_NODES: '' }).redisClusterNodes).toBeUndefined();
    expect(loadConfig({ REDIS_CLUSTER_NODES: '10.0.0.1:7000, redis-1.internal:7001,[::1]:7002' }).redisClusterNodes).toEqual([
      { host: '10.0.0.1', port: 7000 },
      { host: 'redis-1.internal', port: 7001 },
      { host: '::1', port: 7002 },
    ]);
    for (const bad of [
      '10.0.0.1',
      'host:0',
      'host:70000',
      'redis://h:7000',
      ',',
      'h:7000,h',
      'a b:7000',
      Array.from({ length: 65 }, (_, i) => `h:${i + 1}`).join(','),
    ]) {
      const err = configErrorOf({ REDIS_CLUSTER_NODES: bad });
      expect(err.variable).toBe('REDIS_CLUSTER_NODES');
      expect(err.message).toContain('host:port');
    }
  });

  it('CORS_ORIGINS: unset (no cross-origin access), * or a list of origins, normalised as browsers send them', () => {
    expect(loadConfig({}).corsOrigins).toBeUndefined();
    expect(loadConfig({ CORS_ORIGINS: '' }).corsOrigins).toBeUndefined();
    expect(loadConfig({ CORS_ORIGINS: '*' }).corsOrigins).toBe('*');
    expect(loadConfig({ CORS_ORIGINS: 'https://Shop.Example, http://localhost:3000,https://shop.example:443,https://bücher.example' }).corsOrigins).toEqual([
      'https://shop.example',
      'http://localhost:3000',
      'https://xn--bcher-kva.example',
    ]);
    for (const bad of [
      'shop.example',
      'https://shop.example/',
      'https://shop.example/app',
      'https://shop.example?x=1',
      'ftp://shop.example',
      'https://user@shop.example',
      '*,https://a.example',
      'https://a.example,,https://b.example',
      'https://exa mple.com',
      'null',
    ]) {
      const err = configErrorOf({ CORS_ORIGINS: bad });
      expect(err.variable, bad).toBe('CORS_ORIGINS');
      expect(err.message).toContain('CORS_ORIGINS');
    }
  });
});
