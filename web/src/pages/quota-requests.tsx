// Quota requests: a tenant's admins file one (from a usage-history recommendation or by hand), everyone
// in the tenant lists its requests and follows one (its evidence, history and decision); for platform
// admins the same page is the approvals queue of every tenant (approve or reject with a comment). Live:
// quotaRequestUpdates for platform admins, the tenant's QUOTA_REQUEST events for the rest; refetched
// after each mutation too. The API decides who may do what; the page only hides what a role cannot use.
import { useClient, useQuery } from '@urql/preact';
import { useEffect, useState } from 'preact/hooks';
import { useSearchParams } from 'wouter-preact';
import type { Viewer } from '../app.js';
import { graphql, type ResultOf } from '../graphql.js';
import { CopyAs } from '../parts/copy.js';
import { gpus, when } from '../parts/format.js';
import { problemOf } from '../parts/problem.js';
import { ApprovalQueue } from '../parts/quota-approvals.js';
import { QuotaRequestDetail } from '../parts/quota-detail.js';
import { FileRequest } from '../parts/quota-file.js';
import { Status, useQuotaLive } from '../parts/quota-shared.js';
import './quota-requests.css';

export const QuotaRequestsList = graphql(`
  query ConsoleQuotaRequests($tenantId: ID, $before: String) {
    quotaRequests(tenantId: $tenantId, last: 50, before: $before) {
      edges {
        node {
          id status flavor resource nominal createdAt justification requestedByName
          queue { id name }
          tenant { id name }
        }
      }
      pageInfo { hasPreviousPage startCursor }
    }
  }
`);
type Row = ResultOf<typeof QuotaRequestsList>['quotaRequests']['edges'][number]['node'];

export function QuotaRequestsPage({ viewer }: { viewer: Viewer }) {
  const membership = viewer.memberships[0];
  const role = membership?.role;
  const [params, setParams] = useSearchParams();
  const followed = params.get('request');
  const [version, setVersion] = useState(0);
  const bump = () => setVersion((v) => v + 1);
  useQuotaLive(viewer, bump);
  const follow = (id: string | null) => setParams(id ? { request: id } : {});
  // Platform admins list every tenant's; everyone else their tenant's (the API holds them to it).
  const tenantId = viewer.isPlatformAdmin ? null : (membership?.tenant.id ?? null);
  if (!membership && !viewer.isPlatformAdmin)
    return (
      <section>
        <h1>Quota requests</h1>
        <p>You belong to no tenant yet.</p>
      </section>
    );
  const canFile = role === 'TENANT_ADMIN';
  const canReadRecommendations = role === 'TENANT_ADMIN' || role === 'AUDITOR';
  return (
    <section class="quota-requests">
      <h1>Quota requests</h1>
      {followed && (
        <QuotaRequestDetail
          id={followed}
          canDecide={viewer.isPlatformAdmin}
          adminOf={canFile ? membership!.tenant.id : null}
          version={version}
          onChange={bump}
          onClose={() => follow(null)}
        />
      )}
      {viewer.isPlatformAdmin && <ApprovalQueue version={version} onChange={bump} onFollow={follow} />}
      {membership && (canFile || canReadRecommendations) ? (
        <FileRequest
          slug={membership.tenant.slug}
          canFile={canFile}
          canReadRecommendations={canReadRecommendations}
          version={version}
          onFiled={(id) => {
            bump();
            follow(id);
          }}
        />
      ) : (
        membership && <p>Quota requests are filed by your tenant's admins; here you can follow them.</p>
      )}
      <RequestList
        tenantId={tenantId}
        showTenant={viewer.isPlatformAdmin}
        version={version}
        onFollow={follow}
      />
      <CopyAs document={QuotaRequestsList} variables={{ tenantId }} cli="npx fairway quota requests" />
    </section>
  );
}

/** The requests, newest first: the newest page live, older pages on demand ("Load older"). */
function RequestList(props: {
  tenantId: string | null;
  showTenant: boolean;
  version: number;
  onFollow: (id: string) => void;
}) {
  const client = useClient();
  const [{ data, error }, refetch] = useQuery({
    query: QuotaRequestsList,
    variables: { tenantId: props.tenantId, before: null },
  });
  const [older, setOlder] = useState<{ rows: Row[]; cursor: string | null; more: boolean } | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  useEffect(() => {
    if (props.version) refetch({ requestPolicy: 'network-only' });
  }, [props.version]);
  const page = data?.quotaRequests;
  const newest = (page?.edges ?? []).map((e) => e.node).reverse();
  const ids = new Set(newest.map((r) => r.id));
  const rows = [...newest, ...(older?.rows ?? []).filter((r) => !ids.has(r.id))];
  const more = older ? older.more : !!page?.pageInfo.hasPreviousPage;
  const loadOlder = async () => {
    const before = older ? older.cursor : (page?.pageInfo.startCursor ?? null);
    const r = await client
      .query(QuotaRequestsList, { tenantId: props.tenantId, before }, { requestPolicy: 'network-only' })
      .toPromise();
    if (r.error || !r.data) return setProblem(problemOf(r.error) ?? 'Nothing more.');
    const got = r.data.quotaRequests;
    setOlder({
      rows: [...(older?.rows ?? []), ...got.edges.map((e) => e.node).reverse()],
      cursor: got.pageInfo.startCursor ?? null,
      more: got.pageInfo.hasPreviousPage,
    });
  };
  return (
    <section aria-labelledby="quota-list">
      <h2 id="quota-list">{props.showTenant ? 'All requests' : 'Requests'}</h2>
      {error && !data && <p role="alert">{problemOf(error)}</p>}
      {data && rows.length === 0 && <p>No quota request yet.</p>}
      {rows.length > 0 && (
        <table aria-label="Quota requests">
          <thead>
            <tr>
              <th scope="col">Requested</th>
              {props.showTenant && <th scope="col">Tenant</th>}
              <th scope="col">Queue</th>
              <th scope="col">Flavor</th>
              <th scope="col">Nominal asked</th>
              <th scope="col">Status</th>
              <th scope="col">By</th>
              <th scope="col">Reason</th>
              <th scope="col">Follow</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.id}>
                <td>{when(r.createdAt)}</td>
                {props.showTenant && <td>{r.tenant.name}</td>}
                <td>{r.queue.name}</td>
                <td>{r.flavor}</td>
                <td>
                  {gpus(r.nominal)} {r.resource === 'GPU' ? '' : r.resource}
                </td>
                <td>
                  <Status status={r.status} />
                </td>
                <td>{r.requestedByName ?? '—'}</td>
                <td title={r.justification}>{r.justification}</td>
                <td>
                  <button type="button" onClick={() => props.onFollow(r.id)}>
                    Follow <span class="visually-hidden">the request of {when(r.createdAt)}</span>
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {more && (
        <button type="button" onClick={() => void loadOlder()}>
          Load older
        </button>
      )}
      {problem && <p role="alert">{problem}</p>}
    </section>
  );
}
