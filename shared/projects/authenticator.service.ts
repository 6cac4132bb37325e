import type { LRUCache } from 'lru-cache';
import { boundedLru } from '../platform/limits/bounded-lru.js';
import type { ApiKeyRecord, Permission, Project } from './types.js';
import type { InvalidationBus } from '../platform/redis/invalidation-bus.js';
import { PermissionDeniedError, UnauthenticatedError } from '../platform/errors.js';
import { parseApiKey, secretMatches, type ApiKeyStore } from './api-key.store.js';
import type { ProjectStore } from './project.store.js';

export interface AuthContext {
  key: ApiKeyRecord;
  project: Project;
}

/**
 * Authenticates `/v1` calls. Key records and projects are cached in memory so delivery
 * costs no Redis round trip for auth; the cache is only trusted while the invalidation
 * subscription is up, and a revocation empties it on every process at once.
 */
/** Key records cached at most (issued keys in use; far more than a deployment issues). */
export const MAX_CACHED_KEYS = 100_000;
/** Unknown key ids remembered at most: a flood of random ids churns only this cache. */
export const MAX_UNKNOWN_KEYS = 10_000;
/** Projects (and project ids found missing) cached at most. */
export const MAX_CACHED_PROJECTS = 100_000;

/** lru-cache holds no null: the cached "does not exist". */
const MISSING = Symbol('missing');
type Missing = typeof MISSING;

export class Authenticator {
  /** Issued keys by id. Unknown ids are kept apart, so random ids cannot evict the keys in use. */
  private readonly keys: LRUCache<string, ApiKeyRecord> = boundedLru(MAX_CACHED_KEYS);
  private readonly unknownKeys: LRUCache<string, Missing> = boundedLru(MAX_UNKNOWN_KEYS);
  private readonly projects: LRUCache<string, Project | Missing> = boundedLru(MAX_CACHED_PROJECTS);
  /**
   * Presented keys that verified, to their record: the next call with the same key skips the
   * secret's SHA-256. Only keys that verified get in (one string per issued key), and a key's
   * entries go with its record on every invalidation.
   */
  private readonly verified: LRUCache<string, ApiKeyRecord> = boundedLru(MAX_CACHED_KEYS);
  /** Presented keys answered from `verified` (hits) or verified afresh (misses); read by /metrics. */
  readonly cacheStats = { hits: 0, misses: 0 };

  constructor(
    private readonly apiKeys: ApiKeyStore,
    private readonly projectStore: ProjectStore,
    private readonly bus: InvalidationBus,
  ) {
    bus.on((msg) => {
      if (msg.kind === 'all') {
        this.keys.clear();
        this.unknownKeys.clear();
        this.projects.clear();
        this.verified.clear();
      } else if (msg.kind === 'apiKey' && msg.id) {
        this.keys.delete(msg.id);
        this.unknownKeys.delete(msg.id);
        const presented: string[] = [];
        for (const [raw, record] of this.verified.entries()) if (record.keyId === msg.id) presented.push(raw);
        for (const raw of presented) this.verified.delete(raw);
      } else if (msg.kind === 'project' && msg.projectId) this.projects.delete(msg.projectId);
    });
  }

  /** Entries held by each cache (tests: bounded whatever is presented). */
  get cacheSizes(): { keys: number; unknownKeys: number; projects: number; verified: number } {
    return { keys: this.keys.size, unknownKeys: this.unknownKeys.size, projects: this.projects.size, verified: this.verified.size };
  }

  private async keyRecord(keyId: string): Promise<ApiKeyRecord | undefined> {
    const useCache = this.bus.isListening;
    if (useCache) {
      const cached = this.keys.get(keyId);
      if (cached !== undefined) return cached;
      if (this.unknownKeys.has(keyId)) return undefined;
    }
    const r = await this.apiKeys.get(keyId);
    if (useCache) {
      if (r) this.keys.set(keyId, r);
      else this.unknownKeys.set(keyId, MISSING);
    }
    return r;
  }

  async project(projectId: string): Promise<Project | undefined> {
    const useCache = this.bus.isListening;
    if (useCache) {
      const cached = this.projects.get(projectId);
      if (cached !== undefined) return cached === MISSING ? undefined : cached;
    }
    const p = await this.projectStore.get(projectId);
    if (useCache) this.projects.set(projectId, p ?? MISSING);
    return p;
  }

  /**
   * 401 for a missing, unknown or revoked key, or a key of another project than the body's
   * `projectId` (no hint whether that project exists); 403 for a right-project key without one of
   * the operation's permissions.
   */
  async authenticate(rawKey: string | undefined, projectId: unknown, anyOf: readonly Permission[]): Promise<AuthContext> {
    return this.authorize(await this.verifyKey(rawKey), projectId, anyOf);
  }

  /**
   * Without waiting: the record of a key that verified before and has not been invalidated since,
   * else undefined (then `verifyKey` decides). Lets the request path skip a promise per call.
   */
  knownKey(rawKey: string | undefined): ApiKeyRecord | undefined {
    const known = rawKey && this.bus.isListening ? this.verified.get(rawKey) : undefined;
    if (known !== undefined) this.cacheStats.hits++;
    return known;
  }

  /** Without waiting: `authorize`'s answer when it admits the call from cached state alone, else undefined. */
  admitted(key: ApiKeyRecord, projectId: unknown, anyOf: readonly Permission[]): AuthContext | undefined {
    if (typeof projectId !== 'string' || projectId !== key.projectId || !this.bus.isListening) return undefined;
    const project = this.projects.get(projectId);
    if (project === undefined || project === MISSING || !anyOf.some((p) => key.permissions.includes(p))) return undefined;
    return { key, project };
  }

  /** The key alone: presented, well-formed, issued, not revoked, right secret (else 401). */
  async verifyKey(rawKey: string | undefined): Promise<ApiKeyRecord> {
    if (!rawKey) throw new UnauthenticatedError('missing API key: send it in the x-api-key header');
    const known = this.knownKey(rawKey);
    if (known !== undefined) return known;
    this.cacheStats.misses++;
    const parsed = parseApiKey(rawKey);
    if (!parsed) throw new UnauthenticatedError();
    const key = await this.keyRecord(parsed.keyId);
    if (!key || key.revokeTime || !secretMatches(key, parsed.secret)) throw new UnauthenticatedError();
    // only while the record is still the cached one: an invalidation during the read wins
    if (this.bus.isListening && this.keys.get(parsed.keyId) === key) this.verified.set(rawKey, key);
    return key;
  }

  /** A verified key against the request's project (401) and the operation's permissions (403). */
  async authorize(key: ApiKeyRecord, projectId: unknown, anyOf: readonly Permission[]): Promise<AuthContext> {
    const admitted = this.admitted(key, projectId, anyOf);
    if (admitted !== undefined) return admitted;
    if (typeof projectId !== 'string' || projectId !== key.projectId)
      throw new UnauthenticatedError('the API key is not valid for the projectId of the request');
    const project = await this.project(projectId);
    if (!project) throw new UnauthenticatedError('the API key is not valid for the projectId of the request');
    if (!anyOf.some((p) => key.permissions.includes(p))) {
      throw new PermissionDeniedError(`the API key lacks the ${anyOf.join(' or ')} permission this operation needs`);
    }
    return { key, project };
  }
}
