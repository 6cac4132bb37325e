import type { InvalidationBus } from '../platform/redis/invalidation-bus.js';
import type { StoreDeps } from '../platform/redis/store-deps.js';
import { ApiKeyStore } from './api-key.store.js';
import type { ChangeEntry } from './change-entry.js';
import { listChanges } from './change-log.store.js';
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
  /** The audit trail of a project, newest first; `pageToken` is the id of the last entry of the previous page. */
  changeLog: { list(projectId: string, pageSize: number, pageToken?: string): Promise<{ changes: ChangeEntry[]; nextPageToken?: string }> };
}

export function createProjects(deps: ProjectsDeps): Projects {
  const projects = new ProjectStore(deps.redis, deps.keys, deps.now);
  const apiKeys = new ApiKeyStore(deps.redis, deps.keys, deps.now);
  const changeLog: Projects['changeLog'] = { list: (projectId, pageSize, pageToken) => listChanges(deps.redis, deps.keys, projectId, pageSize, pageToken) };
  return { projects, apiKeys, auth: new Authenticator(apiKeys, projects, deps.bus), changeLog };
}
