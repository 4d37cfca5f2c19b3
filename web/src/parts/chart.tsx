// A time chart drawn with uPlot, always with its words: a caption that says what it shows and the numbers
// that matter, which is the figure's accessible name; the canvas itself is decoration for a screen reader.
// uPlot is imported statically: the usage page already puts it in the first script (a dynamic import here
// would not split it out, only warn), and it is small (~20 KB gzipped).
import { useEffect, useId, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import './chart.css';

export interface ChartSeries {
  label: string;
  /** A colour, or a CSS custom property of the console's palette ('--own'). */
  stroke: string;
  fill?: string;
  dash?: number[];
  /** Draw a dot at each value (default: uPlot's choice, dots when they are sparse). */
  points?: boolean;
  /** One per x; null: no point there (a line spans the gap). */
  values: (number | null)[];
}

function color(value: string | undefined, el: Element): string | undefined {
  if (!value?.startsWith('--')) return value;
  return getComputedStyle(el).getPropertyValue(value).trim() || undefined;
}

export function TimeChart(props: {
  /** What it shows, the first words of the caption ("GPU utilization"). */
  title: string;
  /** The numbers that matter, in words (mean and last, spent and forecast). */
  summary: string;
  /** Unix seconds. */
  x: number[];
  series: ChartSeries[];
  /** The y axis's unit, appended to its values and the legend's ('%', ' USD'). */
  unit?: string;
  /** The y axis's label ('USD'), when the unit is not on each tick. */
  yLabel?: string;
  /** Leave the unit off the y axis's ticks (it is in yLabel). */
  bareTicks?: boolean;
  yRange?: [number, number];
  height?: number;
  class?: string;
}) {
  const box = useRef<HTMLDivElement>(null);
  const captionId = useId();
  const [failed, setFailed] = useState(false);
  const key = JSON.stringify([
    props.x,
    props.series,
    props.unit,
    props.yLabel,
    props.bareTicks,
    props.yRange,
  ]);
  useEffect(() => {
    const el = box.current;
    if (!el || props.x.length === 0) return;
    const unit = props.unit ?? '';
    const height = props.height ?? 200;
    const fg = color('--fg', el);
    const line = color('--line', el);
    const width = () => Math.max(240, Math.min(900, el.clientWidth || 600));
    let plot: uPlot;
    try {
      plot = new uPlot(
        {
          width: width(),
          height,
          legend: { show: true },
          cursor: { drag: { x: false, y: false } },
          scales: props.yRange ? { y: { range: props.yRange } } : {},
          series: [
            {},
            ...props.series.map((s) => ({
              label: s.label,
              stroke: color(s.stroke, el),
              width: 2,
              spanGaps: true,
              ...(s.fill ? { fill: color(s.fill, el) } : {}),
              ...(s.dash ? { dash: s.dash } : {}),
              ...(s.points === undefined ? {} : { points: { show: s.points } }),
              value: (_u: uPlot, v: number | null) => (v == null ? '—' : `${round(v)}${unit}`),
            })),
          ],
          axes: [
            { stroke: fg, grid: { stroke: line, width: 1 }, ticks: { stroke: line } },
            {
              stroke: fg,
              grid: { stroke: line, width: 1 },
              ticks: { stroke: line },
              ...(props.yLabel ? { label: props.yLabel } : {}),
              // As wide as its longest tick.
              size: (_u, values) => 18 + 7 * Math.max(3, ...(values ?? []).map((v) => v.length)),
              values: (_u, splits) => splits.map((v) => `${compact(v)}${props.bareTicks ? '' : unit}`),
            },
          ],
        },
        [props.x, ...props.series.map((s) => s.values)] as uPlot.AlignedData,
        el,
      );
    } catch {
      setFailed(true);
      return;
    }
    setFailed(false);
    // Follows the page's width (only the width: a height change must not redraw it, nor loop).
    let drawn = width();
    const observer = new ResizeObserver(() => {
      const w = width();
      if (w !== drawn) plot.setSize({ width: (drawn = w), height });
    });
    observer.observe(el);
    return () => {
      observer.disconnect();
      plot.destroy();
    };
  }, [key]);
  return (
    <figure class={`time-chart ${props.class ?? ''}`} aria-labelledby={captionId}>
      <div
        ref={box}
        class="time-chart-plot"
        aria-hidden="true"
        style={{ minHeight: `${props.height ?? 200}px` }}
      />
      <figcaption id={captionId}>
        <strong>{props.title}</strong>: {props.summary}
        {failed ? ' (The chart could not be drawn.)' : ''}
      </figcaption>
    </figure>
  );
}

/** A tick: 1.5k, 20k, 2M. */
function compact(v: number): string {
  const a = Math.abs(v);
  if (a >= 1e6) return `${round(v / 1e6)}M`;
  if (a >= 1e3) return `${round(v / 1e3)}k`;
  return round(v);
}

function round(v: number): string {
  const a = Math.abs(v);
  return a >= 100
    ? v.toFixed(0)
    : a >= 10
      ? v.toFixed(1).replace(/\.0$/, '')
      : v.toFixed(2).replace(/\.?0+$/, '');
}
