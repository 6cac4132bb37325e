import Fastify, { LogController, type FastifyBaseLogger } from 'fastify';
import { describe, expect, it, vi } from 'vitest';
import { lazyRequestLogger } from '../../api/http/request-logger.js';
import { createLogger } from '../../shared/platform/logger.js';

/**
 * A request's logger is made only when the request logs at an enabled level, and then carries
 * the request id as Fastify's own child would; requests that log nothing make no pino child.
 */
async function appWithLog(level: string) {
  const lines: Record<string, unknown>[] = [];
  const base = createLogger(level, 'tds', { destination: { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) } });
  const child = vi.spyOn(base, 'child');
  let n = 0;
  const app = Fastify({
    loggerInstance: base as FastifyBaseLogger,
    logController: new LogController({ requestIdLogLabel: 'requestId', disableRequestLogging: true }),
    childLoggerFactory: lazyRequestLogger,
    genReqId: () => `req-${++n}`,
  });
  app.get('/quiet', async (req) => {
    req.log.debug({ password: 'hunter2' }, 'only at debug');
    return { debugOn: (req.log as FastifyBaseLogger & { isLevelEnabled(l: string): boolean }).isLevelEnabled('debug') };
  });
  app.get('/loud', async (req) => {
    req.log.warn({ password: 'hunter2', userId: 'u1' }, 'first');
    req.log.info('second');
    return { level: req.log.level };
  });
  app.get('/boom', async () => {
    throw new Error('broken');
  });
  // as api/http/error-handler.ts logs a 5xx
  app.setErrorHandler((err, req, reply) => {
    req.log.error({ err }, 'request failed');
    void reply.code(500).send({ code: 'INTERNAL' });
  });
  app.get('/own-level', { logLevel: 'debug' }, async (req) => {
    req.log.debug('debug on this route');
    return {};
  });
  await app.ready();
  return { app, lines, child };
}

describe('the per-request logger', () => {
  it('makes no child for a request that logs nothing at an enabled level', async () => {
    const { app, lines, child } = await appWithLog('info');
    const before = child.mock.calls.length;
    const res = await app.inject({ method: 'GET', url: '/quiet' });
    expect(res.json()).toEqual({ debugOn: false });
    expect(child.mock.calls.length).toBe(before);
    expect(lines).toEqual([]);
    await app.close();
  });

  it('logs with the request id, redacted, once the request logs', async () => {
    const { app, lines, child } = await appWithLog('info');
    const before = child.mock.calls.length;
    const res = await app.inject({ method: 'GET', url: '/loud' });
    expect(res.json()).toEqual({ level: 'info' });
    // one child for both lines
    expect(child.mock.calls.length).toBe(before + 1);
    expect(lines.map((l) => [l.msg, l.requestId])).toEqual([
      ['first', 'req-1'],
      ['second', 'req-1'],
    ]);
    expect(lines[0]).toMatchObject({ userId: 'u1', password: '[redacted]' });
    await app.close();
  });

  it("the error handler's lines carry the request id", async () => {
    const { app, lines } = await appWithLog('info');
    const res = await app.inject({ method: 'GET', url: '/boom' });
    expect(res.statusCode).toBe(500);
    expect(lines).toEqual([
      expect.objectContaining({ msg: 'request failed', requestId: 'req-1', level: 50, err: expect.objectContaining({ message: 'broken' }) }),
    ]);
    await app.close();
  });

  it('at debug, debug lines are written with the request id', async () => {
    const { app, lines } = await appWithLog('debug');
    const res = await app.inject({ method: 'GET', url: '/quiet' });
    expect(res.json()).toEqual({ debugOn: true });
    expect(lines).toEqual([expect.objectContaining({ msg: 'only at debug', requestId: 'req-1', password: '[redacted]' })]);
    await app.close();
  });

  it("a route's own log level applies to its requests", async () => {
    const { app, lines } = await appWithLog('info');
    await app.inject({ method: 'GET', url: '/own-level' });
    expect(lines).toEqual([expect.objectContaining({ msg: 'debug on this route', requestId: 'req-1' })]);
    await app.close();
  });
});
