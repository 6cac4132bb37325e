import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { ApiKeyRecord, Permission } from './types.js';
import { NotFoundError } from '../platform/errors.js';
import type { RedisKeys } from '../platform/redis/redis-keys.js';
import { atomicWrite, withOptimisticRetry } from '../platform/redis/atomic-write.js';
import { changeFields } from './change-entry.js';

const FIELD = 'record';
/** `tds_<keyId>_<secret>`: the key id finds the record, the 256-bit secret proves possession. */
const KEY_RE = /^tds_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;

export type PublicApiKey = Omit<ApiKeyRecord, 'secretHash'>;

export function publicKey(r: ApiKeyRecord): PublicApiKey {
  const { secretHash: _s, ...rest } = r;
  return rest;
}

function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

export function parseApiKey(raw: string): { keyId: string; secret: string } | undefined {
  const m = KEY_RE.exec(raw);
  return m ? { keyId: m[1], secret: m[2] } : undefined;
}

/** Constant-time comparison of a presented secret with the stored hash. */
export function secretMatches(record: ApiKeyRecord, secret: string): boolean {
  const a = Buffer.from(hashSecret(secret), 'hex');
  const b = Buffer.from(record.secretHash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}

export class ApiKeyStore {
  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    private readonly now: () => number,
  ) {}

  async get(keyId: string): Promise<ApiKeyRecord | undefined> {
    const raw = await this.redis.hget(this.keys.apiKey(keyId), FIELD);
    return raw ? (JSON.parse(raw) as ApiKeyRecord) : undefined;
  }

  async create(
    input: { projectId: string; permissions: Permission[]; description?: string; requestsPerSecond?: number },
    actor: string,
  ): Promise<{ apiKey: PublicApiKey; key: string }> {
    const keyId = randomBytes(8).toString('hex');
    const secret = randomBytes(32).toString('base64url');
    const record: ApiKeyRecord = {
      keyId,
      projectId: input.projectId,
      permissions: [...new Set(input.permissions)],
      description: input.description ?? '',
      createTime: new Date(this.now()).toISOString(),
      ...(input.requestsPerSecond !== undefined ? { requestsPerSecond: input.requestsPerSecond } : {}),
      secretHash: hashSecret(secret),
    };
    await atomicWrite(this.redis, {
      checks: [{ key: this.keys.apiKey(keyId), field: FIELD, expect: null }],
      writes: [
        { key: this.keys.apiKey(keyId), field: FIELD, value: JSON.stringify(record) },
        { key: this.keys.projectApiKeys(input.projectId), field: keyId, value: record.createTime },
      ],
      change: {
        key: this.keys.changes(input.projectId),
        entry: changeFields({
          time: record.createTime,
          actor,
          operation: 'CreateApiKey',
          resourceKind: 'apiKey',
          resourceId: keyId,
          before: null,
          after: publicKey(record),
        }),
      },
    });
    return { apiKey: publicKey(record), key: `tds_${keyId}_${secret}` };
  }

  async list(projectId: string): Promise<PublicApiKey[]> {
    const ids = Object.keys(await this.redis.hgetall(this.keys.projectApiKeys(projectId))).sort();
    const out: PublicApiKey[] = [];
    for (const id of ids) {
      const r = await this.get(id);
      if (r) out.push(publicKey(r));
    }
    return out.sort((a, b) => a.createTime.localeCompare(b.createTime) || a.keyId.localeCompare(b.keyId));
  }

  async revoke(projectId: string, keyId: string, actor: string): Promise<PublicApiKey> {
    return withOptimisticRetry<PublicApiKey>('RevokeApiKey', async () => {
      const key = this.keys.apiKey(keyId);
      const raw = await this.redis.hget(key, FIELD);
      const before = raw ? (JSON.parse(raw) as ApiKeyRecord) : undefined;
      if (!before || before.projectId !== projectId) throw new NotFoundError(`API key "${keyId}" does not exist in project "${projectId}"`);
      if (before.revokeTime) return { done: true as const, value: publicKey(before) };
      const after: ApiKeyRecord = { ...before, revokeTime: new Date(this.now()).toISOString() };
      const ok = await atomicWrite(this.redis, {
        checks: [{ key, field: FIELD, expect: raw }],
        writes: [{ key, field: FIELD, value: JSON.stringify(after) }],
        change: {
          key: this.keys.changes(projectId),
          entry: changeFields({
            time: after.revokeTime!,
            actor,
            operation: 'RevokeApiKey',
            resourceKind: 'apiKey',
            resourceId: keyId,
            before: publicKey(before),
            after: publicKey(after),
          }),
        },
        publish: { channel: this.keys.invalidationChannel(), message: JSON.stringify({ kind: 'apiKey', projectId, id: keyId }) },
      });
      if (!ok) return { done: false as const };
      // Redis answers the script's caller before it writes the PUBLISH to subscribers; it writes both
      // before it reads another command. One more round trip therefore means every process's
      // subscriber socket holds the invalidation by the time the operator sees "revoked".
      await this.redis.ping();
      return { done: true as const, value: publicKey(after) };
    });
  }
}
