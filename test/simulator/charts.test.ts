// The HTML report's charts (Vega-Lite rendered to static SVG): one <svg> per chart, axis titles
// with units, a legend that tells twelve tenants apart, the measurement window labelled, nothing
// loaded from anywhere, and the same report giving the same bytes.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { timeUnit } from '../../src/simulator/charts.js';
import { type FillReport, fillHtml, type ReplayReport, replayHtml } from '../../src/simulator/report.js';
import { type SimulateOptions, simulate } from '../../src/simulator/run.js';

const tmp = mkdtempSync(join(tmpdir(), 'fw-charts-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const TENANTS = Array.from({ length: 12 }, (_, i) => `team-${String(i + 1).padStart(2, '0')}`);

/** 12 tenants with 2 nominal GPUs each on 32 GPUs: the first six borrow the idle six's GPUs, which later ask
 * for their nominal (reclaims).
 */
function twelveTenants(): SimulateOptions {
  const trace = ['id,submit_time,duration_s,tenant,gpus,pods'];
  TENANTS.forEach((t, i) => {
    if (i < 6) for (let j = 0; j < 4; j++) trace.push(`${t}-${j},${i * 10},${7200 - j * 600},${t},2,1`);
    else trace.push(`${t}-0,${1800 + i * 60},3600,${t},2,1`);
  });
  const queues = {
    cohorts: [{ name: 'c' }],
    queues: TENANTS.map((t) => ({
      name: `q-${t}`,
      tenant: t,
      cohort: 'c',
      quotas: { h100: { gpu: { nominal: 2 } } },
    })),
  };
  const cluster = [
    'name,pool,gpu_type,gpus,cpu_milli,memory_mib',
    ...[1, 2, 3, 4].map((n) => `n${n},default,h100,8,64000,512000`),
  ];
  writeFileSync(join(tmp, 'trace.csv'), `${trace.join('\n')}\n`);
  writeFileSync(join(tmp, 'cluster.csv'), `${cluster.join('\n')}\n`);
  writeFileSync(join(tmp, 'queues.json'), JSON.stringify(queues));
  return {
    trace: join(tmp, 'trace.csv'),
    cluster: join(tmp, 'cluster.csv'),
    queues: join(tmp, 'queues.json'),
    policies: ['fairway', 'fifo'],
    placements: ['best-fit'],
    mode: 'replay',
    seed: 1,
    windowEnd: 'last-submit',
  };
}

const svgs = (html: string): string[] => html.match(/<svg[\s\S]*?<\/svg>/g) ?? [];
const texts = (svg: string): string[] => [...svg.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) => m[1]!);
/** fill and stroke-dasharray of each legend symbol, with its label. */
function legendEntries(svg: string): { label: string; fill: string; dash: string }[] {
  const attr = (path: string, name: string): string =>
    new RegExp(`\\b${name}="([^"]*)"`).exec(path)?.[1] ?? '';
  return [
    ...svg.matchAll(
      /role-legend-symbol"[^>]*><path ([^>]*)\/><\/g><g class="mark-text role-legend-label"[^>]*><text[^>]*>([^<]*)<\/text>/g,
    ),
  ].map((m) => ({ fill: attr(m[1]!, 'fill'), dash: attr(m[1]!, 'stroke-dasharray'), label: m[2]! }));
}

describe('replay report charts (12 tenants)', () => {
  const report = simulate(twelveTenants()).report as ReplayReport;

  it('has an <svg> per chart: the wait histogram, then per run the allocation and (if any) the preemptions', async () => {
    const html = await replayHtml(report);
    const withPreemptions = report.runs.filter((m) => m.preemptions.count > 0).length;
    expect(withPreemptions).toBeGreaterThan(0);
    expect(svgs(html)).toHaveLength(1 + report.runs.length + withPreemptions);
    expect((html.match(/no preemptions/g) ?? []).length).toBe(report.runs.length - withPreemptions);
  });

  it('titles its axes with units', async () => {
    const [wait, alloc] = svgs(await replayHtml(report));
    expect(texts(wait!)).toEqual(
      expect.arrayContaining(['jobs (% of the run’s jobs)', 'wait (bucket: up to the time shown)']),
    );
    const u = timeUnit(report.runs[0]!.timeline.bucketMs * report.runs[0]!.timeline.allocation[0]!.length);
    expect(texts(alloc!)).toEqual(
      expect.arrayContaining(['GPUs allocated (mean per bucket)', `time since the window start (${u.name})`]),
    );
    expect(u.name).toBe('hours');
  });

  it('tells all twelve tenants apart in the legend: distinct colours and distinct dashes', async () => {
    const alloc = svgs(await replayHtml(report))[1]!;
    const entries = legendEntries(alloc);
    expect(entries.map((e) => e.label)).toEqual(TENANTS);
    expect(new Set(entries.map((e) => e.fill)).size).toBe(12);
    expect(new Set(entries.map((e) => e.dash)).size).toBe(12);
  });

  it('labels the measurement window: start, end and length in the subtitle, and marks on the time axis', async () => {
    const html = await replayHtml(report);
    const m = report.runs[0]!;
    const iso = (ms: number): string => new Date(ms).toISOString().replace('.000Z', 'Z');
    const label = `measurement window ${iso(m.window.startMs)} → ${iso(m.window.endMs)} (${(Math.round(m.window.hours * 100) / 100).toString()} h)`;
    const alloc = svgs(html)[1]!;
    expect(texts(alloc).some((t) => t.startsWith(label))).toBe(true);
    expect(texts(alloc)).toEqual(expect.arrayContaining(['window start', 'window end']));
  });

  it('loads nothing: no script, no URL, ids unique on the page', async () => {
    const html = await replayHtml(report);
    expect(html).not.toMatch(/<script|https?:\/\/|\bhref=|\bsrc=|url\(/);
    const ids = [...html.matchAll(/\bid="([^"]+)"/g)].map((x) => x[1]);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('is deterministic: the same report gives the same bytes', async () => {
    const a = await replayHtml(report);
    const b = await replayHtml(structuredClone(report));
    expect(b).toBe(a);
  });
});

describe('fill report charts', () => {
  const o = twelveTenants();
  const report = simulate({
    ...o,
    mode: 'fill',
    policies: ['fairway', 'static', 'fifo'],
    placements: ['best-fit', 'fragmentation-aware'],
  }).report as FillReport;

  it('draws the three ratios against the requested allocation, one line per run told apart by colour and shape', async () => {
    const html = await fillHtml(report);
    const charts = svgs(html);
    expect(charts).toHaveLength(3);
    for (const [i, title] of [
      'allocated (% of GPUs)',
      'fragmentation (% of free GPUs)',
      'exp. fragmentation (% of free GPUs)',
    ].entries()) {
      expect(texts(charts[i]!)).toEqual(expect.arrayContaining(['requested allocation (% of GPUs)', title]));
      const legend = [...charts[i]!.matchAll(/role-legend-symbol"[^>]*><path ([^>]*)\/>/g)].map((x) => x[1]!);
      expect(legend).toHaveLength(6);
      expect(new Set(legend.map((p) => /fill="([^"]+)"/.exec(p)?.[1])).size).toBe(6);
      expect(new Set(legend.map((p) => /d="([^"]+)"/.exec(p)?.[1])).size).toBe(6);
    }
    expect(html).not.toMatch(/<script|https?:\/\//);
    expect(await fillHtml(report)).toBe(html);
  });
});
