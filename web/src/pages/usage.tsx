// Usage: the month's GPU-hours and cost by project, person, flavor and day (a chart drawn here with
// uPlot, no CDN), and the CSV export (fetched with the credential, saved as a file).
import { useQuery } from '@urql/preact';
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { Viewer } from '../app.js';
import { graphql } from '../graphql.js';
import { CopyAs } from '../parts/copy.js';
import { hours, money } from '../parts/format.js';
import { UsageBreakdown, type UsageRow } from '../parts/usage-breakdown.js';
import { credential } from '../session.js';

const UsageQuery = graphql(`
  query ConsoleUsage($slug: String!, $from: DateTime!, $to: DateTime!) {
    tenant(slug: $slug) {
      id
      byDay: usage(from: $from, to: $to, granularity: DAY) { currency rows { periodStart gpuHours cost } total { gpuHours cost } }
      byWho: usage(from: $from, to: $to, granularity: MONTH, groupBy: [PROJECT, USER, FLAVOR]) {
        currency
        rows { project { name } user flavor gpuHours cost jobs }
      }
    }
  }
`);

function monthRange(now = new Date()) {
  const from = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const to = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
  return { from: from.toISOString(), to: to.toISOString(), month: from.toISOString().slice(0, 7) };
}

export function UsagePage({ viewer }: { viewer: Viewer }) {
  const tenant = viewer.memberships[0]?.tenant;
  const range = monthRange();
  const [{ data, error }] = useQuery({
    query: UsageQuery,
    variables: { slug: tenant?.slug ?? '', from: range.from, to: range.to },
    pause: !tenant,
  });
  const chart = useRef<HTMLDivElement>(null);
  const days = data?.tenant.byDay.rows ?? [];
  useEffect(() => {
    if (!chart.current || days.length === 0) return;
    const month = [new Date(range.from).getTime() / 1000, new Date(range.to).getTime() / 1000] as const;
    const plot = new uPlot(
      {
        width: Math.min(900, chart.current.clientWidth || 600),
        height: 220,
        // The month on the x axis whatever days have usage (one day alone would stretch the axis over years),
        // a bar per day from zero.
        scales: {
          x: { time: true, range: () => [month[0], month[1]] },
          y: { range: (_u, _min, max) => [0, max || 1] },
        },
        series: [
          {},
          {
            label: 'GPU-hours',
            stroke: 'steelblue',
            fill: 'rgba(70,130,180,0.4)',
            paths: uPlot.paths.bars?.({ size: [0.8, 24] }),
            points: { show: false },
          },
        ],
        axes: [{}, { label: 'GPU-h' }],
      },
      [days.map((d) => new Date(d.periodStart ?? 0).getTime() / 1000), days.map((d) => d.gpuHours)],
      chart.current,
    );
    return () => plot.destroy();
  }, [days.map((d) => d.gpuHours).join()]);
  if (!tenant) return <p>You belong to no tenant yet.</p>;
  if (error && !data) return <p role="alert">{error.message}</p>;
  const currency = data?.tenant.byWho.currency ?? 'USD';
  // Money is null for roles that may not see it: no column of dashes then.
  const showCost = data?.tenant.byDay.total.cost != null;
  const download = async () => {
    const res = await fetch(
      `/usage/export.csv?month=${range.month}&tenantId=${encodeURIComponent(tenant.id)}`,
      {
        headers: { authorization: `Bearer ${credential.value}` },
      },
    );
    const url = URL.createObjectURL(await res.blob());
    const a = document.createElement('a');
    a.href = url;
    a.download = `usage-${tenant.slug}-${range.month}.csv`;
    a.click();
    URL.revokeObjectURL(url);
  };
  return (
    <section>
      <h1>Usage</h1>
      <p>
        {range.month}: {hours(data?.tenant.byDay.total.gpuHours)} GPU-hours
        {data && !showCost
          ? ' (costs are shown to tenant admins and auditors)'
          : `, ${money(data?.tenant.byDay.total.cost, currency)}`}
        .{' '}
        <button type="button" onClick={() => void download()}>
          Download CSV
        </button>
      </p>
      <div ref={chart} class="chart" role="img" aria-label="GPU-hours by day" />
      <div class="breakdowns">
        {(
          [
            ['project', (r: UsageRow) => r.project?.name ?? '—'],
            ['person', (r: UsageRow) => r.user ?? '—'],
            ['flavor', (r: UsageRow) => r.flavor ?? '—'],
          ] as const
        ).map(([title, keyOf]) => (
          <UsageBreakdown
            key={title}
            title={title}
            rows={data?.tenant.byWho.rows ?? []}
            keyOf={keyOf}
            currency={currency}
          />
        ))}
      </div>
      <table aria-label="Usage by project, person and flavor">
        <thead>
          <tr>
            <th scope="col">Project</th>
            <th scope="col">Person</th>
            <th scope="col">Flavor</th>
            <th scope="col">GPU-hours</th>
            {showCost && <th scope="col">Cost</th>}
            <th scope="col">Jobs</th>
          </tr>
        </thead>
        <tbody>
          {(data?.tenant.byWho.rows ?? []).map((r, i) => (
            <tr key={i}>
              <td>{r.project?.name ?? '—'}</td>
              <td>{r.user ?? '—'}</td>
              <td>{r.flavor ?? '—'}</td>
              <td>{hours(r.gpuHours)}</td>
              {showCost && <td>{money(r.cost, currency)}</td>}
              <td>{r.jobs}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <CopyAs
        document={UsageQuery}
        variables={{ slug: tenant.slug, ...range }}
        cli={`npx fairway usage --month ${range.month}`}
      />
    </section>
  );
}
