// One job: where it stands (state, position, ETA, why it waits, live through jobPosition), its
// placement, GPU-hours and cost so far, its GPU utilization from its runtime probes (a chart, and its
// mean and last values in words), its timeline with each preemption explained to its victim, its latest
// log lines, and cancel for those who may. Another tenant's job is "not found", nothing more.
import { useMutation, useQuery } from '@urql/preact';
import { useEffect } from 'preact/hooks';
import { graphql, type ResultOf } from '../graphql.js';
import { TimeChart } from '../parts/chart.js';
import { CopyAs } from '../parts/copy.js';
import { fromNow, gpus, hours, money, when } from '../parts/format.js';
import { useRefetchOn } from '../parts/live.js';

export const JobQuery = graphql(`
  query ConsoleJob($id: ID!) {
    node(id: $id) {
      ... on Job {
        id
        name
        state
        gpus
        priorityClass
        submittedAt
        startedAt
        finishedAt
        eta
        exitReason
        borrowed
        gpuHours
        cost
        lostGpuHours
        preemptionCount
        queue { name }
        project { name }
        submittedByName
        position { inQueue queueLength inCohort cohortLength }
        pendingReason { code message requested available nominal used etaUnknownMessage }
        placement { podSet node flavor pods }
        events(first: 50) { edges { node { id at type reason message lostGpuHours } } }
        logs(tail: 50) { lines { text } }
        probes(last: 60) { at gpuUtilization memoryUtilization }
      }
    }
  }
`);
const JobChanged = graphql(`subscription ConsoleJobPosition($id: ID!) { jobPosition(id: $id) { state } }`);
const CancelJob = graphql(`mutation ConsoleCancel($id: ID!) { cancelJob(id: $id) { id state } }`);
type Sample = Extract<ResultOf<typeof JobQuery>['node'], { probes: unknown }>['probes'][number];
/** How often a running job's page reads its probes again (the gateway stores one sample a probe interval). */
const PROBE_REFRESH_MS = 60_000;

export function JobPage({ id }: { id: string }) {
  const [{ data, error, fetching }, refetch] = useQuery({ query: JobQuery, variables: { id } });
  const [cancelState, cancel] = useMutation(CancelJob);
  const notFound = error?.graphQLErrors.some((e) =>
    ['NOT_FOUND', 'BAD_USER_INPUT'].includes(String(e.extensions?.code)),
  );
  useRefetchOn(JobChanged, { id }, () => refetch({ requestPolicy: 'network-only' }), !!notFound || !!error);
  const running = data?.node && 'state' in data.node && data.node.state === 'RUNNING';
  useEffect(() => {
    if (!running) return;
    const timer = setInterval(() => refetch({ requestPolicy: 'network-only' }), PROBE_REFRESH_MS);
    return () => clearInterval(timer);
  }, [running]);
  if (notFound) return <h1>Job not found</h1>;
  if (error && !data) return <p role="alert">{error.message}</p>;
  if (fetching && !data) return <p class="loading">Loading…</p>;
  const job = data?.node;
  if (!job || !('state' in job)) return <h1>Job not found</h1>;
  const ended = ['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(job.state);
  const preemptions = job.events.edges.map((e) => e.node).filter((e) => e.type === 'PREEMPTED');
  return (
    <section>
      <h1>{job.name}</h1>
      <p>
        <span class={`state ${job.state.toLowerCase()}`} data-testid="state">
          {job.state}
        </span>{' '}
        in {job.queue.name}
        {job.project ? ` · ${job.project.name}` : ''} · {gpus(job.gpus)} GPUs · {job.priorityClass}
        {job.borrowed ? ' · borrowing' : ''}
      </p>
      {job.state === 'PENDING' && (
        <section class="waiting" aria-label="Why it waits">
          <p>
            Position {job.position?.inQueue ?? '—'} of {job.position?.queueLength ?? '—'} in its queue
            {job.position?.inCohort != null
              ? `, ${job.position.inCohort} of ${job.position.cohortLength} in its cohort`
              : ''}
            ;{' '}
            {job.eta
              ? `expected to start ${fromNow(job.eta)} (${when(job.eta)}).`
              : `no start time can be given${job.pendingReason?.etaUnknownMessage ? `: ${job.pendingReason.etaUnknownMessage}` : '.'}`}
          </p>
          {job.pendingReason && <p>{job.pendingReason.message}</p>}
        </section>
      )}
      {preemptions.length > 0 && (
        <section class="preempted" aria-label="Preemptions">
          <h2>Why it was stopped</h2>
          {preemptions.map((p) => (
            <p key={p.id}>
              {when(p.at)}: {p.message ?? p.reason} {p.reason ? `(rule: ${p.reason})` : ''}
              {p.lostGpuHours != null
                ? ` · work lost since the last checkpoint: ${hours(p.lostGpuHours)} GPU-h`
                : ''}
              {job.state === 'PENDING' ? ` · expected back ${fromNow(job.eta)}` : ''}
            </p>
          ))}
        </section>
      )}
      <dl class="facts">
        <dt>Submitted</dt>
        <dd>
          {when(job.submittedAt)}
          {job.submittedByName ? ` by ${job.submittedByName}` : ''}
        </dd>
        <dt>Started</dt>
        <dd>{when(job.startedAt)}</dd>
        <dt>Finished</dt>
        <dd>
          {when(job.finishedAt)} {job.exitReason ?? ''}
        </dd>
        <dt>GPU-hours</dt>
        <dd>{hours(job.gpuHours)}</dd>
        <dt>Cost</dt>
        <dd>{money(job.cost)}</dd>
        <dt>Placement</dt>
        <dd>
          {job.placement.map((p) => `${p.podSet}: ${p.pods} on ${p.node} (${p.flavor})`).join('; ') || '—'}
        </dd>
      </dl>
      {!ended && (
        <button type="button" disabled={cancelState.fetching} onClick={() => void cancel({ id: job.id })}>
          Cancel job
        </button>
      )}
      {cancelState.error && (
        <p role="alert">{cancelState.error.graphQLErrors[0]?.message ?? cancelState.error.message}</p>
      )}
      <h2>Utilization</h2>
      <Utilization samples={job.probes} />
      <h2>Timeline</h2>
      <ol class="timeline">
        {job.events.edges.map(({ node: e }) => (
          <li key={e.id}>
            <time dateTime={e.at}>{when(e.at)}</time> {e.type}
            {e.message ? `: ${e.message}` : ''}
          </li>
        ))}
      </ol>
      <h2>Log</h2>
      {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling log must be reachable by keyboard (axe: scrollable-region-focusable) */}
      <pre class="log" role="log" tabIndex={0} aria-label="Latest log lines">
        {job.logs.lines.map((l) => l.text).join('\n') || 'No output yet.'}
      </pre>
      <CopyAs document={JobQuery} variables={{ id }} cli={`npx fairway watch ${id}`} />
    </section>
  );
}

const pct = (n: number) => `${Math.round(n * 100)}%`;
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** The job's stored probe samples as a chart of GPU (and GPU memory) utilization, with mean and last in words. */
function Utilization({ samples }: { samples: Sample[] }) {
  if (samples.length === 0) return <p>No probe samples yet.</p>;
  const gpu = samples.map((s) => s.gpuUtilization);
  const memory = samples.map((s) => s.memoryUtilization);
  const known = memory.filter((m): m is number => m != null);
  const last = samples[samples.length - 1]!;
  const summary =
    `mean ${pct(mean(gpu))}, last ${pct(last.gpuUtilization)} over the last ${samples.length} ` +
    `sample${samples.length === 1 ? '' : 's'} (${when(samples[0]!.at)} to ${when(last.at)})` +
    (known.length
      ? `; GPU memory mean ${pct(mean(known))}, last ${last.memoryUtilization == null ? '—' : pct(last.memoryUtilization)}.`
      : '.');
  return (
    <TimeChart
      title="GPU utilization"
      summary={summary}
      x={samples.map((s) => Date.parse(s.at) / 1000)}
      unit="%"
      yRange={[0, 100]}
      series={[
        { label: 'GPU', stroke: '--own', fill: 'rgba(47,111,179,0.15)', values: gpu.map((g) => g * 100) },
        ...(known.length
          ? [
              {
                label: 'GPU memory',
                stroke: '--borrowed',
                values: memory.map((m) => (m == null ? null : m * 100)),
              },
            ]
          : []),
      ]}
    />
  );
}
