// The replay page's charts: allocation per tenant, the wait histogram and preemptions over time.
import type { TopLevelSpec } from 'vega-lite';
import { renderSvg } from './charts-render.js';
import {
  DASHES,
  EDGE,
  type Enc,
  pick,
  REASON_COLORS,
  r6,
  runLabel,
  runScales,
  SERIES_COLORS,
  SWATCH,
  WIDTH,
} from './charts-style.js';
import { timeUnit, windowLabel, windowLayers } from './charts-time-axis.js';
import { type ReplayMetrics, WAIT_BUCKETS } from './metrics.js';

/** Stacked GPUs held per tenant over time (mean per timeline bucket), the window shaded. */
export async function allocationChart(m: ReplayMetrics, id: string): Promise<string> {
  const tl = m.timeline;
  const nb = tl.allocation[0]?.length ?? 0;
  if (nb === 0) return '<p>no data</p>';
  const u = timeUnit(nb * tl.bucketMs);
  const rows: { t: number; tenant: string; order: number; gpus: number }[] = [];
  tl.allocation.forEach((series, ti) => {
    const tenant = tl.tenants[ti]!;
    // a bucket holds from its start to the next one's: step-after, plus the last bucket's end
    for (let b = 0; b <= nb; b++)
      rows.push({ t: r6((b * tl.bucketMs) / u.ms), tenant, order: ti, gpus: series[Math.min(b, nb - 1)]! });
  });
  const domain = tl.tenants;
  const x: Enc['x'] = {
    field: 't',
    type: 'quantitative',
    title: `time since the window start (${u.name})`,
    scale: { domain: [0, r6((nb * tl.bucketMs) / u.ms)], nice: false, zero: false },
  };
  const y: Enc['y'] = {
    field: 'gpus',
    type: 'quantitative',
    title: 'GPUs allocated (mean per bucket)',
    stack: 'zero',
    scale: { domain: [0, m.capacityGpus], nice: false, clamp: true },
  };
  const color: Enc['color'] = {
    field: 'tenant',
    type: 'nominal',
    title: 'tenant',
    scale: { domain, range: domain.map((_, i) => pick(SERIES_COLORS, i)) },
    sort: domain,
    legend: SWATCH,
  };
  const spec: TopLevelSpec = {
    width: WIDTH,
    height: 260,
    description: `GPUs allocated per tenant over time, stacked, ${m.policy} / ${m.placement}`,
    title: {
      text: `GPU allocation per tenant — ${m.policy} / ${m.placement}`,
      subtitle: `${windowLabel(m)}; capacity ${m.capacityGpus} GPUs (dashed line)`,
    },
    layer: [
      ...windowLayers(m, u, 't'),
      {
        data: { values: rows },
        layer: [
          {
            mark: { type: 'area', interpolate: 'step-after', opacity: 0.9 },
            encoding: { x, y, color, order: { field: 'order', type: 'quantitative' } },
          },
          {
            // each band's upper edge, dashed per tenant, so a legend entry matches a band by dash too
            mark: { type: 'line', interpolate: 'step-after', strokeWidth: 0.8, color: EDGE },
            encoding: {
              x,
              y,
              strokeDash: {
                field: 'tenant',
                type: 'nominal',
                title: 'tenant',
                scale: { domain, range: domain.map((_, i) => pick(DASHES, i)) },
                sort: domain,
              },
              order: { field: 'order', type: 'quantitative' },
            },
          },
        ],
      },
      {
        data: { values: [{ cap: m.capacityGpus }] },
        mark: { type: 'rule', color: '#333', strokeDash: [6, 3] },
        encoding: { y: { field: 'cap', type: 'quantitative' } },
      },
    ],
    resolve: { scale: { x: 'shared', y: 'shared' } },
  };
  return renderSvg(spec, id);
}
/** Share of each run's jobs per wait bucket (WAIT_BUCKETS), bars grouped by bucket. */
export async function waitHistogramChart(runs: readonly ReplayMetrics[], id: string): Promise<string> {
  const labels = runs.map(runLabel);
  const rows = runs.flatMap((m) => {
    const total = m.waitHistogram.reduce((s, x) => s + x, 0) || 1;
    return m.waitHistogram.map((c, b) => ({
      bucket: WAIT_BUCKETS[b]!.label,
      run: runLabel(m),
      jobs: c,
      share: r6(c / total),
    }));
  });
  const sc = runScales(labels);
  const spec: TopLevelSpec = {
    width: WIDTH,
    height: 240,
    description: 'share of jobs per wait bucket, per policy / placement',
    title: {
      text: 'Wait from submit to start',
      subtitle:
        'share of each run’s jobs per wait bucket; a job never started counts with its wait at the end (a lower bound), rejected jobs are left out',
    },
    data: { values: rows },
    mark: { type: 'bar', stroke: EDGE, strokeWidth: 0.4 },
    encoding: {
      x: {
        field: 'bucket',
        type: 'ordinal',
        sort: WAIT_BUCKETS.map((w) => w.label),
        title: 'wait (bucket: up to the time shown)',
        axis: { labelAngle: 0 },
      },
      xOffset: { field: 'run', type: 'nominal', sort: labels, scale: { domain: labels } },
      y: {
        field: 'share',
        type: 'quantitative',
        title: 'jobs (% of the run’s jobs)',
        axis: { format: '.0%' },
        scale: { domain: [0, 1] },
      },
      color: {
        field: 'run',
        type: 'nominal',
        title: 'policy / placement',
        scale: { domain: sc.domain, range: sc.colors },
        sort: labels,
      },
    },
  };
  return renderSvg(spec, id);
}

/** Preemptions per timeline bucket, stacked by reason, the window shaded. */
export async function preemptionChart(m: ReplayMetrics, id: string): Promise<string> {
  const tl = m.timeline;
  const nb = tl.preemptions.length;
  if (tl.preemptions.every((r) => Object.values(r).every((c) => c === 0)))
    return '<p class="muted">no preemptions</p>';
  const u = timeUnit(nb * tl.bucketMs);
  const reasons = [...new Set(tl.preemptions.flatMap((r) => Object.keys(r)))].sort();
  const bu = timeUnit(2 * tl.bucketMs);
  const bucket = `${Number((tl.bucketMs / bu.ms).toPrecision(3)).toString()} ${bu.name}`;
  const max = Math.max(...tl.preemptions.map((r) => Object.values(r).reduce((a, c) => a + c, 0)));
  // stacked here (reasons in name order): a bar with x and x2 would make vega-lite lay it out horizontally
  const rows = tl.preemptions.flatMap((r, b) => {
    let acc = 0;
    return reasons
      .filter((reason) => (r[reason] ?? 0) > 0)
      .map((reason) => ({
        t: r6((b * tl.bucketMs) / u.ms),
        t2: r6(((b + 1) * tl.bucketMs) / u.ms),
        reason,
        count: r[reason]!,
        y0: acc,
        y1: (acc += r[reason]!),
      }));
  });
  const spec: TopLevelSpec = {
    width: WIDTH,
    height: 180,
    description: `preemptions per bucket over time by reason, ${m.policy} / ${m.placement}`,
    title: {
      text: `Preemptions over time — ${m.policy} / ${m.placement}`,
      subtitle: `${windowLabel(m)}; buckets of ${bucket}`,
    },
    layer: [
      ...windowLayers(m, u, 't'),
      {
        data: { values: rows },
        mark: { type: 'rect' },
        encoding: {
          x: {
            field: 't',
            type: 'quantitative',
            title: `time since the window start (${u.name})`,
            scale: { domain: [0, r6((nb * tl.bucketMs) / u.ms)], nice: false, zero: false },
          },
          x2: { field: 't2' },
          // few preemptions: one tick per count (a tick at 0.5 would print as a second "1")
          y: {
            field: 'y1',
            type: 'quantitative',
            title: 'preemptions per bucket',
            axis: {
              format: 'd',
              ...(max <= 5 ? { values: Array.from({ length: max + 1 }, (_, i) => i) } : { tickMinStep: 1 }),
            },
          },
          y2: { field: 'y0' },
          color: {
            field: 'reason',
            type: 'nominal',
            title: 'reason',
            sort: reasons,
            scale: { domain: reasons, range: reasons.map((r) => REASON_COLORS[r] ?? '#666') },
          },
        },
      },
    ],
  };
  return renderSvg(spec, id);
}
