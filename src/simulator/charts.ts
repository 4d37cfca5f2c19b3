// The HTML report's charts: Vega-Lite specs compiled by vega-lite and rendered to static SVG by
// vega, offline (renderer 'none', no canvas, no loader), so the page stays self-contained: inline
// SVG, no script, nothing fetched.
import * as vega from 'vega';
import type { TopLevelSpec } from 'vega-lite';
import * as vl from 'vega-lite';
import type { Encoding } from 'vega-lite/build/src/encoding.js';
import type { FillPoint } from './engine.js';
import { type ReplayMetrics, WAIT_BUCKETS } from './metrics.js';

/**
 * vega's tableau20, dark shades first then light ones: the first ten series get ten different
 * hues, and neighbours in a stack are never two shades of one hue.
 */
export const SERIES_COLORS = [
  '#4c78a8',
  '#f58518',
  '#54a24b',
  '#b79a20',
  '#439894',
  '#e45756',
  '#79706e',
  '#d67195',
  '#b279a2',
  '#9e765f',
  '#9ecae9',
  '#ffbf79',
  '#88d27a',
  '#f2cf5b',
  '#83bcb6',
  '#ff9d98',
  '#bab0ac',
  '#fcbfd2',
  '#d6a5c9',
  '#d8b5a5',
];
/** Stroke dashes that tell series apart where colours come close (and in greyscale prints). */
const DASHES: number[][] = [
  [1, 0],
  [6, 3],
  [2, 2],
  [8, 3, 2, 3],
  [1, 3],
  [12, 4],
  [4, 2, 1, 2],
  [6, 2, 2, 2, 2, 2],
  [3, 5],
  [10, 2],
  [2, 4, 6, 4],
  [5, 1, 1, 1],
];
const SHAPES = [
  'circle',
  'square',
  'triangle-up',
  'diamond',
  'cross',
  'triangle-down',
  'triangle-right',
  'triangle-left',
  'wedge',
  'arrow',
  'stroke',
  'triangle',
];
const REASON_COLORS: Record<string, string> = {
  reclaim: '#e15759',
  priority: '#4e79a7',
  'fair-share': '#f28e2b',
  'window-closed': '#59a14f',
  idle: '#9c755f',
};
/** Channel definitions shared by a chart's layers (typed here: inlined literals are typed by context). */
type Enc = Encoding<string>;

const WINDOW_FILL = '#f2f2f2';
/** Band edges: dark, so a dash shows against any fill. */
const EDGE = '#333';
/** Legend swatch for stacked bands: the band's fill with its edge's dash around it. */
const SWATCH = {
  symbolType: 'square',
  symbolSize: 160,
  symbolStrokeWidth: 1.2,
  symbolStrokeColor: EDGE,
  symbolOpacity: 0.9,
} as const;

const pick = <T>(xs: readonly T[], i: number): T => xs[i % xs.length]!;
const r6 = (x: number): number => Math.round(x * 1e6) / 1e6;

const CONFIG: TopLevelSpec['config'] = {
  font: 'sans-serif',
  // no per-item ARIA labels: an area's would describe its first point only; each chart has a description
  mark: { aria: false },
  view: { stroke: null },
  axis: { labelFontSize: 11, titleFontSize: 12, titleFontWeight: 'normal', gridColor: '#e8e8e8' },
  legend: {
    labelFontSize: 11,
    titleFontSize: 12,
    titleFontWeight: 'normal',
    symbolStrokeWidth: 2,
    labelLimit: 400,
  },
  title: { fontSize: 13, fontWeight: 'normal', subtitleFontSize: 11, subtitleColor: '#555', anchor: 'start' },
};

/**
 * Compile and render one spec to an SVG string for inline use in HTML. vega numbers clip paths and gradients
 * from a
 * process-wide counter and inline SVG ids are global to the page: the ids are renumbered in order
 * of appearance under `id`, so every chart has its own and the same report gives the same bytes.
 */
export async function renderSvg(spec: TopLevelSpec, id: string): Promise<string> {
  const view = new vega.View(vega.parse(vl.compile({ ...spec, config: CONFIG }).spec), { renderer: 'none' });
  try {
    // Inline <svg> in HTML gets the SVG namespace from the HTML parser: the xmlns attributes are
    // dropped so the page names no URL at all.
    const label = (spec.description ?? '')
      .replace(/&/g, '&amp;')
      .replace(/</g, '&lt;')
      .replace(/"/g, '&quot;');
    const svg = (await view.toSVG())
      .replace(/ xmlns(:xlink)?="[^"]*"/g, '')
      .replace(/^<svg /, `<svg role="img" aria-label="${label}" `);
    const ids = new Map<string, string>();
    return svg.replace(/\b(clip\d+|gradient_\d+|p_gradient_\d+)\b/g, (m) => {
      let v = ids.get(m);
      if (v === undefined) ids.set(m, (v = `${id}-d${ids.size}`));
      return v;
    });
  } finally {
    view.finalize();
  }
}

export interface TimeUnitOfAxis {
  ms: number;
  /** unit in axis titles */
  name: string;
}

/** The unit of a time axis that spans `spanMs` (days from 2 days on, hours from 2 hours, …). */
export function timeUnit(spanMs: number): TimeUnitOfAxis {
  if (spanMs >= 2 * 86_400_000) return { ms: 86_400_000, name: 'days' };
  if (spanMs >= 2 * 3_600_000) return { ms: 3_600_000, name: 'hours' };
  if (spanMs >= 120_000) return { ms: 60_000, name: 'minutes' };
  return { ms: 1000, name: 's' };
}

const iso = (ms: number): string => new Date(ms).toISOString().replace('.000Z', 'Z');

/** "2017-10-03T02:30:41Z → 2017-10-31T23:38:51Z (692.1 h)": the measurement window, for subtitles. */
export function windowLabel(m: ReplayMetrics): string {
  const h = m.window.hours;
  const len =
    h >= 48
      ? `${(Math.round(h * 10) / 10).toString()} h = ${(Math.round((h / 24) * 10) / 10).toString()} days`
      : `${(Math.round(h * 100) / 100).toString()} h`;
  return `measurement window ${iso(m.window.startMs)} → ${iso(m.window.endMs)} (${len})`;
}

/** Shaded band and labelled rules for the measurement window on a time axis in `u` since the timeline's start. */
function windowLayers(
  m: ReplayMetrics,
  u: TimeUnitOfAxis,
  field: string,
): NonNullable<Extract<TopLevelSpec, { layer: unknown }>['layer']> {
  const start = r6((m.window.startMs - m.timeline.startMs) / u.ms);
  const end = r6((m.window.endMs - m.timeline.startMs) / u.ms);
  const data = { values: [{ [field]: start, end }] };
  return [
    {
      data,
      mark: { type: 'rect', color: WINDOW_FILL },
      encoding: { x: { field, type: 'quantitative' }, x2: { field: 'end' } },
    },
    {
      data: {
        values: [
          { [field]: start, label: 'window start', align: 'left' },
          { [field]: end, label: 'window end', align: 'right' },
        ],
      },
      layer: [
        {
          mark: { type: 'rule', color: '#777', strokeDash: [4, 3] },
          encoding: { x: { field, type: 'quantitative' } },
        },
        // labels above the plot, so they never sit on the data
        {
          transform: [{ filter: "datum.align === 'left'" }],
          mark: { type: 'text', align: 'left', baseline: 'bottom', y: -3, color: '#555', fontSize: 10 },
          encoding: { x: { field, type: 'quantitative' }, text: { field: 'label' } },
        },
        {
          transform: [{ filter: "datum.align === 'right'" }],
          mark: { type: 'text', align: 'right', baseline: 'bottom', y: -3, color: '#555', fontSize: 10 },
          encoding: { x: { field, type: 'quantitative' }, text: { field: 'label' } },
        },
      ],
    },
  ];
}

const WIDTH = 760;

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

const runLabel = (m: { policy: string; placement: string }): string => `${m.policy} / ${m.placement}`;

/** Colour, stroke dash and point shape per run, in the report's run order. */
function runScales(labels: string[]): {
  domain: string[];
  colors: string[];
  dashes: number[][];
  shapes: string[];
} {
  return {
    domain: labels,
    colors: labels.map((_, i) => pick(SERIES_COLORS, i)),
    dashes: labels.map((_, i) => pick(DASHES, i)),
    shapes: labels.map((_, i) => pick(SHAPES, i)),
  };
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

export type FillMetric = 'allocationRatio' | 'fragmentationRatio' | 'expectedFragmentationRatio';

const FILL_AXIS: Record<FillMetric, string> = {
  allocationRatio: 'allocated (% of GPUs)',
  fragmentationRatio: 'fragmentation (% of free GPUs)',
  expectedFragmentationRatio: 'exp. fragmentation (% of free GPUs)',
};

/** One line per run: `key` at each requested allocation. */
export async function fillChart(
  runs: readonly { policy: string; placement: string; points: readonly FillPoint[] }[],
  key: FillMetric,
  id: string,
): Promise<string> {
  const labels = runs.map(runLabel);
  const rows = runs.flatMap((run) =>
    run.points.map((p) => ({ run: runLabel(run), target: p.targetPct, value: p[key] })),
  );
  const targets = runs[0]?.points.map((p) => p.targetPct) ?? [];
  const lo = Math.min(...targets);
  const hi = Math.max(...targets);
  const pad = Math.max(2, (hi - lo) * 0.04);
  const sc = runScales(labels);
  const x: Enc['x'] = {
    field: 'target',
    type: 'quantitative',
    title: 'requested allocation (% of GPUs)',
    scale: { domain: [lo - pad, hi + pad], nice: false, zero: false },
    axis: { values: targets },
  };
  const y: Enc['y'] = {
    field: 'value',
    type: 'quantitative',
    title: FILL_AXIS[key],
    axis: { format: '.0%' },
    scale: { domain: [0, 1] },
  };
  const legend = { field: 'run', type: 'nominal', title: 'policy / placement', sort: labels } as const;
  const spec: TopLevelSpec = {
    width: WIDTH,
    height: 260,
    description: `${FILL_AXIS[key]} against the requested allocation, per policy / placement`,
    data: { values: rows },
    layer: [
      {
        mark: { type: 'line', strokeWidth: 2 },
        encoding: {
          x,
          y,
          color: { ...legend, scale: { domain: sc.domain, range: sc.colors } },
          strokeDash: { ...legend, scale: { domain: sc.domain, range: sc.dashes } },
        },
      },
      {
        mark: { type: 'point', filled: true, size: 50, opacity: 1 },
        encoding: {
          x,
          y,
          color: { ...legend, scale: { domain: sc.domain, range: sc.colors } },
          shape: { ...legend, scale: { domain: sc.domain, range: sc.shapes } },
        },
      },
    ],
  };
  return renderSvg(spec, id);
}
