// The quota command's operations (typed by gql.tada) and how a request is printed.
import { need } from './args.js';
import { type CliContext, CliError, EXIT } from './context.js';
import { gpus } from './format.js';
import { graphql, type ResultOf, type VariablesOf } from './operations.js';

export const STATUS_WORDS: Record<string, string> = {
  PENDING: 'waiting for a platform admin',
  APPROVED: 'approved, applies at its start',
  ACTIVE: 'approved and applied',
  EXPIRED: 'ended at its expiry',
  REJECTED: 'refused',
  CANCELLED: 'withdrawn',
};
export const QuotaRequestFields = graphql(`
  fragment QuotaRequestFields on QuotaRequest @_unmask {
    id
    status
    flavor
    resource
    nominal
    previousNominal
    startsAt
    expiresAt
    justification
    createdAt
    requestedByName
    decidedByName
    decidedAt
    decisionNote
    appliedAt
    endedAt
    tenant { id slug }
    queue { id name quotas { flavor resource nominal } }
  }
`);

export const Recommendations = graphql(`
  query QuotaRecommendations($days: Int!) {
    quotaRecommendations(days: $days) {
      kind
      suggestion
      currentNominalGpus
      suggestedNominalGpus
      evidence
      queue { id name tenant { slug } }
    }
  }
`);

export const QuotaRequests = graphql(
  `
  query QuotaRequests($tenantId: ID, $status: QuotaRequestStatus, $last: Int!, $before: String) {
    quotaRequests(tenantId: $tenantId, status: $status, last: $last, before: $before) {
      edges { node { ...QuotaRequestFields } }
      pageInfo { hasPreviousPage startCursor }
    }
  }
`,
  [QuotaRequestFields],
);

export const GetQuotaRequest = graphql(
  `
  query GetQuotaRequest($id: ID!) {
    quotaRequest(id: $id) { ...QuotaRequestFields }
  }
`,
  [QuotaRequestFields],
);

/** The tenant's queues with their quotas, and the known flavors: `file` names them. */
export const QuotaTargets = graphql(`
  query QuotaTargets($slug: String!) {
    tenant(slug: $slug) { id slug queues { id name quotas { flavor resource nominal } } }
    flavors { name }
  }
`);

export const RequestQuotaChange = graphql(
  `
  mutation RequestQuotaChange($input: RequestQuotaChangeInput!) {
    requestQuotaChange(input: $input) { ...QuotaRequestFields }
  }
`,
  [QuotaRequestFields],
);

export const CancelQuotaRequest = graphql(
  `
  mutation CancelQuotaRequest($id: ID!) {
    cancelQuotaRequest(id: $id) { ...QuotaRequestFields }
  }
`,
  [QuotaRequestFields],
);

export const ApproveQuotaRequest = graphql(
  `
  mutation ApproveQuotaRequest($id: ID!, $note: String) {
    approveQuotaRequest(id: $id, note: $note) { ...QuotaRequestFields }
  }
`,
  [QuotaRequestFields],
);

export const RejectQuotaRequest = graphql(
  `
  mutation RejectQuotaRequest($id: ID!, $note: String!) {
    rejectQuotaRequest(id: $id, note: $note) { ...QuotaRequestFields }
  }
`,
  [QuotaRequestFields],
);

export type QuotaRequest = ResultOf<typeof QuotaRequestFields>;
export type Status = NonNullable<VariablesOf<typeof QuotaRequests>['status']>;
export const STATUSES = [
  'PENDING',
  'APPROVED',
  'ACTIVE',
  'EXPIRED',
  'REJECTED',
  'CANCELLED',
] as const satisfies readonly Status[];

/** Largest page the graph serves. */
export const PAGE = 100;

/** "24 GPU", "4000m CPU", "8192 MiB": an amount in its resource's unit. */
export function amount(n: number | null | undefined, resource: QuotaRequest['resource']): string {
  if (n == null) return '-';
  if (resource === 'CPU') return `${n}m CPU`;
  if (resource === 'MEMORY') return `${n} MiB`;
  return `${gpus(n)} GPU`;
}

export const time = (iso: string | null | undefined) => (iso ? `${iso.slice(0, 19)}Z` : '-');

/** The queue's nominal on the request's flavor and resource now (0 when it has no such quota). */
export function nominalNow(r: Pick<QuotaRequest, 'queue' | 'flavor' | 'resource'>): number {
  return r.queue.quotas.find((q) => q.flavor === r.flavor && q.resource === r.resource)?.nominal ?? 0;
}

/** "request ID  aurora-training h100-80g → 24 GPU: PENDING (waiting for a platform admin)" */
export function summary(r: QuotaRequest): string {
  return `request ${r.id}  ${r.queue.name} ${r.flavor} → ${amount(r.nominal, r.resource)}: ${r.status} (${STATUS_WORDS[r.status] ?? r.status})`;
}

/** A QuotaRequest ID (base64 of `QuotaRequest:…`); anything else is refused before it is sent. */
export function requestId(value: string | undefined): string {
  const id = need(value, 'ID');
  if (
    !/^[A-Za-z0-9+/]+=*$/.test(id) ||
    !Buffer.from(id, 'base64').toString('utf8').startsWith('QuotaRequest:')
  )
    throw new CliError(
      `'${id}' is not a quota request's ID (as 'fairway quota requests' prints)`,
      EXIT.USAGE,
    );
  return id;
}

export function isoFlag(value: string | undefined, flag: string): string | undefined {
  if (value === undefined) return undefined;
  const ms = Date.parse(/^\d{4}-\d{2}-\d{2}$/.test(value) ? `${value}T00:00:00Z` : value);
  if (Number.isNaN(ms))
    throw new CliError(`${flag} must be a date (YYYY-MM-DD) or an ISO time, got '${value}'`, EXIT.USAGE);
  return new Date(ms).toISOString();
}

export function printOne(ctx: CliContext, r: QuotaRequest): void {
  if (ctx.json) {
    ctx.out(JSON.stringify(r));
    return;
  }
  ctx.out(summary(r));
}
