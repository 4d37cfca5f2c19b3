// Time axes of the replay charts: their unit, and the measurement window as a subtitle and a shaded band.
import type { TopLevelSpec } from 'vega-lite';
import { r6, WINDOW_FILL } from './charts-style.js';
import type { ReplayMetrics } from './metrics.js';

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
export function windowLayers(
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
