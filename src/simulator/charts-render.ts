// A chart spec to inline SVG: compiled by vega-lite and rendered by vega offline (see charts.ts).
import * as vega from 'vega';
import type { TopLevelSpec } from 'vega-lite';
import * as vl from 'vega-lite';

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
