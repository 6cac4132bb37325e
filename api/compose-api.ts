import type { Logger } from 'pino';
import type { Config } from '../shared/platform/config.js';
import { closePlatform, createPlatform, type Platform, type PlatformOptions } from '../shared/platform/platform.js';
import { remoteRpc, type RpcChannel } from '../shared/platform/warehouse/warehouse-rpc.js';
import { createProjects, type Projects } from '../shared/projects/create-projects.js';
import { createCatalog, type Catalog } from '../shared/catalog/create-catalog.js';
import { createTreatments, type Treatments } from '../shared/treatments/create-treatments.js';
import { createAggregation, type AggregationFeature } from '../shared/aggregation/create-aggregation.js';
import { createProfiles, type Profiles } from '../shared/profiles/create-profiles.js';
import { closeIngestion, createIngestion, type Ingestion } from '../shared/ingestion/create-ingestion.js';
import { closeImpact, createImpact, type Impact } from '../shared/impact/create-impact.js';
import { closeDelivery, createDelivery, type Delivery } from '../shared/delivery/create-delivery.js';
import { LoadShedder } from './http/load-shedder.js';
import { corsPolicy } from './http/cors.js';

/** The platform part of the API's services: the process's clients, plus where warehouse reads go and the overload guard. */
export interface ApiPlatform extends Platform {
  /**
   * ClickHouse reads asked for through the API: this process's own ClickHouse when it has one,
   * else a request/reply call to the workers role over the rpc queue (the calls each feature declares).
   */
  warehouse: RpcChannel;
  /** Refuses public requests while this process is overloaded (shared by its listeners: one event loop). */
  overload: LoadShedder;
}

/**
 * Everything the API's operations may be given, each feature under its own name, all built before
 * the first request. An operation module declares the part its handlers use (`Pick<ApiServices, …>`)
 * and is given only that.
 */
export interface ApiServices extends ApiPlatform {
  projects: Projects;
  catalog: Catalog;
  treatments: Treatments;
  aggregation: AggregationFeature;
  profiles: Profiles;
  ingestion: Ingestion;
  impact: Impact;
  delivery: Delivery;
}

/**
 * What the process hands the API role: it decides where warehouse reads go, and owns what it shares
 * with its other roles: the ingestion producers (with the Pub/Sub intake) and the data fields
 * (with the warehouse reads that recompute them).
 */
export interface ApiShared {
  warehouse: RpcChannel;
  ingestion: Ingestion;
  aggregation: AggregationFeature;
}

export interface ApiRole {
  services: ApiServices;
  /** Closes what the role built (delivery's cache, the decision log), not what it was given. */
  close(): Promise<void>;
}

/** Composition root of the API role: every feature built from its factory, on the request-path connection. */
export function composeApi(platform: Platform, shared: ApiShared): ApiRole {
  const { config, log, redis, keys, bus, now, metrics } = platform;
  const projects = createProjects({ redis, keys, bus, now });
  const catalog = createCatalog({ redis, keys, now });
  const treatments = createTreatments({ redis, keys, now });
  const { aggregation } = shared;
  const profiles = createProfiles({ redis, keys, retentionDays: config.retentionDays, redisPrefix: config.redisPrefix });
  const impact = createImpact({
    redis,
    redisPrefix: config.redisPrefix,
    log,
    enabled: config.decisionLog,
    maxBacklog: config.decisionLogMaxBacklog,
    flushMs: config.decisionLogFlushMs,
    stats: metrics.decisionLog,
  });
  const delivery = createDelivery({
    redis,
    keys,
    bus,
    log,
    projects: projects.projects,
    surfaces: catalog.surfaces,
    treatmentTypes: catalog.treatmentTypes,
    treatments: treatments.treatments,
    dataFields: aggregation.dataFields,
  });
  const overload = new LoadShedder({
    maxEventLoopLagMs: config.overloadMaxLagMs,
    maxInFlight: config.overloadMaxInFlight,
    targetLagMs: config.overloadTargetLagMs,
    stats: metrics.overload,
    cors: corsPolicy(config.corsOrigins),
  }).start();
  metrics.watchCache('api_key', projects.auth.cacheStats);
  metrics.watchCache('catalog', delivery.catalogPlans.cacheStats);
  const services: ApiServices = {
    ...platform,
    warehouse: shared.warehouse,
    overload,
    projects,
    catalog,
    treatments,
    aggregation,
    profiles,
    ingestion: shared.ingestion,
    impact: { decisionLog: impact.decisionLog, decisionLogEnabled: impact.decisionLogEnabled },
    delivery,
  };
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      overload.stop();
      await closeDelivery(delivery);
      await closeImpact(impact);
    })();
    return closing;
  };
  return { services, close };
}

/**
 * The API's services in a process of their own that serves no role (the admin CLI, tests):
 * warehouse reads go to the workers role over the rpc queue.
 */
export function openApiServices(config: Readonly<Config>, log: Logger, opts: PlatformOptions = {}): ApiRole {
  const platform = createPlatform(config, log, opts);
  const ingestion = createIngestion(platform);
  const warehouse = remoteRpc(platform.redis, config.redisPrefix, log);
  const api = composeApi(platform, { warehouse, ingestion, aggregation: createAggregation({ ...platform, redisPrefix: config.redisPrefix }) });
  return {
    services: api.services,
    close: async () => {
      await api.close();
      await closeIngestion(ingestion);
      await warehouse.close();
      await closePlatform(platform);
    },
  };
}
