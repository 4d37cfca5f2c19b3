// Recent alerts: budget thresholds crossed (this period) and what happened to my jobs (preempted,
// reclaimed as idle, flagged, stopped by the cluster), newest first.
import { Link } from 'wouter-preact';
import type { Budget, BudgetEvent, Job, RecentJob } from '../pages/overview.js';
import { budgetName } from './budget-burndown.js';
import { money, when } from './format.js';

interface Alert {
  key: string;
  /** ms; null when only the period is known (a threshold the budget reports as fired). */
  at: number | null;
  kind: 'budget' | 'preempted' | 'idle' | 'flagged' | 'disrupted';
  text: string;
  job?: { id: string; name: string };
}

const KIND_LABEL: Record<Alert['kind'], string> = {
  budget: 'Budget',
  preempted: 'Preempted',
  idle: 'Idle reclaim',
  flagged: 'Flagged',
  disrupted: 'Disrupted',
};

/** Budget thresholds crossed (this period), and what happened to my jobs (the last week), newest first. */
export function RecentAlerts(p: {
  budgets: Budget[];
  budgetEvents: BudgetEvent[];
  jobs: (Job | RecentJob)[];
  sinceMs: number;
}) {
  const alerts: Alert[] = [];
  const seen = new Set<string>();
  for (const e of p.budgetEvents) {
    const key = `budget:${e.budgetId}:${e.period}:${e.threshold}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const b = p.budgets.find((x) => x.id === e.budgetId);
    const who = b ? budgetName(b) : e.projectId ? 'A project' : 'The tenant';
    alerts.push({
      key,
      at: Date.parse(e.at),
      kind: 'budget',
      text:
        `${who} budget passed ${e.threshold}% for ${e.period}` +
        (e.spent != null && e.limit != null
          ? `: ${money(e.spent, e.currency ?? 'USD')} spent of ${money(e.limit, e.currency ?? 'USD')}.`
          : '.'),
    });
  }
  for (const b of p.budgets)
    for (const threshold of b.alertsFired) {
      const key = `budget:${b.id}:${b.period}:${threshold}`;
      if (seen.has(key)) continue;
      seen.add(key);
      alerts.push({
        key,
        at: null,
        kind: 'budget',
        text: `${budgetName(b)} budget passed ${threshold}% for ${b.period} (${money(b.spent, b.currency)} spent of ${money(b.monthlyAmount, b.currency)} now).`,
      });
    }
  for (const j of p.jobs)
    for (const { node: e } of j.events.edges) {
      const at = Date.parse(e.at);
      if (at < p.sinceMs) continue;
      const job = { id: j.id, name: j.name };
      const lost = e.lostGpuHours != null ? ` Work lost: ${e.lostGpuHours.toFixed(2)} GPU-h.` : '';
      if (e.type === 'PREEMPTED') {
        const idle = e.reason === 'idle' || e.reason === 'not-running';
        alerts.push({
          key: e.id,
          at,
          kind: idle ? 'idle' : 'preempted',
          job,
          text: idle
            ? `reclaimed by its queue's isolation policy${e.message ? `: ${e.message}` : ''}.${lost}`
            : `preempted (${e.reason ?? 'no reason given'})${e.message ? `: ${e.message}` : ''}.${lost}`,
        });
      } else if (e.type === 'FLAGGED')
        alerts.push({
          key: e.id,
          at,
          kind: 'flagged',
          job,
          text: `flagged${e.message ? `: ${e.message}` : ''}.`,
        });
      else if (e.type === 'DISRUPTED')
        alerts.push({
          key: e.id,
          at,
          kind: 'disrupted',
          job,
          text: `stopped by the cluster and requeued${e.message ? `: ${e.message}` : ''}.`,
        });
    }
  alerts.sort((a, b) => (b.at ?? Number.POSITIVE_INFINITY) - (a.at ?? Number.POSITIVE_INFINITY));
  return (
    <section class="alerts" aria-labelledby="recent-alerts">
      <h2 id="recent-alerts">Recent alerts</h2>
      {alerts.length === 0 ? (
        <p aria-live="polite">
          No alerts: no budget threshold crossed this month, none of your jobs stopped this week.
        </p>
      ) : (
        <ul aria-live="polite">
          {alerts.slice(0, 30).map((a) => (
            <li key={a.key} class={`alert ${a.kind}`}>
              <span class="alert-kind">{KIND_LABEL[a.kind]}</span>{' '}
              {a.at != null ? (
                <time dateTime={new Date(a.at).toISOString()}>{when(new Date(a.at).toISOString())}</time>
              ) : (
                'This month'
              )}
              {': '}
              {a.job ? (
                <>
                  <Link href={`/jobs/${encodeURIComponent(a.job.id)}`}>{a.job.name}</Link>{' '}
                </>
              ) : null}
              {a.text}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
