import type { ServiceContext } from '../shared/service-context.js';

export interface RoleHandle {
  name: string;
  /** Idempotent; finishes active work before it resolves. */
  close(): Promise<void>;
}

/** Composition root of the workers role (ingestion queues, Pub/Sub intake). */
export async function startWorkers(ctx: ServiceContext): Promise<RoleHandle> {
  ctx.log.info('workers role started');
  return { name: 'workers', close: async () => undefined };
}

/** Composition root of the scheduler role (declarative job schedulers). */
export async function startScheduler(ctx: ServiceContext): Promise<RoleHandle> {
  ctx.log.info('scheduler role started');
  return { name: 'scheduler', close: async () => undefined };
}
