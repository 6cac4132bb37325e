import { connect, type Socket } from 'node:net';

/**
 * A minimal HTTP/1.1 client for the open-loop load: keep-alive connections, one request at a
 * time on each (no pipelining), requests written as one preformatted string, responses parsed
 * only for their status and length. node:http's client costs ~100 µs of CPU per request, so at
 * twice the service's capacity (10,000–15,000 req/s) the load generator itself ran out of CPU and
 * sent requests seconds late; this costs a fraction of that. Only what the bench's servers send
 * is understood: Content-Length or chunked bodies, `Connection: close`.
 */

/** An answer's status (and, for a refusal, its Retry-After in seconds), or why there was none. */
export type Outcome = { status: number; retryAfterSec?: number } | { status: 0; failure: 'timeout' | 'error'; message: string };

export interface RawRequest {
  body: string;
  /**
   * `writtenAt`: when the request was written to its connection (performance.now()), after any wait for a free one;
   * `reopened`: the request had to open its connection again (the server had closed it).
   */
  onDone(outcome: Outcome, writtenAt: number, reopened?: boolean): void;
}

/** A complete response at the start of `buf`: its status, its length in bytes, whether the server closes after it, a refusal's Retry-After. */
export function parseResponse(buf: Buffer): { status: number; length: number; close: boolean; retryAfterSec?: number } | undefined {
  const headEnd = buf.indexOf('\r\n\r\n');
  if (headEnd < 0) return undefined;
  const head = buf.toString('latin1', 0, headEnd);
  const status = Number(head.slice(9, 12));
  const close = /\r\nconnection:[ \t]*close/i.test(head);
  const r = parseBody(buf, head, headEnd, status, close);
  if (r === undefined || status === 200) return r;
  // a refusal says when to come back (seconds; an HTTP date is not sent by the servers measured)
  const retryAfter = /\r\nretry-after:[ \t]*(\d+)/i.exec(head);
  return retryAfter ? { ...r, retryAfterSec: Number(retryAfter[1]) } : r;
}

function parseBody(buf: Buffer, head: string, headEnd: number, status: number, close: boolean): { status: number; length: number; close: boolean } | undefined {
  const lengthMatch = /\r\ncontent-length:[ \t]*(\d+)/i.exec(head);
  let pos = headEnd + 4;
  if (lengthMatch) {
    const end = pos + Number(lengthMatch[1]);
    return buf.length >= end ? { status, length: end, close } : undefined;
  }
  if (!/\r\ntransfer-encoding:[ \t]*chunked/i.test(head)) return { status, length: pos, close };
  for (;;) {
    const lineEnd = buf.indexOf('\r\n', pos);
    if (lineEnd < 0) return undefined;
    const size = parseInt(buf.toString('latin1', pos, lineEnd), 16);
    pos = lineEnd + 2;
    if (size === 0) {
      // no trailers: the empty line that ends the body
      return buf.length >= pos + 2 ? { status, length: pos + 2, close } : undefined;
    }
    if (buf.length < pos + size + 2) return undefined;
    pos += size + 2;
  }
}

class Connection {
  private socket: Socket | undefined;
  private pending: Buffer | undefined;
  private current: RawRequest | undefined;
  /** When the request in flight was written (performance.now()), for the timeout sweep. */
  sentAt = 0;
  /** The request in flight opened the connection again: the server had closed it. */
  private reopened = false;
  /** Opened once already: a later open is a reconnection. */
  private opened = false;

  constructor(private readonly pool: RawPool) {}

  get busy(): boolean {
    return this.current !== undefined;
  }

  /** Opens the TCP connection (resolves once connected). */
  open(): Promise<void> {
    const socket = this.ensure();
    return new Promise((resolve, reject) => {
      if (!socket.connecting) return resolve();
      socket.once('connect', () => resolve());
      socket.once('error', reject);
    });
  }

  send(req: RawRequest): void {
    this.current = req;
    this.sentAt = performance.now();
    this.reopened = this.opened && (this.socket === undefined || this.socket.destroyed);
    if (this.reopened) this.pool.reconnects++;
    this.ensure().write(this.pool.head + Buffer.byteLength(req.body) + '\r\n\r\n' + req.body);
  }

  /** Gives up the request in flight (timeout) and the connection with it. */
  abort(failure: 'timeout' | 'error', message: string): void {
    const req = this.current;
    this.current = undefined;
    this.drop();
    req?.onDone({ status: 0, failure, message }, this.sentAt);
    this.pool.release(this);
  }

  destroy(): void {
    this.drop();
  }

  private ensure(): Socket {
    if (this.socket && !this.socket.destroyed) return this.socket;
    const socket = connect({ host: this.pool.host, port: this.pool.port, noDelay: true });
    this.opened = true;
    socket.on('data', (d: Buffer) => this.onData(socket, d));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      if (this.socket !== socket) return;
      this.socket = undefined;
      this.pending = undefined;
      if (this.current) this.abort('error', 'connection closed');
    });
    this.socket = socket;
    return socket;
  }

  private drop(): void {
    const s = this.socket;
    this.socket = undefined;
    this.pending = undefined;
    s?.destroy();
  }

  private onData(socket: Socket, d: Buffer): void {
    // nothing asked for: a stray byte stream is not an answer (and must not free the connection twice)
    if (socket !== this.socket || !this.current) return;
    const buf = this.pending ? Buffer.concat([this.pending, d]) : d;
    const r = parseResponse(buf);
    if (!r) {
      this.pending = buf;
      return;
    }
    this.pending = r.length < buf.length ? buf.subarray(r.length) : undefined;
    const req = this.current;
    this.current = undefined;
    if (r.close) this.drop();
    req?.onDone(r.retryAfterSec === undefined ? { status: r.status } : { status: r.status, retryAfterSec: r.retryAfterSec }, this.sentAt, this.reopened);
    this.pool.release(this);
  }
}

/**
 * `connections` keep-alive connections to one server; a request submitted while all are busy
 * waits in a FIFO queue (and the wait counts in its latency); a request unanswered after
 * `timeoutMs` is abandoned with its connection.
 */
export class RawPool {
  readonly host: string;
  readonly port: number;
  /** The request line and headers up to `Content-Length: `. */
  readonly head: string;
  private readonly all: Connection[];
  private readonly free: Connection[];
  private queue: RawRequest[] = [];
  private queueHead = 0;
  private readonly sweep: NodeJS.Timeout;
  /** Requests that had to open their connection again because the server had closed it (an idle keep-alive timeout, say). */
  reconnects = 0;

  constructor(url: URL, connections: number, headers: Record<string, string>, timeoutMs: number) {
    this.host = url.hostname;
    this.port = Number(url.port || 80);
    const extra = Object.entries({ 'content-type': 'application/json', ...headers })
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('');
    this.head = `POST ${url.pathname}${url.search} HTTP/1.1\r\nhost: ${url.host}\r\n${extra}content-length: `;
    this.all = Array.from({ length: connections }, () => new Connection(this));
    this.free = [...this.all];
    this.sweep = setInterval(() => {
      const now = performance.now();
      for (const c of this.all) if (c.busy && now - c.sentAt > timeoutMs) c.abort('timeout', `no answer within ${timeoutMs} ms`);
    }, 100);
    this.sweep.unref();
  }

  /**
   * Opens every connection and has one request answered on each (before a run's clock starts):
   * the kernel completes a connection before the server has accepted it, and a server accepting a
   * burst of new connections spends about a millisecond on each. A run then measures requests on
   * the keep-alive connections a load balancer or a client pool holds, not a connection storm.
   */
  async preconnect(body: string): Promise<void> {
    await Promise.all(this.all.map((c) => c.open()));
    // taken from the free list as submit() would; each answer releases its connection back
    this.free.length = 0;
    await Promise.all(this.all.map((c) => new Promise<void>((resolve) => c.send({ body, onDone: () => resolve() }))));
  }

  /** Requests waiting for a free connection. */
  get queued(): number {
    return this.queue.length - this.queueHead;
  }

  submit(req: RawRequest): void {
    const c = this.free.pop();
    if (c) c.send(req);
    else this.queue.push(req);
  }

  /** A connection is free again: it takes the oldest waiting request, if any. */
  release(c: Connection): void {
    if (this.queueHead < this.queue.length) {
      const next = this.queue[this.queueHead++];
      if (this.queueHead > 4096 && this.queueHead * 2 > this.queue.length) {
        this.queue = this.queue.slice(this.queueHead);
        this.queueHead = 0;
      }
      c.send(next);
    } else this.free.push(c);
  }

  destroy(): void {
    clearInterval(this.sweep);
    for (const c of this.all) c.destroy();
  }
}
