import { readFileSync } from 'node:fs';

/**
 * Connections the kernel dropped because a listener's accept queue was full (Linux's
 * TcpExt ListenOverflows, machine-wide), or undefined where /proc/net/netstat is not readable.
 * A dropped connection's client retries after 1, 3, 7 s: a long wait the server never saw.
 */
export function listenOverflows(): number | undefined {
  try {
    const lines = readFileSync('/proc/net/netstat', 'utf8').split('\n');
    const names = lines.findIndex((l) => l.startsWith('TcpExt:'));
    if (names < 0) return undefined;
    const keys = lines[names].split(/\s+/);
    const values = lines[names + 1].split(/\s+/);
    const i = keys.indexOf('ListenOverflows');
    return i < 0 ? undefined : Number(values[i]);
  } catch {
    return undefined;
  }
}

/** A note's clause: how many connections a run lost to a full accept queue (empty when unknown). */
export function overflowsClause(before: number | undefined): string {
  const after = listenOverflows();
  return before === undefined || after === undefined ? '' : `; connections dropped by a full accept queue: ${after - before}`;
}
