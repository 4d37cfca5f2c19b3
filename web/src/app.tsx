// The console: sign-in, then the navigation and the page of the current path. What a role may do is
// the API's to decide; the console hides what the role cannot do and never relies on hiding.
import { Provider, useQuery } from '@urql/preact';
import { useEffect, useMemo } from 'preact/hooks';
import { Link, Route, Switch, useLocation } from 'wouter-preact';
import { createConsoleClient } from './client.js';
import { graphql, type ResultOf } from './graphql.js';
import { AuditPage } from './pages/audit.js';
import { BreakGlassPage } from './pages/break-glass.js';
import { ClusterPage } from './pages/cluster.js';
import { JobPage } from './pages/job.js';
import { JobsPage } from './pages/jobs.js';
import { OverviewPage } from './pages/overview.js';
import { PoliciesPage } from './pages/policies.js';
import { QuotaRequestsPage } from './pages/quota-requests.js';
import { SignInPage } from './pages/sign-in.js';
import { SubmitPage } from './pages/submit.js';
import { UsagePage } from './pages/usage.js';
import { credential, signOut } from './session.js';

export const ViewerQuery = graphql(`
  query ConsoleViewer {
    viewer {
      name
      email
      isPlatformAdmin
      memberships { role tenant { id slug name } }
    }
  }
`);
export type Viewer = ResultOf<typeof ViewerQuery>['viewer'];

export function App() {
  const bearer = credential.value;
  const session = useMemo(() => (bearer ? createConsoleClient(bearer) : null), [bearer]);
  useEffect(() => () => session?.close(), [session]);
  if (!session) return <SignInPage />;
  return (
    <Provider value={session.client}>
      <Shell />
    </Provider>
  );
}

function Shell() {
  const [{ data, error, fetching }] = useQuery({ query: ViewerQuery });
  const [location] = useLocation();
  if (fetching && !data) return <p class="loading">Loading…</p>;
  if (error && !data) return <p role="alert">{error.message}</p>;
  const viewer = data!.viewer;
  const membership = viewer.memberships[0];
  const links: [string, string][] = [
    ['/', 'Overview'],
    ['/jobs', 'Jobs'],
    ...(membership && membership.role !== 'VIEWER' ? ([['/submit', 'Submit']] as [string, string][]) : []),
    ['/usage', 'Usage'],
    ['/quota-requests', 'Quota requests'],
    ...(viewer.isPlatformAdmin || (membership && ['TENANT_ADMIN', 'AUDITOR'].includes(membership.role))
      ? ([['/audit', 'Audit']] as [string, string][])
      : []),
    ...(viewer.isPlatformAdmin
      ? ([
          ['/cluster', 'Cluster'],
          ['/policies', 'Policies'],
          ['/break-glass', 'Break-glass'],
        ] as [string, string][])
      : []),
  ];
  return (
    <div class="shell">
      <header>
        <strong class="brand">Fairway</strong>
        <nav aria-label="Main">
          {links.map(([href, label]) => (
            <Link key={href} href={href} aria-current={location === href ? 'page' : undefined}>
              {label}
            </Link>
          ))}
        </nav>
        <span class="who">
          {viewer.name}
          {membership ? ` · ${membership.tenant.name}` : ''}
        </span>
        <button type="button" onClick={() => signOut()}>
          Sign out
        </button>
      </header>
      <main>
        <Switch>
          <Route path="/">{() => <OverviewPage viewer={viewer} />}</Route>
          <Route path="/jobs">{() => <JobsPage viewer={viewer} />}</Route>
          <Route path="/jobs/:id">{(params) => <JobPage id={decodeURIComponent(params.id)} />}</Route>
          <Route path="/submit">{() => <SubmitPage viewer={viewer} />}</Route>
          <Route path="/usage">{() => <UsagePage viewer={viewer} />}</Route>
          <Route path="/quota-requests">{() => <QuotaRequestsPage viewer={viewer} />}</Route>
          <Route path="/audit">{() => <AuditPage viewer={viewer} />}</Route>
          <Route path="/cluster">{() => <ClusterPage />}</Route>
          <Route path="/policies">{() => <PoliciesPage />}</Route>
          <Route path="/break-glass">{() => <BreakGlassPage viewer={viewer} />}</Route>
          <Route>
            <h1>Not found</h1>
          </Route>
        </Switch>
      </main>
    </div>
  );
}
