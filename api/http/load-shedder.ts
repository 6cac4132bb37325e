import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { errorBody, UnavailableError } from '../../shared/platform/errors.js';
import type { OverloadStats } from '../../shared/platform/metrics.js';
import { CORS_EXPOSED_HEADERS, type CorsPolicy } from './cors.js';

/** One of Fastify's connection options, as Fastify passes them (defaulted) to a server factory. */
function numberOption(opts: Record<string, unknown>, name: string): number | undefined {
  const v = opts[name];
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

export interface LoadShedderOptions {
  /** Event-loop lag (ms) beyond which public requests are refused; 0: never. */
  maxEventLoopLagMs: number;
  /**
   * Public requests being answered at once beyond which new ones are refused; 0: no limit. While
   * requests are being refused for it and the event loop lags more than `targetLagMs`, the limit
   * in force halves (down to a sixteenth of it), and it grows back while the lag is lower or
   * nothing is refused.
   */
  maxInFlight: number;
  /** The lag (ms) the lowered in-flight limit keeps the event loop under. @defaultValue 3 */
  targetLagMs?: number;
  /** How often the lag is sampled (ms). @defaultValue 10 */
  sampleMs?: number;
  stats: OverloadStats;
  /** CORS_ORIGINS: a refusal to a page of an allowed origin says so, so its script can read the 503 and Retry-After. */
  cors?: CorsPolicy;
}

/**
 * The operations a client key calls on every page view and every event: what overload is made
 * of. Management, admin, health and console requests are few and always admitted, so an
 * operator can act on an overloaded service.
 */
const CLIENT_OPERATIONS = new Set(['/v1/GetTreatments', '/v1/GetTreatment', '/v1/LogEvents', '/v1/LogTreatmentInteraction']);

function isClientOperation(url: string | undefined): boolean {
  if (url === undefined) return false;
  const q = url.indexOf('?');
  return CLIENT_OPERATIONS.has(q < 0 ? url : url.slice(0, q));
}

const REFUSAL = JSON.stringify(errorBody(new UnavailableError('the service is overloaded; retry the request after the time in Retry-After')));
const REFUSAL_HEADERS = { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(REFUSAL), 'retry-after': '1' };

/**
 * Overload is refused, not queued. A process that takes requests faster than it can answer them
 * builds a queue in its event loop that grows without bound, and every request waits seconds.
 * Instead, while the event loop lags behind a timer by more than `maxEventLoopLagMs` (two samples
 * in a row), or more than `maxInFlight` client requests are being answered, a new client request
 * (delivery and ingestion, `CLIENT_OPERATIONS`) is answered at once with 503 UNAVAILABLE and
 * `Retry-After: 1`, before anything parses it: a refusal costs a few microseconds, so the process
 * keeps answering the requests it admits at their usual latency, and the client (or the load
 * balancer) retries or goes elsewhere. Management, admin, health and console requests are always
 * admitted; the ops listener is another server.
 */
export class LoadShedder {
  private lagMs = 0;
  /** The lag of the sample before: one late sample (a GC pause, the process descheduled) is not overload. */
  private previousLagMs = 0;
  private inFlight = 0;
  /** The in-flight limit in force: `maxInFlight`, lowered while overload is refused (`adapt`). */
  private limit: number;
  /** A request was refused since the last sample. */
  private refusedSinceSample = false;
  private expected = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly sampleMs: number;
  private readonly targetLagMs: number;

  constructor(private readonly opts: LoadShedderOptions) {
    this.sampleMs = opts.sampleMs ?? 10;
    this.targetLagMs = opts.targetLagMs ?? 3;
    this.limit = opts.maxInFlight;
    opts.stats.inFlightLimit = this.limit;
  }

  start(): this {
    // the samples serve the lag bound and the in-flight limit's adaptation: none without either
    if (this.timer || (this.opts.maxEventLoopLagMs === 0 && this.opts.maxInFlight === 0)) return this;
    this.expected = performance.now() + this.sampleMs;
    this.timer = setInterval(() => {
      const now = performance.now();
      this.previousLagMs = this.lagMs;
      this.lagMs = Math.max(0, now - this.expected);
      this.expected = now + this.sampleMs;
      this.adapt();
    }, this.sampleMs);
    this.timer.unref();
    return this;
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /**
   * Under overload every connection has a request waiting, and the requests admitted in one turn
   * of the event loop are answered in the next: the more a turn admits, the longer the turns (the
   * refusals of the rest take their share too), and the longer every admitted request waits. So
   * while requests are being refused and the loop lags beyond `targetLagMs`, the limit
   * halves; otherwise (the lag is below it, or nothing was refused) it grows back by a
   * thirty-second of `maxInFlight` per sample (to all of it within about 300 ms). The admitted
   * requests then wait about two turns of a few milliseconds, not of `maxInFlight` requests, and
   * about as many are answered per second: a turn that admits fewer is shorter. A saturated closed
   * loop of fewer clients than `maxInFlight` is never refused, however long its turns: the limit
   * only falls while requests are refused. And a limit lowered by an overload does not stay low
   * when the load falls on a machine whose lag stays above the target for other reasons (the CPU
   * shared with other processes): a sample in which nothing was refused raises it.
   */
  private adapt(): void {
    const max = this.opts.maxInFlight;
    if (max === 0) return;
    if (this.refusedSinceSample && this.lagMs > this.targetLagMs) this.limit = Math.max(Math.ceil(max / 16), this.limit >> 1);
    else if (this.limit < max) this.limit = Math.min(max, this.limit + Math.ceil(max / 32));
    this.refusedSinceSample = false;
    this.opts.stats.inFlightLimit = this.limit;
  }

  /** The in-flight limit in force now (`maxInFlight` unless lowered under overload; 0: no limit). */
  get inFlightLimit(): number {
    return this.limit;
  }

  /** The event loop's lag over the last two samples (ms): the lower of the two, so a single pause does not count. */
  get lag(): number {
    return Math.min(this.lagMs, this.previousLagMs);
  }

  get overloaded(): boolean {
    return (this.opts.maxEventLoopLagMs > 0 && this.lag > this.opts.maxEventLoopLagMs) || (this.limit > 0 && this.inFlight >= this.limit);
  }

  /** Wraps a request listener (Fastify's): refuses public requests while overloaded, counts the rest in flight. */
  guard(handler: (req: IncomingMessage, res: ServerResponse) => void): (req: IncomingMessage, res: ServerResponse) => void {
    return (req, res) => {
      // a CORS preflight costs nothing worth refusing, and a refused one would hide the 503 from the page
      if (req.method !== 'POST' || !isClientOperation(req.url)) return handler(req, res);
      if (this.overloaded) {
        this.opts.stats.shed++;
        this.refusedSinceSample = true;
        // the unread body is discarded by node once the answer is sent, so the connection stays usable
        res.writeHead(503, this.refusalHeaders(req.headers.origin)).end(REFUSAL);
        return;
      }
      this.inFlight++;
      res.once('close', () => this.inFlight--);
      handler(req, res);
    };
  }

  private refusalHeaders(origin: string | undefined): Record<string, string | number> {
    const allowed = origin === undefined ? undefined : this.opts.cors?.allowOrigin(origin);
    if (allowed === undefined) return REFUSAL_HEADERS;
    return {
      ...REFUSAL_HEADERS,
      'access-control-allow-origin': allowed,
      'access-control-expose-headers': CORS_EXPOSED_HEADERS,
      ...(allowed === '*' ? {} : { vary: 'origin' }),
    };
  }

  /**
   * A Fastify `serverFactory`: a plain HTTP server whose requests pass the guard first. Fastify
   * applies its connection options only to a server it creates itself, so they are applied here as
   * Fastify does: without them the server would keep node:http's defaults (an idle keep-alive
   * connection closed after 5 s instead of Fastify's 72 s).
   */
  serverFactory(): (handler: (req: IncomingMessage, res: ServerResponse) => void, opts: Record<string, unknown>) => Server {
    return (handler, opts) => {
      const server = createServer(this.guard(handler));
      const keepAlive = numberOption(opts, 'keepAliveTimeout');
      if (keepAlive !== undefined) server.keepAliveTimeout = keepAlive;
      const requestTimeout = numberOption(opts, 'requestTimeout');
      if (requestTimeout !== undefined) server.requestTimeout = requestTimeout;
      const connectionTimeout = numberOption(opts, 'connectionTimeout');
      if (connectionTimeout !== undefined) server.setTimeout(connectionTimeout);
      const perSocket = numberOption(opts, 'maxRequestsPerSocket');
      if (perSocket !== undefined && perSocket > 0) server.maxRequestsPerSocket = perSocket;
      return server;
    };
  }
}
