import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { RedisNode } from '../config.js';

/**
 * Connection profiles. Producers on the request path fail fast, so a Redis outage is a prompt
 * 503 and never a hung request; workers and background loops wait for Redis to come back
 * (`maxRetriesPerRequest: null`, as BullMQ requires for workers); the workers' stores wait the
 * same way. The producers and the stores send the commands of one event-loop turn together
 * (`sendsTurnsTogether`).
 */
export type RedisProfile = 'producer' | 'worker' | 'store';

/**
 * The profiles whose commands of one turn go out in one socket write instead of one write system
 * call each: the producers' (the profile reads of concurrent GetTreatments requests) and the
 * workers' stores' (profiles, markers, counters: hundreds of jobs at once each send a few
 * commands, and the events worker spent a quarter of its time writing them one by one). On a
 * single Redis the socket is corked for the turn (`corkEachTurn`), on a Cluster the commands are
 * auto-pipelined per node. BullMQ keeps a connection of its own without either (`queueConnection`).
 */
function sendsTurnsTogether(profile: RedisProfile): boolean {
  return profile !== 'worker';
}

export function redisOptions(profile: RedisProfile): RedisOptions {
  if (profile === 'producer') {
    return {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      connectTimeout: 1000,
      commandTimeout: 1000,
      retryStrategy: (times) => Math.min(times * 100, 1000),
    };
  }
  return {
    maxRetriesPerRequest: null,
    enableReadyCheck: true,
    retryStrategy: (times) => Math.min(times * 200, 2000),
  };
}

/** Where Redis is: the config (REDIS_URL, or REDIS_CLUSTER_NODES when set) or a bare URL. */
export interface RedisTarget {
  redisUrl: string;
  redisClusterNodes?: readonly RedisNode[];
}

/** Options of an ioredis `Cluster` for a profile: the per-node options are the single-Redis ones. */
export function clusterOptions(profile: RedisProfile, name?: string): ClusterOptions {
  const { enableOfflineQueue, retryStrategy, ...node } = redisOptions(profile);
  return {
    enableAutoPipelining: sendsTurnsTogether(profile),
    enableOfflineQueue: enableOfflineQueue ?? true,
    enableReadyCheck: true,
    // Unreachable seed nodes at start-up: keep trying, with the profile's pace.
    clusterRetryStrategy: retryStrategy ?? ((times) => Math.min(times * 200, 2000)),
    // A failover or resharding in progress (CLUSTERDOWN, TRYAGAIN, MOVED storms) is retried briefly.
    retryDelayOnClusterDown: 200,
    retryDelayOnTryAgain: 100,
    retryDelayOnFailover: 100,
    redisOptions: { ...node, connectionName: name },
  };
}

/**
 * The one place a Redis connection is made. With `redisClusterNodes` (REDIS_CLUSTER_NODES) it is
 * an ioredis `Cluster` over those seed nodes, else a single `Redis` at the URL (a database index
 * in the URL, `redis://host:6379/3`, is honoured by ioredis itself). A `Cluster` has the command
 * API of `Redis` and is typed as one, so stores take either; the few places that differ ask
 * `isCluster(client)`. On a cluster every multi-key command and script of the service stays in one
 * hash slot (see shared/platform/redis/redis-keys.ts).
 */
export function createRedis(target: string | RedisTarget, profile: RedisProfile, name?: string): Redis {
  const t = typeof target === 'string' ? { redisUrl: target } : target;
  const client =
    t.redisClusterNodes && t.redisClusterNodes.length > 0
      ? (new Cluster(
          t.redisClusterNodes.map((n) => ({ host: n.host, port: n.port })),
          clusterOptions(profile, name),
        ) as unknown as Redis)
      : new Redis(t.redisUrl, { ...redisOptions(profile), connectionName: name, lazyConnect: false });
  if (sendsTurnsTogether(profile)) {
    // no defined command on a single Redis either, so what runs there runs on a Cluster
    refuseDefinedCommands(client);
    if (!isCluster(client)) corkEachTurn(client);
  }
  return client;
}

const corkingClients = new WeakSet<Redis>();

/**
 * Sends the commands of one event-loop turn in one socket write, as auto-pipelining does, without
 * building a pipeline: the first command of a turn corks the socket, and the turn's end
 * (`setImmediate`) uncorks it, when Node writes everything buffered with one `writev`. Each
 * command is written and queued for its reply as usual, so replies, timeouts and reconnection are
 * ioredis's own. Auto-pipelining built a `Pipeline` per turn and a wrapper per command, whose
 * garbage outlived the API's scavenges (about 2.3 KB a request promoted, a Mark-Compact every
 * 2.5–3 s under load); a corked socket keeps the single write and drops those objects.
 * A command with its own stream (a `pipeline()` being built) is left alone: the pipeline writes
 * to the socket once, corked or not, in order.
 */
function corkEachTurn(client: Redis): void {
  const send = client.sendCommand.bind(client);
  let corked: Redis['stream'] | undefined;
  const uncork = () => {
    const s = corked;
    corked = undefined;
    // a socket replaced by a reconnection, or ended, is uncorked (or flushed by end()) all the same
    s?.uncork();
  };
  client.sendCommand = ((command: Parameters<Redis['sendCommand']>[0], stream?: Parameters<Redis['sendCommand']>[1]) => {
    if (corked === undefined && stream === undefined && client.status === 'ready') {
      const s = client.stream;
      if (s?.writable) {
        s.cork();
        corked = s;
        setImmediate(uncork);
      }
    }
    return send(command, stream);
  }) as Redis['sendCommand'];
  corkingClients.add(client);
}

/**
 * An autopipelining client (a Cluster's producer or store) takes no defined commands (BullMQ's Lua
 * scripts), and neither do those profiles on a single Redis, where they cork instead: what runs
 * there then runs on a Cluster too. ioredis copies a client's defined commands onto each pipeline
 * when it builds it, so a command defined while a pipeline of the turn is pending is missing from
 * that pipeline: BullMQ's first call after its `defineCommand` (with `skipVersionCheck` nothing is
 * awaited in between) threw "pipeline[functionName] is not a function", and the pipeline's
 * callback then died of "results[i] is not iterable", an uncaught exception that ends the process
 * (the first DeleteUserData of an API process under traffic did it). BullMQ gets `queueConnection(client)` instead, where its scripts are defined
 * before any command. Its duplicates are new clients, without this guard.
 */
function refuseDefinedCommands(client: Redis): void {
  Object.defineProperty(client, 'defineCommand', {
    configurable: true,
    writable: true,
    value: (name: string) => {
      throw new Error(`command ${name} defined on an autopipelining Redis client: give BullMQ queueConnection(client) instead`);
    },
  });
}

/** True for an ioredis `Cluster` (made by `createRedis` from REDIS_CLUSTER_NODES). */
export function isCluster(client: unknown): boolean {
  return (client as { isCluster?: boolean } | null)?.isCluster === true;
}

/**
 * True when commands sent one by one go out together anyway: on a `Cluster` (a pipeline must stay
 * on one node; its producer and stores auto-pipeline) or a connection corked for each turn (the
 * producers' and the workers' stores' on a single Redis: `sendsTurnsTogether`). There, a store's
 * few commands of a job are better sent one by one than as a `pipeline()`, which is written at
 * once, alone: sent one by one they share the turn's single write with the commands of the other
 * jobs of that turn.
 */
export function sendsCommandsTogether(client: unknown): boolean {
  return isCluster(client) || corkingClients.has(client as Redis);
}

/**
 * Resolves when the client is ready (and its queue connection, when it has one: see
 * `queueConnection`), rejects after `timeoutMs`.
 */
export async function waitForRedis(client: Redis, timeoutMs: number): Promise<void> {
  const queues = queueConnections.get(client);
  if (queues) await Promise.all([waitForOne(client, timeoutMs), waitForOne(queues, timeoutMs)]);
  else await waitForOne(client, timeoutMs);
}

async function waitForOne(client: Redis, timeoutMs: number): Promise<void> {
  if (client.status === 'ready') return;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`Redis did not become ready within ${timeoutMs} ms`));
    }, timeoutMs);
    const onReady = () => {
      cleanup();
      resolve();
    };
    const cleanup = () => {
      clearTimeout(timer);
      client.off('ready', onReady);
    };
    client.on('ready', onReady);
  });
}

export type { Redis };

const queueConnections = new WeakMap<Redis, Redis>();

/**
 * The connection the BullMQ queues of `client` use: a duplicate with the same options but no
 * auto-pipelining (nor corking: a duplicate is a plain client), made once per client and closed
 * with it. BullMQ defines its Lua scripts (64 of them) as commands of the connection it is given,
 * and ioredis copies every defined command onto each pipeline it builds: about 40 µs a pipeline
 * (bench/micro/pipeline-cost.ts). On a client that auto-pipelines (a Cluster's), which builds one
 * every turn, that was about a fifth of a GetTreatments in an open loop; here, auto-pipelining
 * would still build one for every turn with a BullMQ command, where a lone job's add written on
 * its own costs one socket write (`addBulk` still sends several together). Make it before `waitForRedis(client)`, which then waits for both.
 */
export function queueConnection(client: Redis): Redis {
  let q = queueConnections.get(client);
  if (q === undefined) {
    const dup = duplicateRedis(client, { enableAutoPipelining: false });
    // the client's own listener reports an outage; the duplicate sees the same one
    dup.on('error', () => undefined);
    client.once('end', () => dup.disconnect());
    queueConnections.set(client, (q = dup));
  }
  return q;
}

/** A new connection like `client` (a `Redis` or a `Cluster`) with some per-connection options changed. */
export function duplicateRedis(client: Redis, overrides: RedisOptions): Redis {
  if (!isCluster(client)) return client.duplicate(overrides);
  const c = client as unknown as Cluster;
  // these two are the cluster's own options, the rest its nodes'
  const { enableOfflineQueue, enableAutoPipelining, ...node } = overrides;
  return c.duplicate([], {
    enableOfflineQueue: enableOfflineQueue ?? c.options.enableOfflineQueue,
    enableAutoPipelining: enableAutoPipelining ?? c.options.enableAutoPipelining,
    redisOptions: { ...c.options.redisOptions, ...node },
  }) as unknown as Redis;
}
