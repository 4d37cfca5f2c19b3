// What the charts share in looks: series palette, dashes and shapes, reason colours, the window band,
// sizes and the per-run scales.
import type { Encoding } from 'vega-lite/build/src/encoding.js';

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
export const DASHES: number[][] = [
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
export const SHAPES = [
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
export const REASON_COLORS: Record<string, string> = {
  reclaim: '#e15759',
  priority: '#4e79a7',
  'fair-share': '#f28e2b',
  'window-closed': '#59a14f',
  idle: '#9c755f',
};
/** Channel definitions shared by a chart's layers (typed here: inlined literals are typed by context). */
export type Enc = Encoding<string>;

export const WINDOW_FILL = '#f2f2f2';
/** Band edges: dark, so a dash shows against any fill. */
export const EDGE = '#333';
/** Legend swatch for stacked bands: the band's fill with its edge's dash around it. */
export const SWATCH = {
  symbolType: 'square',
  symbolSize: 160,
  symbolStrokeWidth: 1.2,
  symbolStrokeColor: EDGE,
  symbolOpacity: 0.9,
} as const;

export const pick = <T>(xs: readonly T[], i: number): T => xs[i % xs.length]!;
export const r6 = (x: number): number => Math.round(x * 1e6) / 1e6;
export const WIDTH = 760;

export const runLabel = (m: { policy: string; placement: string }): string => `${m.policy} / ${m.placement}`;

/** Colour, stroke dash and point shape per run, in the report's run order. */
export function runScales(labels: string[]): {
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
