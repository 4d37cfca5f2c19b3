// Overview: each queue's nominal, used, borrowed and lent per flavor as bars, live (queueUpdated); my
// running and pending jobs; the month's budgets, each as a burn-down (spent by day against the amount,
// and the forecast to month end) with its numbers in words; and recent alerts: budget thresholds crossed,
// my jobs preempted, reclaimed as idle, flagged or stopped by the cluster, live through tenantEvents.
import { useQuery, useSubscription } from '@urql/preact';
import { useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import type { Viewer } from '../app.js';
import { graphql, type ResultOf } from '../graphql.js';
import { Budgets } from '../parts/budget-burndown.js';
import { CopyAs } from '../parts/copy.js';
import { fromNow, gpus } from '../parts/format.js';
import { useRefetchOn } from '../parts/live.js';
import { QuotaBar } from '../parts/quota-bar.js';
import { RecentAlerts } from '../parts/recent-alerts.js';
import './overview.css';

// Two lists of my jobs (filter mine: what the viewer submitted): the active
// ones, and those submitted this week (finished ones too), each with its last events, where preemptions,
// idle reclaims, flags and disruptions are. Inline, not a fragment: the cost limit counts a spread deeper.
export const OverviewQuery = graphql(`
  query ConsoleOverview($slug: String!, $money: Boolean!, $since: DateTime!) {
    tenant(slug: $slug) {
      id
      name
      queues {
        id
        name
        pendingCount
        admittedCount
        usage { flavor resource nominal used borrowed lent }
      }
      budgets @include(if: $money) {
        id
        scope
        period
        spent
        forecast
        monthlyAmount
        currency
        percentUsed
        thresholds
        alertsFired
        exhausted
        hard
        project { id name }
      }
      active: jobs(last: 100, filter: { mine: true, states: [PENDING, ADMITTED, RUNNING] }) {
        edges {
          node {
            id
            name
            state
            gpus
            eta
            queue { name }
            position { inQueue queueLength }
            events(last: 5) { edges { node { id at type reason message lostGpuHours } } }
          }
        }
      }
      recent: jobs(last: 30, filter: { mine: true, submittedAfter: $since }) {
        edges {
          node {
            id
            name
            state
            events(last: 5) { edges { node { id at type reason message lostGpuHours } } }
          }
        }
      }
    }
  }
`);
const QueueChanged = graphql(`
  subscription ConsoleQueueChanged($id: ID!) { queueUpdated(id: $id) { id } }
`);
const TenantEvents = graphql(`
  subscription ConsoleTenantEvents($tenantId: ID!) {
    tenantEvents(tenantId: $tenantId) {
      kind
      at
      jobId
      budgetId
      projectId
      period
      threshold
      spent
      limit
      currency
    }
  }
`);

export type Tenant = ResultOf<typeof OverviewQuery>['tenant'];
export type Budget = NonNullable<Tenant['budgets']>[number];
export type Job = Tenant['active']['edges'][number]['node'];
export type RecentJob = Tenant['recent']['edges'][number]['node'];
export type BudgetEvent = ResultOf<typeof TenantEvents>['tenantEvents'];

const DAY_MS = 86_400_000;
/** How far back "recent" alerts go. */
const RECENT_MS = 7 * DAY_MS;
const ACTIVE = new Set(['PENDING', 'ADMITTED', 'RUNNING']);

export function OverviewPage({ viewer }: { viewer: Viewer }) {
  const membership = viewer.memberships[0];
  const slug = membership?.tenant.slug;
  // Money (budgets, spend) is for tenant admins, auditors and platform admins: others do not ask for it.
  const seesMoney = viewer.isPlatformAdmin || ['TENANT_ADMIN', 'AUDITOR'].includes(membership?.role ?? '');
  const [since] = useState(() => new Date(Date.now() - RECENT_MS).toISOString());
  const [{ data, error }, refetch] = useQuery({
    query: OverviewQuery,
    variables: { slug: slug ?? '', money: seesMoney, since },
    pause: !slug,
  });
  const refresh = () => refetch({ requestPolicy: 'network-only' });
  const [budgetEvents, setBudgetEvents] = useState<BudgetEvent[]>([]);
  const tenantId = membership?.tenant.id ?? '';
  useRefetchOn(TenantEvents, { tenantId }, refresh, !tenantId, 500);
  useSubscription({ query: TenantEvents, variables: { tenantId }, pause: !tenantId }, (_prev, next) => {
    const e = next.tenantEvents;
    if (e.kind === 'BUDGET_ALERT') setBudgetEvents((old) => [e, ...old].slice(0, 50));
    return next;
  });
  if (!slug) return <p>You belong to no tenant yet.</p>;
  if (error && !data) return <p role="alert">{error.message}</p>;
  const tenant = data?.tenant;
  const mine = uniqueJobs(tenant);
  const active = mine.filter((j): j is Job => ACTIVE.has(j.state) && 'queue' in j);
  return (
    <section>
      <h1>Overview</h1>
      {tenant?.queues.map((q) => (
        <LiveQueue key={q.id} id={q.id} onChange={refresh} />
      ))}
      <h2>Queues</h2>
      {tenant?.queues.map((q) => (
        <article class="queue" key={q.id} aria-label={`Queue ${q.name}`}>
          <h3>
            <Link href={`/jobs?queue=${encodeURIComponent(q.id)}`}>{q.name}</Link>{' '}
            <small>
              {q.admittedCount ?? 0} admitted · {q.pendingCount ?? 0} pending
            </small>
          </h3>
          {(q.usage ?? [])
            .filter((u) => u.resource === 'GPU')
            .map((u) => (
              <QuotaBar
                key={u.flavor}
                flavor={u.flavor}
                nominal={u.nominal}
                used={u.used}
                borrowed={u.borrowed}
                lent={u.lent}
              />
            ))}
        </article>
      ))}
      <RecentAlerts
        budgets={tenant?.budgets ?? []}
        budgetEvents={budgetEvents}
        jobs={mine}
        sinceMs={Date.parse(since)}
      />
      <h2>My running and pending jobs</h2>
      {!tenant ? (
        <p class="loading">Loading…</p>
      ) : active.length ? (
        <ul class="my-jobs">
          {active.map((j) => (
            <li key={j.id}>
              <Link href={`/jobs/${encodeURIComponent(j.id)}`}>{j.name}</Link>{' '}
              <span class={`state ${j.state.toLowerCase()}`}>{j.state}</span> in {j.queue.name} ·{' '}
              {gpus(j.gpus)} GPUs
              {j.state === 'PENDING'
                ? ` · position ${j.position?.inQueue ?? '—'} of ${j.position?.queueLength ?? '—'}${j.eta ? `, expected to start ${fromNow(j.eta)}` : ''}`
                : ''}
            </li>
          ))}
        </ul>
      ) : (
        <p>None of your jobs is running or waiting.</p>
      )}
      <h2>Budgets</h2>
      {!seesMoney ? (
        <p>Budgets are shown to tenant admins and auditors.</p>
      ) : tenant?.budgets?.length ? (
        <Budgets slug={slug} budgets={tenant.budgets} />
      ) : tenant ? (
        <p>No budget set.</p>
      ) : null}
      <CopyAs
        document={OverviewQuery}
        variables={{ slug, money: seesMoney, since }}
        cli="npx fairway ls --state pending,running"
      />
    </section>
  );
}

/** Active and recent jobs, each once. */
function uniqueJobs(tenant: Tenant | undefined): (Job | RecentJob)[] {
  if (!tenant) return [];
  const byId = new Map<string, Job | RecentJob>();
  for (const e of tenant.recent.edges) byId.set(e.node.id, e.node);
  for (const e of tenant.active.edges) byId.set(e.node.id, e.node);
  return [...byId.values()];
}

function LiveQueue({ id, onChange }: { id: string; onChange: () => void }) {
  useRefetchOn(QueueChanged, { id }, onChange);
  return null;
}
