import type { InvalidationBus } from '../shared/platform/redis/invalidation-bus.js';

/**
 * Something derived from a project's catalogue (its data fields, its capped treatments), cached
 * per process so the ingestion path costs no Redis round trip per job in steady state. Every
 * catalogue change publishes a `catalog` invalidation and a (re)connect of the bus publishes
 * `all`; while the bus is not listening, messages could be missed, so the cache is bypassed.
 */
export class ProjectCatalogCache<T> {
  /** An invalidation deletes the entry at once, so a load that was under way then is not kept. */
  private readonly entries = new Map<string, Promise<T>>();
  private readonly unsubscribe: () => void;

  constructor(
    private readonly load: (projectId: string) => Promise<T>,
    private readonly bus: InvalidationBus,
  ) {
    this.unsubscribe = bus.on((msg) => {
      if (msg.kind === 'all') this.entries.clear();
      else if (msg.kind === 'catalog' && msg.projectId !== undefined) this.entries.delete(msg.projectId);
    });
  }

  async get(projectId: string): Promise<T> {
    if (!this.bus.isListening) return this.load(projectId);
    const cached = this.entries.get(projectId);
    if (cached) return cached;
    const loading = this.load(projectId);
    this.entries.set(projectId, loading);
    // A failed load is not cached: the next job tries again.
    loading.catch(() => {
      if (this.entries.get(projectId) === loading) this.entries.delete(projectId);
    });
    return loading;
  }

  close(): void {
    this.unsubscribe();
    this.entries.clear();
  }
}
