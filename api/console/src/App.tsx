import { useEffect, useState } from 'react';
import { admin, ApiError, loadSession, saveSession, signOut, v1, type Session } from './api';
import { ErrorBanner, Field, useAction, useLoad } from './ui';
import type { PageProps } from './page-props';
import { ProjectsPage } from './pages/Projects';
import { CataloguePage } from './pages/Catalogue';
import { TreatmentsPage } from './pages/Treatments';
import { InspectorPage } from './pages/Inspector';
import { OperationsPage } from './pages/Operations';
import { ReportsPage } from './pages/Reports';

const PAGES = [
  { slug: 'projects', title: 'Projects and keys', adminOnly: true },
  { slug: 'catalogue', title: 'Catalogue' },
  { slug: 'treatments', title: 'Treatments' },
  { slug: 'inspector', title: 'User inspector' },
  { slug: 'reports', title: 'Reports' },
  { slug: 'operations', title: 'Operations' },
] as const;

function currentPath(): string[] {
  return window.location.pathname
    .replace(/^\/console\/?/, '')
    .split('/')
    .filter(Boolean)
    .map(decodeURIComponent);
}

export function App() {
  const [session, setSessionState] = useState<Session | null>(() => loadSession());
  const [path, setPath] = useState<string[]>(currentPath);
  useEffect(() => {
    const onPop = () => setPath(currentPath());
    window.addEventListener('popstate', onPop);
    return () => window.removeEventListener('popstate', onPop);
  }, []);
  const navigate = (to: string) => {
    window.history.pushState(null, '', `/console/${to}`);
    setPath(currentPath());
    window.scrollTo(0, 0);
    // Keyboard and screen-reader users land on the new page's content, not back at the top bar.
    window.setTimeout(() => document.getElementById('main')?.focus(), 0);
  };
  const setSession = (s: Session | null) => {
    saveSession(s);
    setSessionState(s);
  };
  const pages = PAGES.filter((p) => !('adminOnly' in p) || session?.mode === 'admin');
  const slug = pages.some((p) => p.slug === path[0]) ? path[0] : pages[0].slug;
  const title = session ? pages.find((p) => p.slug === slug)!.title : 'Sign in';
  useTitle(title);
  if (!session)
    return (
      <SignIn
        onSignedIn={(s) => {
          setSession(s);
          navigate(s.mode === 'admin' ? 'projects' : 'treatments');
        }}
      />
    );

  const props: PageProps = { session, setSession, path: path.slice(1), navigate };
  return (
    <div className="shell">
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="top">
        <span className="brand">TDS console</span>
        <nav aria-label="Pages">
          <ul>
            {pages.map((p) => (
              <li key={p.slug}>
                <a
                  href={`/console/${p.slug}`}
                  aria-current={p.slug === slug ? 'page' : undefined}
                  onClick={(e) => {
                    e.preventDefault();
                    navigate(p.slug);
                  }}
                >
                  {p.title}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <div className="who">
          {session.mode === 'admin' ? (
            <ProjectPicker session={session} setSession={setSession} />
          ) : (
            <span>
              Project <strong>{session.projectId}</strong>
            </span>
          )}
          <span className="operator" title="Changes are recorded under this name">
            {session.operator} ({session.mode === 'admin' ? 'admin' : 'management key'})
          </span>
          <button
            type="button"
            onClick={() => {
              void signOut(session).then(() => {
                setSession(null);
                window.history.pushState(null, '', '/console/');
              });
            }}
          >
            Sign out
          </button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        <h1>{title}</h1>
        {slug === 'projects' && <ProjectsPage {...props} />}
        {slug === 'catalogue' && <CataloguePage key={session.projectId} {...props} />}
        {slug === 'treatments' && <TreatmentsPage key={session.projectId} {...props} />}
        {slug === 'inspector' && <InspectorPage key={session.projectId} {...props} />}
        {slug === 'reports' && <ReportsPage key={session.projectId} {...props} />}
        {slug === 'operations' && <OperationsPage key={session.projectId} {...props} />}
      </main>
    </div>
  );
}

function useTitle(title: string) {
  useEffect(() => {
    document.title = `${title} · TDS console`;
  }, [title]);
}

function ProjectPicker({ session, setSession }: { session: Session; setSession: (s: Session) => void }) {
  const projects = useLoad(() => admin<{ projects: { projectId: string }[] }>(session, 'ListProjects', {}), [session.secret, session.projectId]);
  const ids = (projects.data?.projects ?? []).map((p) => p.projectId);
  if (session.projectId && !ids.includes(session.projectId)) ids.push(session.projectId);
  return (
    <label className="picker">
      Project{' '}
      <select value={session.projectId} onChange={(e) => setSession({ ...session, projectId: e.target.value })}>
        {!session.projectId && <option value="">(choose)</option>}
        {ids.map((id) => (
          <option key={id} value={id}>
            {id}
          </option>
        ))}
      </select>
    </label>
  );
}

function SignIn({ onSignedIn }: { onSignedIn: (s: Session) => void }) {
  const [mode, setMode] = useState<'key' | 'admin'>('key');
  const [secret, setSecret] = useState('');
  const [operator, setOperator] = useState('');
  const [projectId, setProjectId] = useState('');
  const action = useAction(async () => {
    if (!operator.trim())
      throw new ApiError(0, 'INVALID_ARGUMENT', 'enter your name: it is recorded with every change', [{ field: 'operator', description: 'required' }]);
    const s: Session = { mode, secret: secret.trim(), operator: operator.trim(), projectId: projectId.trim(), projectKeys: {} };
    if (mode === 'admin') {
      const { projects } = await admin<{ projects: { projectId: string }[] }>(s, 'ListProjects', {});
      if (!s.projectId || !projects.some((p) => p.projectId === s.projectId)) s.projectId = projects[0]?.projectId ?? '';
    } else {
      if (!s.projectId) throw new ApiError(0, 'INVALID_ARGUMENT', 'enter the project of the key', [{ field: 'projectId', description: 'required' }]);
      await v1(s, 'GetAllSurfaces', {});
    }
    onSignedIn(s);
  });
  return (
    <main id="main" className="signin">
      <h1>Treatment Delivery Service console</h1>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void action.go();
        }}
      >
        <fieldset>
          <legend>Sign in with</legend>
          <label className="inline">
            <input type="radio" name="mode" checked={mode === 'key'} onChange={() => setMode('key')} /> a TREATMENT_MANAGEMENT key (one project)
          </label>
          <label className="inline">
            <input type="radio" name="mode" checked={mode === 'admin'} onChange={() => setMode('admin')} /> the admin token (every project)
          </label>
        </fieldset>
        <Field
          label={mode === 'admin' ? 'Admin token' : 'API key'}
          hint="Kept in this tab's session storage only, forgotten when the tab closes or you sign out."
        >
          {(id, d) => (
            <input id={id} aria-describedby={d} type="password" autoComplete="off" required value={secret} onChange={(e) => setSecret(e.target.value)} />
          )}
        </Field>
        <Field label={mode === 'admin' ? 'Project (optional)' : 'Project id'} name="projectId" error={action.error}>
          {(id, d) => <input id={id} aria-describedby={d} value={projectId} required={mode === 'key'} onChange={(e) => setProjectId(e.target.value)} />}
        </Field>
        <Field label="Your name" name="operator" error={action.error} hint="Recorded as lastModifiedBy of every change you make here.">
          {(id, d) => <input id={id} aria-describedby={d} required autoComplete="name" value={operator} onChange={(e) => setOperator(e.target.value)} />}
        </Field>
        <ErrorBanner error={action.error} shownFields={['operator', 'projectId']} />
        <button type="submit" className="primary" disabled={action.busy}>
          {action.busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
