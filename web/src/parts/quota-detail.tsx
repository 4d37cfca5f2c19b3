// One quota request followed: what was asked and why, the queue's quota now, its history (requested,
// decided with the note, applied with the nominal before, ended), and what the viewer may do with it:
// platform admins approve or reject a PENDING one with a comment; the tenant's admins withdraw one that
// has not applied. Another tenant's request is "not found", nothing more.
import { useMutation, useQuery } from '@urql/preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { graphql } from '../graphql.js';
import { gpus, when } from './format.js';
import { problemOf } from './problem.js';
import { STATUS_WORDS, Status } from './quota-shared.js';

export const QuotaRequestQuery = graphql(`
  query ConsoleQuotaRequest($id: ID!) {
    quotaRequest(id: $id) {
      id status flavor resource nominal previousNominal startsAt expiresAt justification createdAt
      requestedByName decidedByName decidedAt decisionNote appliedAt endedAt
      tenant { id name }
      queue { id name quotas { flavor resource nominal } }
    }
  }
`);
const Approve = graphql(`
  mutation ConsoleApproveQuota($id: ID!, $note: String) { approveQuotaRequest(id: $id, note: $note) { id status } }
`);
const Reject = graphql(`
  mutation ConsoleRejectQuota($id: ID!, $note: String!) { rejectQuotaRequest(id: $id, note: $note) { id status } }
`);
const Cancel = graphql(`mutation ConsoleCancelQuota($id: ID!) { cancelQuotaRequest(id: $id) { id status } }`);

/** Approve or reject with a comment (a rejection must say why: the API refuses an empty one). */
export function Decide({ id, label, onDone }: { id: string; label: string; onDone: () => void }) {
  const [note, setNote] = useState('');
  const [problem, setProblem] = useState<string | null>(null);
  const [approveState, approve] = useMutation(Approve);
  const [rejectState, reject] = useMutation(Reject);
  const busy = approveState.fetching || rejectState.fetching;
  const run = async (verb: 'approve' | 'reject') => {
    setProblem(null);
    const r = verb === 'approve' ? await approve({ id, note: note || null }) : await reject({ id, note });
    if (r.error) return setProblem(problemOf(r.error));
    setNote('');
    onDone();
  };
  return (
    <div class="decide">
      <label>
        Comment on {label}
        <textarea rows={2} maxLength={2000} value={note} onInput={(e) => setNote(e.currentTarget.value)} />
      </label>
      <div class="actions">
        <button type="button" disabled={busy} onClick={() => void run('approve')}>
          Approve
        </button>
        <button type="button" disabled={busy} onClick={() => void run('reject')}>
          Reject
        </button>
      </div>
      {problem && <p role="alert">{problem}</p>}
    </div>
  );
}

export function QuotaRequestDetail(props: {
  id: string;
  canDecide: boolean;
  /** Tenant admin of this tenant id (withdraws). */
  adminOf: string | null;
  version: number;
  onChange: () => void;
  onClose: () => void;
}) {
  const [{ data, error, fetching }, refetch] = useQuery({
    query: QuotaRequestQuery,
    variables: { id: props.id },
  });
  useEffect(() => {
    if (props.version) refetch({ requestPolicy: 'network-only' });
  }, [props.version]);
  const [cancelState, cancel] = useMutation(Cancel);
  const [problem, setProblem] = useState<string | null>(null);
  // Followed from a list: focus moves to it (keyboard and screen-reader users land on what they chose).
  const heading = useRef<HTMLHeadingElement>(null);
  const shown = data?.quotaRequest.id ?? (error ? 'missing' : null);
  useEffect(() => heading.current?.focus(), [props.id, shown]);
  const close = (
    <button type="button" onClick={props.onClose}>
      Close request
    </button>
  );
  const notFound = error?.graphQLErrors.some((e) =>
    ['NOT_FOUND', 'BAD_USER_INPUT'].includes(String(e.extensions?.code)),
  );
  if (notFound)
    return (
      <section class="followed" aria-labelledby="quota-followed">
        <h2 id="quota-followed" ref={heading} tabIndex={-1}>
          Request not found
        </h2>
        {close}
      </section>
    );
  if (error && !data) return <p role="alert">{problemOf(error)}</p>;
  const r = data?.quotaRequest;
  if (!r) return fetching ? <p class="loading">Loading…</p> : null;
  const now = r.queue.quotas.find((q) => q.flavor === r.flavor && q.resource === r.resource)?.nominal;
  const cancellable = props.adminOf === r.tenant.id && (r.status === 'PENDING' || r.status === 'APPROVED');
  const onCancel = async () => {
    setProblem(null);
    const res = await cancel({ id: r.id });
    if (res.error) return setProblem(problemOf(res.error));
    props.onChange();
  };
  const label = `${r.queue.name} ${r.flavor} to ${gpus(r.nominal)}`;
  return (
    <section class="followed" aria-labelledby="quota-followed">
      <h2 id="quota-followed" ref={heading} tabIndex={-1}>
        Request: {label}
      </h2>
      <p>
        <Status status={r.status} /> — {STATUS_WORDS[r.status]}
      </p>
      <dl class="facts">
        <dt>Tenant</dt>
        <dd>{r.tenant.name}</dd>
        <dt>Queue</dt>
        <dd>{r.queue.name}</dd>
        <dt>Asked</dt>
        <dd>
          {r.resource} nominal on {r.flavor}: {gpus(r.nominal)}
        </dd>
        <dt>Queue's nominal now</dt>
        <dd>{gpus(now ?? 0)}</dd>
        <dt>Window</dt>
        <dd>
          from {r.startsAt ? when(r.startsAt) : 'approval'}
          {r.expiresAt ? ` until ${when(r.expiresAt)}` : ', for good'}
        </dd>
        <dt>Reason</dt>
        <dd class="wrap">{r.justification}</dd>
      </dl>
      <h3>History</h3>
      <ol class="history">
        <li>
          {when(r.createdAt)}: requested by {r.requestedByName ?? 'someone no longer in the tenant'}
        </li>
        {r.decidedAt && (
          <li>
            {when(r.decidedAt)}: {r.status === 'REJECTED' ? 'rejected' : 'approved'} by{' '}
            {r.decidedByName ?? 'a platform admin'}
            {r.decisionNote ? ` — “${r.decisionNote}”` : ''}
          </li>
        )}
        {r.appliedAt && (
          <li>
            {when(r.appliedAt)}: applied, nominal {gpus(r.previousNominal)} → {gpus(r.nominal)}
          </li>
        )}
        {r.endedAt && (
          <li>
            {when(r.endedAt)}: {r.status === 'EXPIRED' ? 'expired' : 'withdrawn'}
          </li>
        )}
      </ol>
      {props.canDecide && r.status === 'PENDING' && (
        <Decide id={r.id} label={label} onDone={props.onChange} />
      )}
      {cancellable && (
        <button type="button" disabled={cancelState.fetching} onClick={() => void onCancel()}>
          Withdraw request
        </button>
      )}
      {problem && <p role="alert">{problem}</p>}
      {close}
    </section>
  );
}
