import { useState } from 'react';
import { admin, type Session } from '../api';
import type { PageProps } from '../page-props';
import { CopyButton, Empty, ErrorBanner, Field, formatTime, Loading, useAction, useLoad } from '../ui';

interface Project {
  projectId: string;
  displayName: string;
  deliveryEndpoint: 'BASE' | 'ALT';
  globalHoldoutPercentage: number;
  createTime: string;
}

export function ProjectsPage({ session, setSession }: PageProps) {
  const list = useLoad(() => admin<{ projects: Project[] }>(session, 'ListProjects', {}), [session.secret]);
  const selected = list.data?.projects.find((p) => p.projectId === session.projectId);
  return (
    <>
      <section aria-labelledby="projects-h">
        <h2 id="projects-h">Projects</h2>
        {list.loading && !list.data && <Loading />}
        <ErrorBanner error={list.error} />
        {list.data && list.data.projects.length === 0 && <Empty>No project yet: create the first one below.</Empty>}
        {list.data && list.data.projects.length > 0 && (
          <div className="table-wrap" tabIndex={0} role="region" aria-label="Table, scrolls sideways on narrow screens">
            <table>
              <thead>
                <tr>
                  <th scope="col">Project</th>
                  <th scope="col">Name</th>
                  <th scope="col">Delivery address</th>
                  <th scope="col">Global holdout</th>
                  <th scope="col">Created</th>
                  <th scope="col">
                    <span className="sr-only">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {list.data.projects.map((p) => (
                  <tr key={p.projectId} className={p.projectId === session.projectId ? 'selected' : undefined}>
                    <td>
                      <code>{p.projectId}</code>
                    </td>
                    <td>{p.displayName}</td>
                    <td>{p.deliveryEndpoint}</td>
                    <td>{p.globalHoldoutPercentage}%</td>
                    <td>{formatTime(p.createTime)}</td>
                    <td>
                      <button type="button" disabled={p.projectId === session.projectId} onClick={() => setSession({ ...session, projectId: p.projectId })}>
                        {p.projectId === session.projectId ? 'Selected' : 'Select'}
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        <CreateProject
          session={session}
          onCreated={(id) => {
            setSession({ ...session, projectId: id });
            list.reload();
          }}
        />
      </section>
      {selected && <ProjectDetail key={selected.projectId} session={session} project={selected} onChanged={list.reload} />}
    </>
  );
}

function CreateProject({ session, onCreated }: { session: Session; onCreated: (id: string) => void }) {
  const [projectId, setProjectId] = useState('');
  const [displayName, setDisplayName] = useState('');
  const [endpoint, setEndpoint] = useState<'BASE' | 'ALT'>('BASE');
  const [holdout, setHoldout] = useState('0');
  const action = useAction(async () => {
    await admin(session, 'CreateProject', {
      projectId,
      displayName: displayName || undefined,
      deliveryEndpoint: endpoint,
      globalHoldoutPercentage: Number(holdout),
    });
    setProjectId('');
    setDisplayName('');
    onCreated(projectId);
  });
  return (
    <form
      className="card"
      onSubmit={(e) => {
        e.preventDefault();
        void action.go();
      }}
    >
      <h3>Create a project</h3>
      <div className="row">
        <Field label="Project id" name="projectId" error={action.error}>
          {(id, d) => <input id={id} aria-describedby={d} required value={projectId} onChange={(e) => setProjectId(e.target.value)} />}
        </Field>
        <Field label="Display name" name="displayName" error={action.error}>
          {(id, d) => <input id={id} aria-describedby={d} value={displayName} onChange={(e) => setDisplayName(e.target.value)} />}
        </Field>
        <Field label="Delivery address" name="deliveryEndpoint" error={action.error}>
          {(id, d) => (
            <select id={id} aria-describedby={d} value={endpoint} onChange={(e) => setEndpoint(e.target.value as 'BASE' | 'ALT')}>
              <option value="BASE">BASE (PORT)</option>
              <option value="ALT">ALT (ALT_PORT)</option>
            </select>
          )}
        </Field>
        <Field label="Global holdout %" name="globalHoldoutPercentage" error={action.error}>
          {(id, d) => (
            <input id={id} aria-describedby={d} type="number" min={0} max={100} step={0.01} value={holdout} onChange={(e) => setHoldout(e.target.value)} />
          )}
        </Field>
      </div>
      <ErrorBanner error={action.error} shownFields={['projectId', 'displayName', 'deliveryEndpoint', 'globalHoldoutPercentage']} />
      <button type="submit" className="primary" disabled={action.busy}>
        Create project
      </button>
    </form>
  );
}

interface ApiKey {
  keyId: string;
  permissions: string[];
  description: string;
  createTime: string;
  revokeTime?: string;
}

function ProjectDetail({ session, project, onChanged }: { session: Session; project: Project; onChanged: () => void }) {
  const [endpoint, setEndpoint] = useState(project.deliveryEndpoint);
  const [holdout, setHoldout] = useState(String(project.globalHoldoutPercentage));
  const [saved, setSaved] = useState(false);
  const update = useAction(async () => {
    setSaved(false);
    await admin(session, 'UpdateProject', { projectId: project.projectId, deliveryEndpoint: endpoint, globalHoldoutPercentage: Number(holdout) });
    setSaved(true);
    onChanged();
  });
  const keys = useLoad(() => admin<{ apiKeys: ApiKey[] }>(session, 'ListApiKeys', { projectId: project.projectId }), [project.projectId]);
  const [perms, setPerms] = useState<string[]>(['TREATMENT_MANAGEMENT']);
  const [description, setDescription] = useState('');
  const [secret, setSecret] = useState<{ keyId: string; key: string } | null>(null);
  const create = useAction(async () => {
    const made = await admin<{ apiKey: ApiKey; key: string }>(session, 'CreateApiKey', {
      projectId: project.projectId,
      permissions: perms,
      description: description || undefined,
    });
    setSecret({ keyId: made.apiKey.keyId, key: made.key });
    setDescription('');
    keys.reload();
  });
  const revoke = useAction(async (keyId: string) => {
    await admin(session, 'RevokeApiKey', { projectId: project.projectId, keyId });
    keys.reload();
  });
  const togglePerm = (p: string) => setPerms((ps) => (ps.includes(p) ? ps.filter((x) => x !== p) : [...ps, p]));
  return (
    <section aria-labelledby="detail-h">
      <h2 id="detail-h">Project {project.projectId}</h2>
      <form
        className="card"
        onSubmit={(e) => {
          e.preventDefault();
          void update.go();
        }}
      >
        <h3>Delivery address and global holdout</h3>
        <div className="row">
          <Field label="Delivery address" name="deliveryEndpoint" error={update.error}>
            {(id, d) => (
              <select id={id} aria-describedby={d} value={endpoint} onChange={(e) => setEndpoint(e.target.value as 'BASE' | 'ALT')}>
                <option value="BASE">BASE (PORT)</option>
                <option value="ALT">ALT (ALT_PORT)</option>
              </select>
            )}
          </Field>
          <Field label="Global holdout %" name="globalHoldoutPercentage" error={update.error} hint="Users held out of every treatment (0–100).">
            {(id, d) => (
              <input id={id} aria-describedby={d} type="number" min={0} max={100} step={0.01} value={holdout} onChange={(e) => setHoldout(e.target.value)} />
            )}
          </Field>
        </div>
        <ErrorBanner error={update.error} shownFields={['deliveryEndpoint', 'globalHoldoutPercentage']} />
        <button type="submit" disabled={update.busy}>
          Save
        </button>{' '}
        {saved && <span role="status">Saved.</span>}
      </form>

      <h3>API keys</h3>
      {keys.loading && !keys.data && <Loading />}
      <ErrorBanner error={keys.error ?? revoke.error} />
      {keys.data && keys.data.apiKeys.length === 0 && <Empty>No key yet.</Empty>}
      {keys.data && keys.data.apiKeys.length > 0 && (
        <div className="table-wrap" tabIndex={0} role="region" aria-label="Table, scrolls sideways on narrow screens">
          <table>
            <thead>
              <tr>
                <th scope="col">Key id</th>
                <th scope="col">Permissions</th>
                <th scope="col">Description</th>
                <th scope="col">Created</th>
                <th scope="col">State</th>
                <th scope="col">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {keys.data.apiKeys.map((k) => (
                <tr key={k.keyId}>
                  <td>
                    <code>{k.keyId}</code>
                  </td>
                  <td>{k.permissions.join(', ')}</td>
                  <td>{k.description}</td>
                  <td>{formatTime(k.createTime)}</td>
                  <td>
                    {k.revokeTime ? (
                      <span className="badge status-archived">revoked {formatTime(k.revokeTime)}</span>
                    ) : (
                      <span className="badge status-live">active</span>
                    )}
                  </td>
                  <td>
                    {!k.revokeTime && (
                      <button
                        type="button"
                        className="danger"
                        disabled={revoke.busy}
                        aria-label={`Revoke key ${k.keyId}`}
                        onClick={() => {
                          if (window.confirm(`Revoke key ${k.keyId}? It stops working at once.`)) void revoke.go(k.keyId);
                        }}
                      >
                        Revoke
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <form
        className="card"
        onSubmit={(e) => {
          e.preventDefault();
          setSecret(null);
          void create.go();
        }}
      >
        <h3>Create a key</h3>
        <fieldset>
          <legend>Permissions</legend>
          {['DELIVERY', 'LOG_EVENTS', 'TREATMENT_MANAGEMENT'].map((p) => (
            <label className="inline" key={p}>
              <input type="checkbox" checked={perms.includes(p)} onChange={() => togglePerm(p)} /> {p}
            </label>
          ))}
          <div className="hint">LOG_EVENTS must be the only permission of its key.</div>
        </fieldset>
        <Field label="Description" name="description" error={create.error}>
          {(id, d) => <input id={id} aria-describedby={d} value={description} onChange={(e) => setDescription(e.target.value)} />}
        </Field>
        <ErrorBanner error={create.error} shownFields={['description']} />
        <button type="submit" className="primary" disabled={create.busy || perms.length === 0}>
          Create key
        </button>
        {secret && (
          <div className="secret" role="status">
            <p>
              Key <code>{secret.keyId}</code> created. Its secret is shown <strong>only now</strong>:
            </p>
            <code className="secret-value" data-testid="new-key-secret">
              {secret.key}
            </code>{' '}
            <CopyButton text={secret.key} label="Copy secret" />
          </div>
        )}
      </form>
    </section>
  );
}
