import type { InvalidationBus } from '../platform/redis/invalidation-bus.js';
import type { StoreDeps } from '../platform/redis/store-deps.js';
import { ApiKeyStore } from './api-key.store.js';
import { Authenticator } from './authenticator.service.js';
import { ProjectStore } from './project.store.js';

export interface ProjectsDeps extends StoreDeps {
  /** The authenticator drops cached keys and projects when they change. */
  bus: InvalidationBus;
}

export interface Projects {
  projects: ProjectStore;
  apiKeys: ApiKeyStore;
  auth: Authenticator;
}

export function createProjects(deps: ProjectsDeps): Projects {
  const projects = new ProjectStore(deps.redis, deps.keys, deps.now);
  const apiKeys = new ApiKeyStore(deps.redis, deps.keys, deps.now);
  return { projects, apiKeys, auth: new Authenticator(apiKeys, projects, deps.bus) };
}
