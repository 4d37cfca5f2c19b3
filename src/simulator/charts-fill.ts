// The fill page's chart: one metric against the requested allocation, a line per run.
import type { TopLevelSpec } from 'vega-lite';
import { renderSvg } from './charts-render.js';
import { type Enc, runLabel, runScales, WIDTH } from './charts-style.js';
import type { FillPoint } from './engine.js';

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
