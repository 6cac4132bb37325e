import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { InvalidationBus } from '../platform/redis/invalidation-bus.js';
import { compileCatalogPlan, type CatalogPlan } from './catalog-plan.js';
import type { RedisKeys } from '../platform/redis/redis-keys.js';
import type { DataFieldStore } from '../aggregation/index.js';
import type { ProjectStore } from '../projects/index.js';
import type { SurfaceStore } from '../catalog/index.js';
import type { TreatmentTypeStore } from '../catalog/index.js';
import type { TreatmentStore } from '../treatments/index.js';

export interface CatalogCacheDeps {
  redis: Redis;
  keys: RedisKeys;
  bus: InvalidationBus;
  treatments: Pick<TreatmentStore, 'list'>;
  treatmentTypes: Pick<TreatmentTypeStore, 'list'>;
  surfaces: Pick<SurfaceStore, 'names'>;
  dataFields: Pick<DataFieldStore, 'list'>;
  /** the project's global holdout is compiled into the plan */
  projects: Pick<ProjectStore, 'get'>;
  log: Logger;
}

export interface CatalogCacheOptions {
  /** While the invalidation bus is down, how often catalogue versions are compared. @defaultValue 250 */
  versionCheckMs?: number;
  /** A project not asked for in this long is dropped from memory. @defaultValue 900000 */
  idleMs?: number;
  /** Wait after a failed compile before the next attempt. @defaultValue 200 */
  retryMs?: number;
  /** Monotonic clock for the cache's own timing. */
  clock?: () => number;
}

interface Entry {
  plan?: CatalogPlan;
  /** the first compile, awaited by the project's first requests */
  first?: Promise<CatalogPlan>;
  /** bumped by every invalidation; the plan is fresh when it was compiled at the current generation */
  generation: number;
  compiledGeneration: number;
  /**
   * The generation this process's own last change created: until a plan of at least that
   * generation exists, callers wait for it instead of being served the older plan (read your own
   * writes). Changes made by other processes only start a background recompile.
   */
  ownGeneration: number;
  compiling: boolean;
  /** the recompile under way, for callers that must wait for it */
  recompiling?: Promise<void>;
  /** `catalogVersion` read before the plan's records were */
  version: string | null;
  lastUsed: number;
}

/**
 * Compiled catalogue plans of this process, one per project, so delivery reads its plan from
 * memory. A management change reaches every process within a second in two ways: each change
 * publishes `{kind: 'catalog', projectId}` on the invalidation bus, and the cache recompiles the
 * project at once in the background (the old plan serves meanwhile, so no request waits for the
 * compile); while the bus is not listening, messages may be lost, so a timer compares every
 * cached project's `catalogVersion` with the one its plan was compiled at, a few times a second.
 * A reconnected bus says `{kind: 'all'}` and every plan is recompiled.
 */
export class CatalogCache {
  private readonly entries = new Map<string, Entry>();
  private readonly versionCheckMs: number;
  private readonly idleMs: number;
  private readonly retryMs: number;
  private readonly clock: () => number;
  private readonly unsubscribe: () => void;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  /** Plans served from memory (hits) or awaited from a first compile (misses); read by /metrics. */
  readonly cacheStats = { hits: 0, misses: 0 };

  constructor(
    private readonly deps: CatalogCacheDeps,
    opts: CatalogCacheOptions = {},
  ) {
    this.versionCheckMs = opts.versionCheckMs ?? 250;
    this.idleMs = opts.idleMs ?? 15 * 60_000;
    this.retryMs = opts.retryMs ?? 200;
    this.clock = opts.clock ?? (() => performance.now());
    this.unsubscribe = deps.bus.on((msg) => {
      if (msg.kind === 'all') for (const projectId of this.entries.keys()) this.invalidate(projectId);
      else if ((msg.kind === 'catalog' || msg.kind === 'project') && msg.projectId !== undefined) this.invalidate(msg.projectId, msg.local === true);
    });
  }

  /** The project's plan; only a project's first call (per process) waits for Redis. */
  async plan(projectId: string): Promise<CatalogPlan> {
    this.startTimer();
    let entry = this.entries.get(projectId);
    if (entry === undefined) {
      entry = { generation: 0, compiledGeneration: -1, ownGeneration: -1, compiling: false, version: null, lastUsed: this.clock() };
      this.entries.set(projectId, entry);
    }
    entry.lastUsed = this.clock();
    if (entry.plan !== undefined) {
      if (entry.compiledGeneration >= entry.ownGeneration) {
        this.cacheStats.hits++;
        return entry.plan;
      }
      return this.ownChangeCompiled(projectId, entry);
    }
    this.cacheStats.misses++;
    entry.first ??= this.firstCompile(projectId, entry);
    return entry.first;
  }

  /**
   * The project's catalogue changed: recompile now if it is cached (an uncached one compiles on
   * first use). `own`: the change was made by this process, whose next calls wait for it.
   */
  invalidate(projectId: string, own = false): void {
    const entry = this.entries.get(projectId);
    if (entry === undefined) return;
    entry.generation++;
    if (own) entry.ownGeneration = entry.generation;
    if (entry.plan !== undefined) void this.recompile(projectId, entry);
  }

  /** Waits until the plan includes this process's own last change (a failed compile is retried here). */
  private async ownChangeCompiled(projectId: string, entry: Entry): Promise<CatalogPlan> {
    this.cacheStats.misses++;
    for (let attempt = 0; entry.compiledGeneration < entry.ownGeneration; attempt++) {
      if (entry.recompiling) await entry.recompiling;
      else if (attempt > 0) await this.compileOnce(projectId, entry);
      else await this.recompile(projectId, entry);
      if (this.closed || attempt > 20) break;
    }
    return entry.plan!;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.unsubscribe();
    if (this.timer !== undefined) clearInterval(this.timer);
    this.entries.clear();
  }

  private async firstCompile(projectId: string, entry: Entry): Promise<CatalogPlan> {
    try {
      await this.compileOnce(projectId, entry);
      // an invalidation that arrived during the first compile may have been read before the change
      if (entry.generation !== entry.compiledGeneration) void this.recompile(projectId, entry);
      return entry.plan!;
    } finally {
      entry.first = undefined;
    }
  }

  /** Compiles until the plan is at the latest generation; invalidations during a compile coalesce into one more. */
  private recompile(projectId: string, entry: Entry): Promise<void> {
    if (entry.compiling || this.closed) return entry.recompiling ?? Promise.resolve();
    entry.recompiling = this.recompileLoop(projectId, entry).finally(() => {
      entry.recompiling = undefined;
    });
    return entry.recompiling;
  }

  private async recompileLoop(projectId: string, entry: Entry): Promise<void> {
    entry.compiling = true;
    try {
      while (entry.generation !== entry.compiledGeneration && !this.closed && this.entries.get(projectId) === entry) {
        await this.compileOnce(projectId, entry);
      }
    } catch (err) {
      this.deps.log.warn({ err, projectId }, 'catalogue recompile failed; serving the previous plan and retrying');
      setTimeout(() => void this.recompile(projectId, entry), this.retryMs).unref();
    } finally {
      entry.compiling = false;
    }
  }

  private async compileOnce(projectId: string, entry: Entry): Promise<void> {
    const generation = entry.generation;
    // Read before the records: a change racing this compile leaves a newer version behind, so the
    // version check recompiles rather than trusting a plan that may have missed it.
    const version = await this.deps.redis.get(this.deps.keys.catalogVersion(projectId));
    const [treatments, types, surfaces, dataFields, project] = await Promise.all([
      this.deps.treatments.list(projectId),
      this.deps.treatmentTypes.list(projectId),
      this.deps.surfaces.names(projectId),
      this.deps.dataFields.list(projectId),
      this.deps.projects.get(projectId),
    ]);
    entry.plan = compileCatalogPlan({ projectId, treatments, types, surfaces, dataFields, globalHoldoutPercentage: project?.globalHoldoutPercentage });
    entry.version = version;
    entry.compiledGeneration = generation;
  }

  private startTimer(): void {
    if (this.timer !== undefined || this.closed) return;
    this.timer = setInterval(() => void this.tick(), this.versionCheckMs);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    const now = this.clock();
    for (const [projectId, entry] of this.entries) {
      if (now - entry.lastUsed > this.idleMs && !entry.compiling && entry.first === undefined) this.entries.delete(projectId);
    }
    if (this.deps.bus.isListening) return;
    await this.checkVersions().catch((err: unknown) => this.deps.log.debug({ err }, 'catalogue version check failed'));
  }

  private async checkVersions(): Promise<void> {
    const cached = [...this.entries].filter(([, e]) => e.plan !== undefined && !e.compiling);
    if (cached.length === 0) return;
    const versions = await this.deps.redis.mget(...cached.map(([projectId]) => this.deps.keys.catalogVersion(projectId)));
    cached.forEach(([projectId, entry], i) => {
      if (versions[i] !== entry.version) this.invalidate(projectId);
    });
  }
}
