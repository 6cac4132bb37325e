import { isIPv6 } from 'node:net';

/**
 * The address a per-address limit counts against: IPv4 as is (also when IPv4-mapped), IPv6 by
 * its /64 prefix, since one host commonly holds a whole /64 and could rotate through it.
 */
export function clientAddressKey(ip: string | undefined): string {
  if (!ip) return 'unknown';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return mapped[1];
  if (!isIPv6(ip)) return ip;
  const [head, tail = ''] = ip.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = ip.includes('::') ? [...left, ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right] : left;
  return `${groups
    .slice(0, 4)
    .map((g) => (parseInt(g, 16) || 0).toString(16))
    .join(':')}::/64`;
}

/**
 * TRUST_PROXY as Fastify's `trustProxy`. A hop count is a function trusting that many hops from
 * the connection (the load balancer and the proxies behind it): Fastify's own number form trusts
 * nothing since 5.12 (a direct client could spoof the header), so like `true` a hop count is only
 * for a service that nothing reaches but through its proxies; addresses and CIDRs are safe anywhere.
 */
export function trustProxyOption(trust: boolean | number | readonly string[]): boolean | string[] | ((address: string, hop: number) => boolean) {
  if (typeof trust === 'number') return (_address, hop) => hop < trust;
  return typeof trust === 'boolean' ? trust : [...trust];
}
