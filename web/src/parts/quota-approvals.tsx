// The platform admins' approvals queue: every tenant's PENDING requests, oldest first, each with its
// evidence (the reason given, the queue's use of that flavor now, the usage-history recommendation for
// that queue if there is one) and approve/reject with a comment. The API refuses a request's own maker.
import { useQuery } from '@urql/preact';
import { useEffect } from 'preact/hooks';
import { graphql } from '../graphql.js';
import { gpus, when } from './format.js';
import { problemOf } from './problem.js';
import { Decide } from './quota-detail.js';
import { QuotaRecommendations, RecommendationsTable } from './quota-file.js';

export const ApprovalsQuery = graphql(`
  query ConsoleQuotaApprovals {
    quotaRequests(status: PENDING, first: 100) {
      edges {
        node {
          id flavor resource nominal startsAt expiresAt justification createdAt requestedByName
          tenant { id name }
          queue { id name usage { flavor resource nominal used borrowed lent } }
        }
      }
      pageInfo { hasNextPage }
    }
  }
`);

export function ApprovalQueue(props: {
  version: number;
  onChange: () => void;
  onFollow: (id: string) => void;
}) {
  const [{ data, error }, refetch] = useQuery({ query: ApprovalsQuery });
  const [{ data: recs }, refetchRecs] = useQuery({ query: QuotaRecommendations, variables: { days: 14 } });
  useEffect(() => {
    if (!props.version) return;
    refetch({ requestPolicy: 'network-only' });
    refetchRecs({ requestPolicy: 'network-only' });
  }, [props.version]);
  const pending = data?.quotaRequests.edges.map((e) => e.node) ?? [];
  const recommendations = recs?.quotaRecommendations ?? [];
  return (
    <section aria-labelledby="quota-approvals">
      <h2 id="quota-approvals">Waiting for approval</h2>
      {error && !data && <p role="alert">{problemOf(error)}</p>}
      {data && pending.length === 0 && <p>No request is waiting.</p>}
      {pending.map((r) => {
        const label = `${r.tenant.name} ${r.queue.name} ${r.flavor} to ${gpus(r.nominal)}`;
        const use = r.queue.usage?.find((u) => u.flavor === r.flavor && u.resource === r.resource);
        const rec = recommendations.filter((x) => x.queue.id === r.queue.id);
        return (
          <article class="approval" key={r.id} aria-label={`Request ${label}`}>
            <h3>
              {r.tenant.name} · {r.queue.name}: {r.flavor} {r.resource} nominal {gpus(use?.nominal)} →{' '}
              {gpus(r.nominal)}
            </h3>
            <p>
              <small>
                {when(r.createdAt)} by {r.requestedByName ?? 'a former member'}; from{' '}
                {r.startsAt ? when(r.startsAt) : 'approval'}
                {r.expiresAt ? ` until ${when(r.expiresAt)}` : ', for good'}
              </small>
            </p>
            <p class="wrap">Reason: {r.justification}</p>
            <p>
              Now:{' '}
              {use
                ? `uses ${gpus(use.used)} of nominal ${gpus(use.nominal)}, borrows ${gpus(use.borrowed)}, lends ${gpus(use.lent)}`
                : 'no use of this flavor'}
              .
            </p>
            {rec.length > 0 && (
              <RecommendationsTable recommendations={rec} label={`Recommendation for ${r.queue.name}`} />
            )}
            <Decide id={r.id} label={label} onDone={props.onChange} />
            <button type="button" onClick={() => props.onFollow(r.id)}>
              Follow request {label}
            </button>
          </article>
        );
      })}
      {data?.quotaRequests.pageInfo.hasNextPage && (
        <p>More are waiting: decide these first, the next ones follow.</p>
      )}
    </section>
  );
}
