// Audit: the tenant's audit log (its admins and auditors; anyone else sees the API's refusal), newest
// first, live (auditEventRecorded), older pages on demand; platform admins also the platform's log
// (every event, refused attempts that belong to no tenant included). Columns: when, who, action,
// target, outcome; filtered by action text here in the page. Everything is rendered as text.
import { useClient, useSubscription } from '@urql/preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import type { Viewer } from '../app.js';
import { reconnects } from '../client.js';
import { graphql, type ResultOf } from '../graphql.js';
import { CopyAs } from '../parts/copy.js';
import { when } from '../parts/format.js';
import { problemOf } from '../parts/problem.js';
import './audit.css';

export const TenantAuditQuery = graphql(`
  query ConsoleAudit($tenantId: ID!, $before: String) {
    auditEvents(tenantId: $tenantId, last: 50, before: $before) {
      edges { node { id createdAt actorName actorEmail viaApiToken action targetType targetId outcome errorCode } }
      pageInfo { hasPreviousPage startCursor }
    }
  }
`);
export const PlatformAuditQuery = graphql(`
  query ConsolePlatformAudit($before: String) {
    platformAuditEvents(last: 50, before: $before) {
      edges { node { id createdAt actorName actorEmail viaApiToken action targetType targetId outcome errorCode } }
      pageInfo { hasPreviousPage startCursor }
    }
  }
`);
const Recorded = graphql(`
  subscription ConsoleAuditRecorded($tenantId: ID!) {
    auditEventRecorded(tenantId: $tenantId) {
      id createdAt actorName actorEmail viaApiToken action targetType targetId outcome errorCode
    }
  }
`);
type AuditRow = ResultOf<typeof TenantAuditQuery>['auditEvents']['edges'][number]['node'];
type Page = {
  edges: { node: AuditRow }[];
  pageInfo: { hasPreviousPage: boolean; startCursor?: string | null };
};
type Loader = (before: string | null) => Promise<{ page?: Page; problem?: string | null }>;

export function AuditPage({ viewer }: { viewer: Viewer }) {
  const client = useClient();
  const tenant = viewer.memberships[0]?.tenant;
  const [filter, setFilter] = useState('');
  const loadTenant: Loader = async (before) => {
    const r = await client
      .query(TenantAuditQuery, { tenantId: tenant!.id, before }, { requestPolicy: 'network-only' })
      .toPromise();
    return r.data ? { page: r.data.auditEvents } : { problem: problemOf(r.error) };
  };
  const loadPlatform: Loader = async (before) => {
    const r = await client
      .query(PlatformAuditQuery, { before }, { requestPolicy: 'network-only' })
      .toPromise();
    return r.data ? { page: r.data.platformAuditEvents } : { problem: problemOf(r.error) };
  };
  const copied = tenant
    ? { document: TenantAuditQuery, variables: { tenantId: tenant.id, before: null } }
    : { document: PlatformAuditQuery, variables: { before: null } };
  return (
    <section class="audit">
      <h1>Audit</h1>
      {!tenant && !viewer.isPlatformAdmin && <p>You belong to no tenant yet.</p>}
      <div class="filters">
        <label>
          Filter by action{' '}
          <input
            type="search"
            value={filter}
            placeholder="e.g. quotaRequest"
            onInput={(e) => setFilter(e.currentTarget.value)}
          />
        </label>
      </div>
      {tenant && (
        <AuditLog
          title={`${tenant.name}'s audit log`}
          label="Tenant audit events"
          load={loadTenant}
          liveTenantId={tenant.id}
          filter={filter}
        />
      )}
      {viewer.isPlatformAdmin && (
        <AuditLog
          title="Platform audit log"
          label="Platform audit events"
          load={loadPlatform}
          filter={filter}
        />
      )}
      <CopyAs
        document={copied.document}
        variables={copied.variables}
        cli={`npx fairway audit${tenant ? '' : ' --platform'}${filter.trim() ? ` --action '${filter.trim().replace(/'/g, `'\\''`)}'` : ''}`}
      />
    </section>
  );
}

function AuditLog(props: {
  title: string;
  label: string;
  load: Loader;
  liveTenantId?: string;
  filter: string;
}) {
  const [rows, setRows] = useState<AuditRow[]>([]);
  const [loaded, setLoaded] = useState(false);
  const [more, setMore] = useState<{ cursor: string | null; has: boolean }>({ cursor: null, has: false });
  const [problem, setProblem] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  /** New events first, no event twice. */
  const merge = (fresh: AuditRow[], atEnd: boolean) =>
    setRows((old) => {
      const ids = new Set(fresh.map((e) => e.id));
      const kept = old.filter((e) => !ids.has(e.id));
      return atEnd ? [...kept, ...fresh] : [...fresh, ...kept];
    });
  const newest = async (first: boolean) => {
    const { page, problem: p } = await props.load(null);
    setLoaded(true);
    if (!page) return setProblem(p ?? 'The audit log could not be read.');
    setProblem(null);
    merge(page.edges.map((e) => e.node).reverse(), false);
    if (first) setMore({ cursor: page.pageInfo.startCursor ?? null, has: page.pageInfo.hasPreviousPage });
  };
  useEffect(() => void newest(true), []);
  const older = async () => {
    setBusy(true);
    const { page, problem: p } = await props.load(more.cursor);
    setBusy(false);
    if (!page) return setProblem(p ?? 'The audit log could not be read.');
    merge(page.edges.map((e) => e.node).reverse(), true);
    setMore({ cursor: page.pageInfo.startCursor ?? null, has: page.pageInfo.hasPreviousPage });
  };
  const live = !!props.liveTenantId && loaded && !problem;
  useSubscription(
    { query: Recorded, variables: { tenantId: props.liveTenantId ?? '' }, pause: !live },
    (_prev, next) => {
      merge([next.auditEventRecorded], false);
      return next;
    },
  );
  // Events committed while the socket was down: the newest page again.
  const seen = useRef(reconnects.value);
  useEffect(() => {
    if (reconnects.value === seen.current) return;
    seen.current = reconnects.value;
    if (loaded) void newest(false);
  });

  const needle = props.filter.trim().toLowerCase();
  const shown = needle ? rows.filter((e) => e.action.toLowerCase().includes(needle)) : rows;
  return (
    <section aria-label={props.title}>
      <h2>{props.title}</h2>
      {problem && <p role="alert">{problem}</p>}
      {!loaded && <p class="loading">Loading…</p>}
      {loaded && !problem && (
        <>
          <p>
            <small>
              {shown.length} of {rows.length} loaded event(s)
              {needle ? ` matching “${props.filter.trim()}”` : ''}
              {more.has ? '; older ones not loaded yet' : ''}.
            </small>
          </p>
          <table aria-label={props.label}>
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Who</th>
                <th scope="col">Action</th>
                <th scope="col">Target</th>
                <th scope="col">Outcome</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((e) => (
                <tr key={e.id}>
                  <td>{when(e.createdAt)}</td>
                  <td title={e.actorEmail ?? undefined}>
                    {e.actorName ?? e.actorEmail ?? '—'}
                    {e.viaApiToken ? ' (API token)' : ''}
                  </td>
                  <td>{e.action}</td>
                  <td>
                    <Target type={e.targetType} id={e.targetId} />
                  </td>
                  <td>
                    <span class={`outcome ${e.outcome.toLowerCase()}`}>{e.outcome}</span>
                    {e.errorCode ? ` (${e.errorCode})` : ''}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {more.has && (
            <button type="button" disabled={busy} onClick={() => void older()}>
              Load more
            </button>
          )}
        </>
      )}
    </section>
  );
}

/** What an event changed; a quota request links to where it is followed. */
function Target({ type, id }: { type?: string | null; id?: string | null }) {
  if (!type && !id) return <>—</>;
  if (type === 'QuotaRequest' && id)
    return <Link href={`/quota-requests?request=${encodeURIComponent(id)}`}>Quota request {id}</Link>;
  return (
    <>
      {type ?? ''} {id ?? ''}
    </>
  );
}
