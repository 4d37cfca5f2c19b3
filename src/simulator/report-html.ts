// The report as a self-contained HTML page, charts inline.
import { fillChart } from './charts-fill.js';
import { allocationChart, preemptionChart, waitHistogramChart } from './charts-replay.js';
import { GOVERNANCE_HEAD, GOVERNANCE_NOTE, governanceRows } from './governance/report.js';
import {
  ETA_HEAD,
  ETA_NOTE,
  etaRows,
  f3,
  fmtDuration,
  pct,
  REASON_NOTE,
  reasonTable,
} from './report-cells.js';
import type { FillReport, ReplayReport } from './report-json.js';

export function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function htmlTable(head: string[], rows: string[][]): string {
  return `<table><thead><tr>${head.map((h) => `<th>${esc(h)}</th>`).join('')}</tr></thead><tbody>${rows.map((r) => `<tr>${r.map((c) => `<td>${esc(c)}</td>`).join('')}</tr>`).join('')}</tbody></table>`;
}

const CSS = `body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1100px}table{border-collapse:collapse;margin:8px 0 16px}th,td{border:1px solid #ddd;padding:3px 8px;text-align:right}th:first-child,td:first-child{text-align:left}th{background:#f4f4f4}svg{display:block;max-width:100%;height:auto;margin:4px 0 12px}.muted{color:#888}h2{margin-top:32px;border-bottom:1px solid #ccc}`;

function page(title: string, body: string): string {
  return `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>${esc(title)}</title><style>${CSS}</style></head><body>${body}</body></html>\n`;
}

/** The replay page; async because vega renders the charts asynchronously. */
export async function replayHtml(r: ReplayReport): Promise<string> {
  const parts: string[] = [];
  parts.push(
    `<h1>Fairway simulation — replay</h1><p>${esc(`${r.inputs.jobs} jobs from ${r.inputs.trace} on ${r.inputs.capacityGpus} GPUs (${r.inputs.nodes} nodes, ${r.inputs.cluster}), queues ${r.inputs.queues}; SLA = start within ${r.slaSeconds}s; measurement window ends at ${r.windowEnd}.`)}</p>`,
  );
  parts.push(
    htmlTable(
      [
        'policy',
        'placement',
        'allocation',
        'useful allocation',
        'SLA attainment',
        'Jain',
        'wait p50',
        'p95',
        'p99',
        'preemptions',
        'GPU-h lost',
        'fragmentation',
        'unstarted',
      ],
      r.runs.map((m) => [
        m.policy,
        m.placement,
        pct(m.allocationRatio),
        pct(m.usefulAllocationRatio),
        pct(m.sla.attainment),
        f3(m.jainIndex),
        fmtDuration(m.waitSeconds.p50),
        fmtDuration(m.waitSeconds.p95),
        fmtDuration(m.waitSeconds.p99),
        String(m.preemptions.count),
        m.preemptions.gpuHoursLost.toFixed(1),
        pct(m.fragmentationRatio),
        String(m.unstarted + m.rejected),
      ]),
    ),
  );
  const why = reasonTable(r.runs);
  if (why)
    parts.push(
      '<h2>Preemptions by reason</h2>',
      `<p>${esc(REASON_NOTE)}.</p>`,
      htmlTable(why.head, why.rows),
    );
  const eta = etaRows(r.runs);
  if (eta) parts.push('<h2>ETA at submit</h2>', `<p>${esc(ETA_NOTE)}.</p>`, htmlTable(ETA_HEAD, eta));
  const gov = governanceRows(r.runs);
  if (gov)
    parts.push('<h2>Governance</h2>', `<p>${esc(GOVERNANCE_NOTE)}.</p>`, htmlTable(GOVERNANCE_HEAD, gov));
  parts.push('<h2>Wait-time distribution</h2>', await waitHistogramChart(r.runs, 'wait'));
  for (const [i, m] of r.runs.entries()) {
    parts.push(`<h2>${esc(`${m.policy} / ${m.placement}`)}</h2>`);
    parts.push('<h3>GPU allocation over time per tenant</h3>', await allocationChart(m, `alloc${i}`));
    parts.push('<h3>Preemptions over time</h3>', await preemptionChart(m, `preempt${i}`));
    parts.push(
      '<h3>Per tenant</h3>',
      htmlTable(
        [
          'tenant',
          'nominal GPUs',
          'jobs',
          'unstarted',
          'wait p50',
          'p95',
          'p99',
          'SLA',
          'recv/entitled',
          'GPU-h received',
          'GPU-h entitled',
          'preempted',
          'GPU-h lost',
        ],
        m.tenants.map((t) => [
          t.tenant,
          String(t.nominalGpus),
          String(t.jobs),
          String(t.unstarted + t.rejected),
          fmtDuration(t.waitSeconds.p50),
          fmtDuration(t.waitSeconds.p95),
          fmtDuration(t.waitSeconds.p99),
          pct(t.sla.attainment),
          f3(t.fairnessRatio),
          t.gpuHoursReceived.toFixed(0),
          t.gpuHoursEntitled.toFixed(0),
          String(t.preemptionsSuffered.count),
          t.preemptionsSuffered.gpuHoursLost.toFixed(1),
        ]),
      ),
    );
  }
  return page('Fairway simulation — replay', parts.join('\n'));
}

/** The fill page; async like replayHtml. */
export async function fillHtml(r: FillReport): Promise<string> {
  const targets = r.runs[0]?.points.map((p) => p.targetPct) ?? [];
  const parts = [
    `<h1>Fairway simulation — fill</h1><p>${esc(`Jobs drawn with seed ${r.seed} from ${r.inputs.trace} (${r.inputs.jobs} jobs), never finishing, on ${r.inputs.capacityGpus} GPUs (${r.inputs.nodes} nodes).`)}</p>`,
    htmlTable(
      [
        'policy',
        'placement',
        ...targets.map((t) => `alloc @${t}%`),
        ...targets.map((t) => `frag @${t}%`),
        ...targets.map((t) => `exp. frag @${t}%`),
      ],
      r.runs.map((run) => [
        run.policy,
        run.placement,
        ...run.points.map((p) => pct(p.allocationRatio)),
        ...run.points.map((p) => pct(p.fragmentationRatio)),
        ...run.points.map((p) => pct(p.expectedFragmentationRatio)),
      ]),
    ),
    '<h2>Allocation ratio vs requested</h2>',
    await fillChart(r.runs, 'allocationRatio', 'fill-alloc'),
    '<h2>Fragmentation ratio (pending shapes) vs requested</h2>',
    await fillChart(r.runs, 'fragmentationRatio', 'fill-frag'),
    '<h2>Expected fragmentation ratio (trace shapes by popularity) vs requested</h2>',
    await fillChart(r.runs, 'expectedFragmentationRatio', 'fill-expfrag'),
  ];
  return page('Fairway simulation — fill', parts.join('\n'));
}
