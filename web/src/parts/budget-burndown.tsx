// A month's budgets, each as a burn-down: spent by day against the amount, and the forecast to month
// end, with its numbers in words (the figure's caption is its accessible name).
import { useQuery } from '@urql/preact';
import { useEffect, useMemo, useRef } from 'preact/hooks';
import { graphql } from '../graphql.js';
import type { Budget } from '../pages/overview.js';
import { TimeChart } from './chart.js';
import { money } from './format.js';

const DAY_MS = 86_400_000;

const BurnQuery = graphql(`
  query ConsoleBudgetBurn($slug: String!, $from: DateTime!, $to: DateTime!) {
    tenant(slug: $slug) {
      id
      usage(from: $from, to: $to, granularity: DAY, groupBy: [PROJECT]) {
        currency
        rows { periodStart cost project { id } }
      }
    }
  }
`);

export const budgetName = (b: Pick<Budget, 'project'>) =>
  b.project ? `Project ${b.project.name}` : 'Tenant';

/** The month of a budget period ('YYYY-MM', UTC) as [start, end) in ms. */
export function monthOf(period: string): [number, number] {
  const [y, m] = period.split('-').map(Number) as [number, number];
  return [Date.UTC(y, m - 1, 1), Date.UTC(y, m, 1)];
}

export function Budgets({ slug, budgets }: { slug: string; budgets: Budget[] }) {
  const period = budgets[0]!.period;
  const [from, to] = monthOf(period);
  const [{ data }, refetch] = useQuery({
    query: BurnQuery,
    variables: { slug, from: new Date(from).toISOString(), to: new Date(to).toISOString() },
  });
  // The overview refetched and a budget's spend moved: the days move with it.
  const spentNow = budgets.map((b) => b.spent).join();
  const spentBefore = useRef(spentNow);
  useEffect(() => {
    if (spentBefore.current === spentNow) return;
    spentBefore.current = spentNow;
    refetch({ requestPolicy: 'network-only' });
  }, [spentNow]);
  // Spend per UTC day: the tenant's (every row) and each project's.
  const days = Math.round((to - from) / DAY_MS);
  const daily = useMemo(() => {
    const tenant = new Array<number>(days).fill(0);
    const projects = new Map<string, number[]>();
    for (const r of data?.tenant.usage.rows ?? []) {
      const day = Math.floor((Date.parse(r.periodStart ?? '') - from) / DAY_MS);
      if (!(day >= 0 && day < days)) continue;
      tenant[day]! += r.cost ?? 0;
      if (r.project) {
        let p = projects.get(r.project.id);
        if (!p) projects.set(r.project.id, (p = new Array<number>(days).fill(0)));
        p[day]! += r.cost ?? 0;
      }
    }
    return { tenant, projects };
  }, [data, from, days]);
  return (
    <div class="budgets">
      {budgets.map((b) => (
        <article key={b.id} class="budget" aria-label={`${budgetName(b)} budget`}>
          <h3>
            {budgetName(b)} budget · {b.period}
            {b.hard ? <small> · hard: new jobs wait once it is spent</small> : null}
          </h3>
          <BurnDown
            budget={b}
            from={from}
            to={to}
            daily={
              data
                ? b.project
                  ? (daily.projects.get(b.project.id) ?? new Array<number>(days).fill(0))
                  : daily.tenant
                : null
            }
          />
        </article>
      ))}
    </div>
  );
}

/**
 * Spent so far by day (cumulative, ending at the budget's own month-to-date figure), the amount, and the
 * forecast from now to month end.
 */
function BurnDown(p: { budget: Budget; from: number; to: number; daily: number[] | null }) {
  const b = p.budget;
  const amount = b.monthlyAmount ?? 0;
  const spent = b.spent ?? 0;
  const forecast = b.forecast ?? spent;
  const now = Math.min(Math.max(Date.now(), p.from), p.to);
  const days = Math.round((p.to - p.from) / DAY_MS);
  const x: number[] = [];
  const spentLine: (number | null)[] = [];
  const forecastLine: (number | null)[] = [];
  const point = (t: number, s: number | null, f: number | null) => {
    x.push(t);
    spentLine.push(s);
    forecastLine.push(f);
  };
  // Day boundaries, each with what was spent before it; now, with the month-to-date figure, where the
  // forecast line starts; month end, where it ends.
  let total = 0;
  let placed = false;
  for (let day = 0; day <= days; day++) {
    const t = p.from + day * DAY_MS;
    if (!placed && t >= now) {
      point(now, spent, t === now && t === p.to ? forecast : spent);
      placed = true;
    }
    if (t !== now) point(t, t < now && p.daily ? total : null, t === p.to ? forecast : null);
    total += p.daily?.[day] ?? 0;
  }
  const over = forecast > amount;
  const summary =
    `spent ${money(spent, b.currency)} of ${money(amount, b.currency)} (${Math.round(b.percentUsed ?? 0)}%) so far; ` +
    `forecast ${money(forecast, b.currency)} by month end, ` +
    (over ? `${money(forecast - amount, b.currency)} over the budget.` : 'within the budget.') +
    (b.exhausted ? ' The budget is spent.' : '') +
    (b.alertsFired.length ? ` Alerts fired at ${b.alertsFired.map((t) => `${t}%`).join(', ')}.` : '');
  return (
    <TimeChart
      title={`${budgetName(b)} budget burn-down`}
      summary={summary}
      x={x.map((t) => t / 1000)}
      unit={` ${b.currency}`}
      yLabel={b.currency}
      bareTicks
      series={[
        { label: 'Spent', stroke: '--own', fill: 'rgba(47,111,179,0.15)', values: spentLine },
        { label: 'Forecast', stroke: over ? '--borrowed' : '--own', dash: [6, 4], values: forecastLine },
        { label: 'Budget', stroke: '--muted', dash: [2, 3], points: false, values: x.map(() => amount) },
      ]}
    />
  );
}
