// The HTML report's charts: Vega-Lite specs compiled by vega-lite and rendered to static SVG by
// vega, offline (renderer 'none', no canvas, no loader), so the page stays self-contained: inline
// SVG, no script, nothing fetched.
// The parts: charts-render.ts (spec to SVG), charts-style.ts (palette and sizes), charts-time-axis.ts
// (time units and the window band), charts-replay.ts and charts-fill.ts (the charts of each page). This
// file re-exports what callers import from it.
export { type FillMetric, fillChart } from './charts-fill.js';
export { renderSvg } from './charts-render.js';
export { allocationChart, preemptionChart, waitHistogramChart } from './charts-replay.js';
export { SERIES_COLORS } from './charts-style.js';
export { type TimeUnitOfAxis, timeUnit, windowLabel } from './charts-time-axis.js';
