import type { ApiKeyRecord, Permission, Project } from '../domain/types.js';
import type { InvalidationBus } from '../clients/invalidation-bus.js';
import { PermissionDeniedError, UnauthenticatedError } from '../errors.js';
import { parseApiKey, secretMatches, type ApiKeyStore } from '../stores/api-key.store.js';
import type { ProjectStore } from '../stores/project.store.js';

export interface AuthContext {
  key: ApiKeyRecord;
  project: Project;
}

/**
 * Authenticates `/v1` calls (D7–D9). Key records and projects are cached in memory so delivery
 * costs no Redis round trip for auth; the cache is only trusted while the invalidation
 * subscription is up, and a revocation empties it on every process at once.
 */
export class Authenticator {
  private readonly keys = new Map<string, ApiKeyRecord | null>();
  private readonly projects = new Map<string, Project | null>();
  /**
   * Presented keys that verified, to their record: the next call with the same key skips the
   * secret's SHA-256. Only keys that verified get in (bounded by the keys issued), and a key's
   * entries go with its record on every invalidation.
   */
  private readonly verified = new Map<string, ApiKeyRecord>();
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
        this.projects.clear();
        this.verified.clear();
      } else if (msg.kind === 'apiKey' && msg.id) {
        this.keys.delete(msg.id);
        for (const [raw, record] of this.verified) if (record.keyId === msg.id) this.verified.delete(raw);
      }
      else if (msg.kind === 'project' && msg.projectId) this.projects.delete(msg.projectId);
    });
  }

  private async keyRecord(keyId: string): Promise<ApiKeyRecord | undefined> {
    const useCache = this.bus.isListening;
    if (useCache && this.keys.has(keyId)) return this.keys.get(keyId) ?? undefined;
    const r = await this.apiKeys.get(keyId);
    if (useCache) this.keys.set(keyId, r ?? null);
    return r;
  }

  async project(projectId: string): Promise<Project | undefined> {
    const useCache = this.bus.isListening;
    if (useCache && this.projects.has(projectId)) return this.projects.get(projectId) ?? undefined;
    const p = await this.projectStore.get(projectId);
    if (useCache) this.projects.set(projectId, p ?? null);
    return p;
  }

  /**
   * D9: 401 for a missing, unknown or revoked key, or a key of another project than the body's
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
    if (!project || !anyOf.some((p) => key.permissions.includes(p))) return undefined;
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
    if (typeof projectId !== 'string' || projectId !== key.projectId) throw new UnauthenticatedError('the API key is not valid for the projectId of the request');
    const project = await this.project(projectId);
    if (!project) throw new UnauthenticatedError('the API key is not valid for the projectId of the request');
    if (!anyOf.some((p) => key.permissions.includes(p))) {
      throw new PermissionDeniedError(`the API key lacks the ${anyOf.join(' or ')} permission this operation needs`);
    }
    return { key, project };
  }
}
