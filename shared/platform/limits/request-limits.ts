import type { Config } from '../config.js';
import { ResourceExhaustedError } from '../errors.js';
import { clientAddressKey } from './client-address.js';
import { TokenBuckets } from './token-buckets.js';

/** Keys with a bucket at most; only verified keys get one, so a busy key is never evicted. */
export const MAX_KEY_BUCKETS = 100_000;
/**
 * Addresses whose failed authentications are counted at most: ~4 MB when full (measured ~210
 * bytes per bucket). The least recently seen go first, and an address still flooding is seen.
 */
export const MAX_ADDRESS_BUCKETS = 20_000;

/**
 * The request-rate limits (per key, and failed authentications per address), per process: with N
 * API processes a key may reach N times its limit, and an address N times its failures. Both
 * checks are synchronous, for the callback hooks of the request path.
 */
export class RequestLimits {
  private readonly perKey: TokenBuckets;
  private readonly failures: TokenBuckets;

  constructor(config: Pick<Config, 'rateLimitPerKey' | 'rateLimitUnauthenticated'>, now?: () => number) {
    this.perKey = new TokenBuckets({ ratePerSecond: config.rateLimitPerKey, capacity: 2 * config.rateLimitPerKey, maxBuckets: MAX_KEY_BUCKETS, now });
    this.failures = new TokenBuckets({
      ratePerSecond: config.rateLimitUnauthenticated,
      capacity: config.rateLimitUnauthenticated,
      maxBuckets: MAX_ADDRESS_BUCKETS,
      now,
    });
  }

  /**
   * One request of a verified key, at the key's own `requestsPerSecond` when it has one (else
   * RATE_LIMIT_PER_KEY): undefined when admitted, else the 429 to answer.
   */
  keyRequest(key: { keyId: string; requestsPerSecond?: number }): ResourceExhaustedError | undefined {
    const waitMs = key.requestsPerSecond === undefined ? this.perKey.take(key.keyId) : this.perKey.take(key.keyId, key.requestsPerSecond);
    return waitMs === 0 ? undefined : new ResourceExhaustedError('too many requests for this API key; retry after the time in Retry-After', waitMs);
  }

  /**
   * Before an authentication that may cost a Redis read (the key is not known to this process,
   * or an admin token): reserves one of the address's failed authentications. Undefined when
   * reserved, else the 429 to answer. Reserving first bounds the Redis reads of an address even
   * when its requests arrive all at once.
   */
  authenticationAttempt(ip: string | undefined): ResourceExhaustedError | undefined {
    const waitMs = this.failures.take(clientAddressKey(ip));
    return waitMs === 0
      ? undefined
      : new ResourceExhaustedError('too many failed authentications from this address; retry after the time in Retry-After', waitMs);
  }

  /** The reserved attempt did not fail authentication (a valid key, or a dependency error): given back. */
  authenticationSucceeded(ip: string | undefined): void {
    this.failures.refund(clientAddressKey(ip));
  }

  /** Buckets held, for tests: bounded whatever is presented. */
  get sizes(): { keys: number; addresses: number } {
    return { keys: this.perKey.size, addresses: this.failures.size };
  }
}
