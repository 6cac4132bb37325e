// The console's only way to the service: the public /v1 and /admin/v1 operations.
import type { ErrorBody } from '../../../client/src/wire.generated.js';

export type ErrorDetail = ErrorBody['error']['details'][number];

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: ErrorDetail[] = [],
  ) {
    super(message);
  }
}

export interface Session {
  mode: 'admin' | 'key';
  /** the admin token or the TREATMENT_MANAGEMENT key */
  secret: string;
  operator: string;
  /** the project in use (a key's own project; the admin's choice) */
  projectId: string;
  /** admin only: management keys the console issued for itself, per project, revoked at sign-out */
  projectKeys: Record<string, { keyId: string; key: string }>;
}

const STORAGE_KEY = 'tds-console-session';

/** The secret lives in sessionStorage only: gone when the tab closes. */
export function loadSession(): Session | null {
  try {
    const raw = sessionStorage.getItem(STORAGE_KEY);
    return raw ? (JSON.parse(raw) as Session) : null;
  } catch {
    return null;
  }
}

export function saveSession(s: Session | null): void {
  if (s) sessionStorage.setItem(STORAGE_KEY, JSON.stringify(s));
  else sessionStorage.removeItem(STORAGE_KEY);
}

async function post<T>(path: string, body: unknown, headers: Record<string, string>): Promise<T> {
  let res: Response;
  try {
    res = await fetch(path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  } catch {
    throw new ApiError(0, 'NETWORK', 'the service cannot be reached');
  }
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : {};
  } catch {
    parsed = {};
  }
  if (!res.ok) {
    // `code` is the HTTP status, `status` its name (NOT_FOUND, INVALID_ARGUMENT, ...).
    const e = (parsed as { error?: { status?: string; message?: string; details?: ErrorDetail[] } }).error;
    throw new ApiError(res.status, e?.status ?? 'ERROR', e?.message ?? `HTTP ${res.status}`, e?.details ?? []);
  }
  return parsed as T;
}

/** An admin operation (admin sessions only). */
export function admin<T = any>(session: Session, operation: string, body: unknown): Promise<T> {
  return post<T>(`/admin/v1/${operation}`, body, { authorization: `Bearer ${session.secret}` });
}

/** A /v1 operation with a management key: the session's own, or the one issued for the admin. */
export async function v1<T = any>(session: Session, operation: string, body: Record<string, unknown>, onSession?: (s: Session) => void): Promise<T> {
  const key = await managementKey(session, onSession);
  return post<T>(`/v1/${operation}`, { projectId: session.projectId, ...body }, { 'x-api-key': key });
}

/** A /v1 operation with any key the caller gives (e.g. a LOG_EVENTS key). */
export function v1WithKey<T = any>(key: string, operation: string, body: unknown): Promise<T> {
  return post<T>(`/v1/${operation}`, body, { 'x-api-key': key });
}

/** Keys being issued, per project: the calls of one page share one key. */
const issuing = new Map<string, Promise<{ keyId: string; key: string }>>();

async function managementKey(session: Session, onSession?: (s: Session) => void): Promise<string> {
  if (session.mode === 'key') return session.secret;
  const projectId = session.projectId;
  const known = loadSession()?.projectKeys[projectId] ?? session.projectKeys[projectId];
  if (known) return known.key;
  // An admin works on a project through a management key of its own, issued once per project
  // and session, so that every /v1 change is made (and logged) exactly as a script's would be.
  let pending = issuing.get(projectId);
  if (!pending) {
    pending = admin<{ apiKey: { keyId: string }; key: string }>(session, 'CreateApiKey', {
      projectId,
      permissions: ['TREATMENT_MANAGEMENT'],
      description: `web console session of ${session.operator}`,
    }).then((made) => {
      const entry = { keyId: made.apiKey.keyId, key: made.key };
      const stored = loadSession() ?? session;
      const next = { ...stored, projectKeys: { ...stored.projectKeys, [projectId]: entry } };
      saveSession(next);
      onSession?.(next);
      return entry;
    });
    issuing.set(projectId, pending);
    void pending.catch(() => undefined).finally(() => issuing.delete(projectId));
  }
  return (await pending).key;
}

/** Sign-out: the admin's session keys are revoked, then the secret is forgotten. */
export async function signOut(session: Session): Promise<void> {
  if (session.mode === 'admin') {
    const keys = loadSession()?.projectKeys ?? session.projectKeys;
    await Promise.all(Object.entries(keys).map(([projectId, k]) => admin(session, 'RevokeApiKey', { projectId, keyId: k.keyId }).catch(() => undefined)));
  }
  saveSession(null);
}

/** Every management change made here says so. */
export function stamp(session: Session): { lastModifiedBy: string; modificationSource: 'TDS_CONSOLE' } {
  return { lastModifiedBy: session.operator, modificationSource: 'TDS_CONSOLE' };
}
