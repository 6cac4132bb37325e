import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { errorBody, UnavailableError } from '../../shared/platform/errors.js';
import type { OverloadStats } from '../../shared/platform/metrics.js';

export interface LoadShedderOptions {
  /** Event-loop lag (ms) beyond which public requests are refused; 0: never. */
  maxEventLoopLagMs: number;
  /** Public requests being answered at once beyond which new ones are refused; 0: no limit. */
  maxInFlight: number;
  /** How often the lag is sampled (ms). @defaultValue 10 */
  sampleMs?: number;
  stats: OverloadStats;
}

const REFUSAL = JSON.stringify(errorBody(new UnavailableError('the service is overloaded; retry the request after the time in Retry-After')));
const REFUSAL_HEADERS = { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(REFUSAL), 'retry-after': '1' };

/**
 * Overload is refused, not queued. A process that takes requests faster than it can answer them
 * builds a queue in its event loop that grows without bound, and every request waits seconds.
 * Instead, while the event loop lags behind a timer by more than `maxEventLoopLagMs`, or more
 * than `maxInFlight` public requests are being answered, a new public request (`/v1/...`) is
 * answered at once with 503 UNAVAILABLE and `Retry-After: 1`, before anything parses it: a
 * refusal costs a few microseconds, so the process keeps answering the requests it admits at
 * their usual latency, and the client (or the load balancer) retries or goes elsewhere. Health,
 * admin and console requests are always admitted; the ops listener is another server.
 */
export class LoadShedder {
  private lagMs = 0;
  private inFlight = 0;
  private expected = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly sampleMs: number;

  constructor(private readonly opts: LoadShedderOptions) {
    this.sampleMs = opts.sampleMs ?? 10;
  }

  start(): this {
    if (this.timer || this.opts.maxEventLoopLagMs === 0) return this;
    this.expected = performance.now() + this.sampleMs;
    this.timer = setInterval(() => {
      const now = performance.now();
      this.lagMs = Math.max(0, now - this.expected);
      this.expected = now + this.sampleMs;
    }, this.sampleMs);
    this.timer.unref();
    return this;
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** The event loop's lag at the last sample (ms). */
  get lag(): number {
    return this.lagMs;
  }

  get overloaded(): boolean {
    return (this.opts.maxEventLoopLagMs > 0 && this.lagMs > this.opts.maxEventLoopLagMs) || (this.opts.maxInFlight > 0 && this.inFlight >= this.opts.maxInFlight);
  }

  /** Wraps a request listener (Fastify's): refuses public requests while overloaded, counts the rest in flight. */
  guard(handler: (req: IncomingMessage, res: ServerResponse) => void): (req: IncomingMessage, res: ServerResponse) => void {
    return (req, res) => {
      if (!req.url?.startsWith('/v1/')) return handler(req, res);
      if (this.overloaded) {
        this.opts.stats.shed++;
        // the unread body is discarded by node once the answer is sent, so the connection stays usable
        res.writeHead(503, REFUSAL_HEADERS).end(REFUSAL);
        return;
      }
      this.inFlight++;
      res.once('close', () => this.inFlight--);
      handler(req, res);
    };
  }

  /** A Fastify `serverFactory`: a plain HTTP server whose requests pass the guard first. */
  serverFactory(): (handler: (req: IncomingMessage, res: ServerResponse) => void) => Server {
    return (handler) => createServer(this.guard(handler));
  }
}
