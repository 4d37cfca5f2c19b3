// The month's usage split one way (by project, person or flavor) as bars, largest first, each with its
// GPU-hours and cost in words for screen readers. Bars measure cost, or GPU-hours where the caller may
// not see cost (it comes back null).
import { hours, money } from './format.js';

export interface UsageRow {
  project?: { name: string } | null;
  user?: string | null;
  flavor?: string | null;
  gpuHours: number;
  cost: number | null;
}

export function UsageBreakdown(p: {
  title: string;
  rows: readonly UsageRow[];
  keyOf: (row: UsageRow) => string;
  currency: string;
}) {
  const priced = p.rows.every((r) => r.cost !== null);
  const totals = new Map<string, { gpuHours: number; cost: number }>();
  for (const row of p.rows) {
    const key = p.keyOf(row);
    const t = totals.get(key) ?? { gpuHours: 0, cost: 0 };
    t.gpuHours += row.gpuHours;
    t.cost += row.cost ?? 0;
    totals.set(key, t);
  }
  const measure = (t: { gpuHours: number; cost: number }) => (priced ? t.cost : t.gpuHours);
  const sorted = [...totals].sort((a, b) => measure(b[1]) - measure(a[1]));
  const top = Math.max(...sorted.map(([, t]) => measure(t)), 0) || 1;
  const said = (t: { gpuHours: number; cost: number }) =>
    `${hours(t.gpuHours)} GPU-hours${priced ? `, ${money(t.cost, p.currency)}` : ''}`;
  return (
    <figure class="breakdown" aria-label={`Usage by ${p.title}`}>
      <figcaption>By {p.title}</figcaption>
      {sorted.length === 0 ? (
        <p>Nothing used this month.</p>
      ) : (
        sorted.map(([key, t]) => (
          <div class="bar-row" key={key}>
            <span class="bar-label">{key}</span>
            <div class="bar" role="img" aria-label={`${key}: ${said(t)}`}>
              <span class="own" style={{ width: `${(100 * measure(t)) / top}%` }} />
            </div>
            <span class="bar-figures">{said(t)}</span>
          </div>
        ))
      )}
    </figure>
  );
}
