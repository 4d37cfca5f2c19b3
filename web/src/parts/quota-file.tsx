// Filing a quota request: the recommendations from the queues' usage history (tenant admins and
// auditors may read them), each with its numbers and, for those who may file (tenant admins), a
// button that prefills the form from it; and the form itself (queue, flavor, nominal, optional start
// and expiry, reason). The API decides: a refusal is shown as it says.
import { useMutation, useQuery } from '@urql/preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { graphql, type ResultOf } from '../graphql.js';
import { gpus } from './format.js';
import { NamedOptions } from './options.js';
import { problemOf } from './problem.js';

export const QuotaFileData = graphql(`
  query ConsoleQuotaFileData($slug: String!) {
    tenant(slug: $slug) { id queues { id name quotas { flavor resource nominal } } }
    flavors { name kind slicesPerGpu }
  }
`);
export const QuotaRecommendations = graphql(`
  query ConsoleQuotaRecommendations($days: Int!) {
    quotaRecommendations(days: $days) {
      kind suggestion currentNominalGpus suggestedNominalGpus evidence
      queue { id name tenant { name } }
    }
  }
`);
const RequestQuotaChange = graphql(`
  mutation ConsoleRequestQuota($input: RequestQuotaChangeInput!) { requestQuotaChange(input: $input) { id status } }
`);
export type Recommendation = ResultOf<typeof QuotaRecommendations>['quotaRecommendations'][number];
type FileData = ResultOf<typeof QuotaFileData>;

const KIND_WORDS: Record<string, string> = {
  CONSTANT_BORROWER: 'borrows nearly all the time',
  UNDER_USED: 'uses much less than its nominal',
};
const SUGGESTION_WORDS: Record<string, string> = {
  DEDICATED_POOL: 'more nominal or a dedicated pool',
  SHARED_POOL: 'less nominal, use a shared pool',
};

export function RecommendationsTable(props: {
  recommendations: readonly Recommendation[];
  label?: string;
  showTenant?: boolean;
  onUse?: (r: Recommendation) => void;
}) {
  if (props.recommendations.length === 0)
    return <p>No recommendation: every queue's use fits its nominal quota.</p>;
  return (
    <table aria-label={props.label ?? 'Recommendations'}>
      <thead>
        <tr>
          {props.showTenant && <th scope="col">Tenant</th>}
          <th scope="col">Queue</th>
          <th scope="col">Finding</th>
          <th scope="col">Suggestion</th>
          <th scope="col">GPUs now</th>
          <th scope="col">GPUs suggested</th>
          <th scope="col">Evidence</th>
          {props.onUse && <th scope="col">Request</th>}
        </tr>
      </thead>
      <tbody>
        {props.recommendations.map((r) => (
          <tr key={`${r.queue.id}-${r.kind}`}>
            {props.showTenant && <td>{r.queue.tenant.name}</td>}
            <td>{r.queue.name}</td>
            <td>{KIND_WORDS[r.kind] ?? r.kind}</td>
            <td>{SUGGESTION_WORDS[r.suggestion] ?? r.suggestion}</td>
            <td>{gpus(r.currentNominalGpus)}</td>
            <td>{gpus(r.suggestedNominalGpus)}</td>
            <td class="wrap">{r.evidence}</td>
            {props.onUse && (
              <td>
                <button type="button" onClick={() => props.onUse?.(r)}>
                  Prefill request for {r.queue.name}
                </button>
              </td>
            )}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

interface Form {
  queueId: string;
  flavor: string;
  nominal: string;
  startsAt: string;
  expiresAt: string;
  justification: string;
}
const EMPTY: Form = { queueId: '', flavor: '', nominal: '', startsAt: '', expiresAt: '', justification: '' };

/** The form a recommendation fills: the difference it suggests applied to one whole-GPU flavor of the queue. */
function fromRecommendation(r: Recommendation, data: FileData): Form {
  const queue = data.tenant.queues.find((q) => q.id === r.queue.id);
  const slices = (name: string) => data.flavors.find((f) => f.name === name)?.slicesPerGpu ?? 1;
  const lines = (queue?.quotas ?? []).filter((q) => q.resource === 'GPU');
  const line = lines.find((q) => slices(q.flavor) === 1) ?? lines[0];
  const flavor = line?.flavor ?? '';
  const nominal = Math.max(
    0,
    (line?.nominal ?? 0) + (r.suggestedNominalGpus - r.currentNominalGpus) * slices(flavor),
  );
  return {
    ...EMPTY,
    queueId: r.queue.id,
    flavor,
    nominal: String(Math.round(nominal * 1000) / 1000),
    justification: `Recommendation: the queue ${KIND_WORDS[r.kind] ?? r.kind} (${r.evidence}); suggested ${gpus(r.suggestedNominalGpus)} GPUs in all instead of ${gpus(r.currentNominalGpus)}.`,
  };
}

export function FileRequest(props: {
  slug: string;
  canFile: boolean;
  canReadRecommendations: boolean;
  /** Bumped when a request or a quota changed: the queues' nominals and the recommendations again. */
  version: number;
  onFiled: (id: string) => void;
}) {
  const [days, setDays] = useState(14);
  const [{ data }, refetch] = useQuery({ query: QuotaFileData, variables: { slug: props.slug } });
  const [{ data: recs, error: recsError }, refetchRecs] = useQuery({
    query: QuotaRecommendations,
    variables: { days },
    pause: !props.canReadRecommendations,
  });
  useEffect(() => {
    if (!props.version) return;
    refetch({ requestPolicy: 'network-only' });
    if (props.canReadRecommendations) refetchRecs({ requestPolicy: 'network-only' });
  }, [props.version]);
  const [state, file] = useMutation(RequestQuotaChange);
  const [form, setForm] = useState<Form>(EMPTY);
  const [problem, setProblem] = useState<string | null>(null);
  const [filed, setFiled] = useState<string | null>(null);
  const first = useRef<HTMLSelectElement>(null);
  const queues = data?.tenant.queues ?? [];
  const queue = queues.find((q) => q.id === form.queueId) ?? queues[0];
  const flavors = [
    ...new Set([
      ...(queue?.quotas ?? []).filter((q) => q.resource === 'GPU').map((q) => q.flavor),
      ...(data?.flavors ?? []).map((f) => f.name),
    ]),
  ];
  const flavor = form.flavor || flavors[0] || '';
  const current = queue?.quotas.find((q) => q.flavor === flavor && q.resource === 'GPU')?.nominal ?? 0;
  const set = (key: keyof Form) => (e: Event) =>
    setForm({ ...form, [key]: (e.target as HTMLInputElement).value });

  const onSubmit = async (event: Event) => {
    event.preventDefault();
    setProblem(null);
    setFiled(null);
    if (!queue) return;
    const r = await file({
      input: {
        queueId: queue.id,
        flavor,
        resource: 'GPU',
        nominal: Number(form.nominal),
        justification: form.justification,
        startsAt: form.startsAt ? new Date(form.startsAt).toISOString() : null,
        expiresAt: form.expiresAt ? new Date(form.expiresAt).toISOString() : null,
      },
    });
    if (r.error || !r.data) return setProblem(problemOf(r.error) ?? 'The request was not filed.');
    setFiled(`Request filed: ${r.data.requestQuotaChange.status}.`);
    setForm(EMPTY);
    props.onFiled(r.data.requestQuotaChange.id);
  };

  return (
    <>
      {props.canReadRecommendations && (
        <section aria-labelledby="quota-recs">
          <h2 id="quota-recs">Recommendations</h2>
          <label>
            From the last{' '}
            <select value={days} onChange={(e) => setDays(Number((e.target as HTMLSelectElement).value))}>
              {[7, 14, 30, 90].map((d) => (
                <option key={d} value={d}>
                  {d} days
                </option>
              ))}
            </select>
          </label>
          {recsError ? (
            <p role="alert">{problemOf(recsError)}</p>
          ) : (
            <RecommendationsTable
              recommendations={recs?.quotaRecommendations ?? []}
              onUse={
                props.canFile && data
                  ? (r) => {
                      setForm(fromRecommendation(r, data));
                      first.current?.focus();
                    }
                  : undefined
              }
            />
          )}
        </section>
      )}
      {props.canFile && (
        <section aria-labelledby="quota-file">
          <h2 id="quota-file">File a request</h2>
          <form class="submit" onSubmit={onSubmit}>
            <label>
              Queue
              <select ref={first} value={queue?.id ?? ''} onChange={set('queueId')}>
                <NamedOptions items={queues} />
              </select>
            </label>
            <label>
              Flavor
              <select value={flavor} onChange={set('flavor')}>
                {flavors.map((f) => (
                  <option key={f} value={f}>
                    {f}
                  </option>
                ))}
              </select>
            </label>
            <label>
              GPU nominal asked for (now {gpus(current)})
              <input
                type="number"
                min={0}
                step="any"
                required
                value={form.nominal}
                onInput={set('nominal')}
              />
            </label>
            <label>
              Starts (optional; empty: on approval)
              <input type="datetime-local" value={form.startsAt} onInput={set('startsAt')} />
            </label>
            <label>
              Expires (optional; empty: for good)
              <input type="datetime-local" value={form.expiresAt} onInput={set('expiresAt')} />
            </label>
            <label>
              Reason
              <textarea
                rows={4}
                required
                maxLength={2000}
                value={form.justification}
                onInput={set('justification')}
              />
            </label>
            <button type="submit" disabled={state.fetching}>
              File request
            </button>
          </form>
          {problem && <p role="alert">{problem}</p>}
          <p role="status">{filed ?? ''}</p>
        </section>
      )}
    </>
  );
}
