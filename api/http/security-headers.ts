import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';

/**
 * Pages that can act (the queue dashboard's buttons empty queues, the API browser sends
 * requests): no other site may frame them (clickjacking), and no browser may guess a type other
 * than the one sent. An `onRequest` hook for their routes, assets included; the headers stay on
 * every answer, errors and 401s too.
 */
export function pageSecurityHeaders(_req: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
  void reply.header('x-frame-options', 'DENY');
  void reply.header('x-content-type-options', 'nosniff');
  done();
}
