import { createHash } from 'node:crypto';
import { allocationChart, fillChart, preemptionChart, waitHistogramChart } from './charts.js';
import type { FillOutcome } from './engine.js';
import {
  GOVERNANCE_HEAD,
  GOVERNANCE_NOTE,
  GOVERNANCE_TENANT_HEAD,
  governanceRows,
  governanceTenantRows,
} from './governance/report.js';
import type { ReplayMetrics } from './metrics.js';

export interface ReportInputs {
  trace: string;
  cluster: string;
  queues: string;
  jobs: number;
  capacityGpus: number;
  nodes: number;
}

export interface ReplayReport {
  format: 'fairway-simulation/1';
  mode: 'replay';
  inputs: ReportInputs;
  slaSeconds: number;
  windowEnd: string;
  runs: ReplayMetrics[];
}

export interface FillRun {
  policy: string;
  placement: string;
  seed: number;
  capacityGpus: number;
  jobsDrawn: number;
  sampleSha256: string;
  points: FillOutcome['points'];
}

export interface FillReport {
  format: 'fairway-simulation/1';
  mode: 'fill';
  inputs: ReportInputs;
  seed: number;
  runs: FillRun[];
}

export type Report = ReplayReport | FillReport;

export function fillRun(o: FillOutcome): FillRun {
  return {
    policy: o.policy,
    placement: o.placement,
    seed: o.seed,
    capacityGpus: o.capacityGpus,
    jobsDrawn: o.sample.length,
    sampleSha256: createHash('sha256').update(o.sample.join(',')).digest('hex'),
    points: o.points,
  };
}

/** Deterministic JSON: objects are built in a fixed key order; no times of the run inside. */
export function reportJson(r: Report): string {
  return `${JSON.stringify(r, null, 2)}\n`;
}

// ---------------------------------------------------------------- terminal

export function fmtDuration(s: number | null): string {
  if (s === null) return '-';
  if (s < 1) return s === 0 ? '0s' : `${s.toFixed(1)}s`;
  if (s < 60) return `${Math.round(s)}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(Math.round(s % 60)).padStart(2, '0')}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
  return `${Math.floor(s / 86400)}d${String(Math.floor((s % 86400) / 3600)).padStart(2, '0')}h`;
}

const pct = (x: number | null): string => (x === null ? '-' : `${(x * 100).toFixed(1)}%`);
const f3 = (x: number | null): string => (x === null ? '-' : x.toFixed(3));

export function table(head: string[], rows: string[][]): string {
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]): string =>
    r.map((c, i) => (i === 0 ? c.padEnd(w[i]!) : c.padStart(w[i]!))).join('  ');
  return [line(head), w.map((x) => '-'.repeat(x)).join('  '), ...rows.map(line)].join('\n');
}

const ETA_HEAD = [
  'policy',
  'placement',
  'pending at submit',
  'with ETA',
  'unknown',
  'measured',
  'abs err p50',
  'p90',
  'p99',
  'signed p50',
  'late / early / exact',
];

/** Signed duration: + the job started after its ETA (optimistic ETA), − before it. */
function fmtSigned(s: number | null): string {
  if (s === null) return '-';
  return s === 0 ? '0s' : `${s > 0 ? '+' : '−'}${fmtDuration(Math.abs(s))}`;
}

/** One row per run: the ETA shown at submit against the actual start (eta.ts). */
function etaRows(runs: readonly ReplayMetrics[]): string[][] | null {
  if (!runs.some((m) => m.etaAtSubmit.sampled)) return null;
  return runs.map((m) => {
    const e = m.etaAtSubmit;
    if (!e.sampled)
      return [m.policy, m.placement, String(e.pendingAtSubmit), 'not sampled', '', '', '', '', '', '', ''];
    const unknown = Object.entries(e.unknownByReason)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ');
    return [
      m.policy,
      m.placement,
      String(e.pendingAtSubmit),
      String(e.withEta),
      unknown ? `${e.unknown} (${unknown})` : String(e.unknown),
      String(e.measured),
      fmtDuration(e.absErrorSeconds.p50),
      fmtDuration(e.absErrorSeconds.p90),
      fmtDuration(e.absErrorSeconds.p99),
      fmtSigned(e.signedErrorSecondsP50),
      `${e.late} / ${e.early} / ${e.exact}`,
    ];
  });
}

/** GPU-hours delivered in the window (Σ tenants' received GPU-time): what lost GPU-hours are compared with.
 *
 */
function deliveredGpuHours(m: ReplayMetrics): number {
  return m.tenants.reduce((a, t) => a + t.gpuHoursReceived, 0);
}

/** Preemptions and GPU-hours lost beside each other, overall and per reason; null when no run preempted. */
function reasonTable(runs: ReplayMetrics[]): { head: string[]; rows: string[][] } | null {
  const reasons = [...new Set(runs.flatMap((m) => Object.keys(m.preemptions.byReason)))].sort();
  if (reasons.length === 0) return null;
  const cell = (c: { count: number; gpuHoursLost: number } | undefined): string =>
    c ? `${c.count} (${c.gpuHoursLost.toFixed(1)})` : '0 (0.0)';
  return {
    head: [
      'policy',
      'placement',
      'preemptions (GPU-h lost)',
      'lost ÷ delivered',
      ...reasons.map((r) => `${r} (GPU-h lost)`),
    ],
    rows: runs.map((m) => {
      const d = deliveredGpuHours(m);
      return [
        m.policy,
        m.placement,
        cell(m.preemptions),
        d > 0 ? pct(m.preemptions.gpuHoursLost / d) : '-',
        ...reasons.map((r) => cell(m.preemptions.byReason[r])),
      ];
    }),
  };
}

const REASON_NOTE =
  "Preemptions by reason, each with the GPU-hours it threw away (work since the victim's last checkpoint; all of its run without one)";

const ETA_NOTE =
  'ETA at submit: explain(id).eta once the cycles at the submit instant settled, for jobs still pending; error = actual start − ETA (+ = started later than shown)';

export function replayTerminal(r: ReplayReport, perTenant = true): string {
  const out: string[] = [];
  out.push(
    `replay of ${r.inputs.jobs} jobs on ${r.inputs.capacityGpus} GPUs (${r.inputs.nodes} nodes); window ends at ${r.windowEnd}`,
  );
  out.push(
    table(
      [
        'policy',
        'placement',
        'alloc',
        'useful',
        'SLA',
        'Jain',
        'wait p50',
        'p95',
        'p99',
        'preempt',
        'GPU-h lost',
        'frag',
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
  if (why) out.push('', `${REASON_NOTE}:`, table(why.head, why.rows));
  const eta = etaRows(r.runs);
  if (eta) out.push('', ETA_NOTE, table(ETA_HEAD, eta));
  const gov = governanceRows(r.runs);
  if (gov) out.push('', `${GOVERNANCE_NOTE}:`, table(GOVERNANCE_HEAD, gov));
  if (perTenant) {
    for (const m of r.runs) {
      out.push('');
      out.push(`${m.policy} / ${m.placement} — per tenant`);
      out.push(
        table(
          [
            'tenant',
            'nominal',
            'jobs',
            'unstarted',
            'wait p50',
            'p99',
            'SLA',
            'recv/entitled',
            'GPU-h recv',
            'preempted',
            'GPU-h lost',
          ],
          m.tenants.map((t) => [
            t.tenant,
            String(t.nominalGpus),
            String(t.jobs),
            String(t.unstarted + t.rejected),
            fmtDuration(t.waitSeconds.p50),
            fmtDuration(t.waitSeconds.p99),
            pct(t.sla.attainment),
            f3(t.fairnessRatio),
            t.gpuHoursReceived.toFixed(0),
            String(t.preemptionsSuffered.count),
            t.preemptionsSuffered.gpuHoursLost.toFixed(1),
          ]),
        ),
      );
      const gt = governanceTenantRows(m);
      if (gt) out.push('', table(GOVERNANCE_TENANT_HEAD, gt));
    }
  }
  return out.join('\n');
}

export function fillTerminal(r: FillReport): string {
  const targets = r.runs[0]?.points.map((p) => p.targetPct) ?? [];
  const out: string[] = [];
  out.push(
    `fill on ${r.inputs.capacityGpus} GPUs (${r.inputs.nodes} nodes), seed ${r.seed}: allocation / fragmentation (pending shapes) / expected fragmentation (trace shapes) at each requested %`,
  );
  out.push(
    table(
      ['policy', 'placement', ...targets.map((t) => `${t}%`)],
      r.runs.map((run) => [
        run.policy,
        run.placement,
        ...run.points.map(
          (p) =>
            `${pct(p.allocationRatio)} / ${pct(p.fragmentationRatio)} / ${pct(p.expectedFragmentationRatio)}`,
        ),
      ]),
    ),
  );
  return out.join('\n');
}

// ---------------------------------------------------------------- HTML

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

// ---------------------------------------------------------------- Markdown

function mdTable(head: string[], rows: string[][]): string {
  return [
    `| ${head.join(' | ')} |`,
    `| ${head.map((_, i) => (i < 2 ? '---' : '---:')).join(' | ')} |`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');
}

export function replayMarkdown(r: ReplayReport, perTenant = false): string {
  const out: string[] = [];
  out.push(
    mdTable(
      [
        'policy',
        'placement',
        'GPU allocation',
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
  if (why) out.push('', `${REASON_NOTE}:`, '', mdTable(why.head, why.rows));
  const eta = etaRows(r.runs);
  if (eta) out.push('', `${ETA_NOTE}:`, '', mdTable(ETA_HEAD, eta));
  const gov = governanceRows(r.runs);
  if (gov) out.push('', `${GOVERNANCE_NOTE}:`, '', mdTable(GOVERNANCE_HEAD, gov));
  if (perTenant) {
    for (const m of r.runs) {
      out.push('', `**${m.policy} / ${m.placement}** per tenant`, '');
      out.push(
        mdTable(
          [
            'tenant',
            'nominal',
            'jobs',
            'unstarted',
            'wait p50',
            'p99',
            'SLA',
            'recv/entitled',
            'GPU-h recv',
            'preempted',
            'GPU-h lost',
          ],
          m.tenants.map((t) => [
            t.tenant,
            String(t.nominalGpus),
            String(t.jobs),
            String(t.unstarted + t.rejected),
            fmtDuration(t.waitSeconds.p50),
            fmtDuration(t.waitSeconds.p99),
            pct(t.sla.attainment),
            f3(t.fairnessRatio),
            t.gpuHoursReceived.toFixed(0),
            String(t.preemptionsSuffered.count),
            t.preemptionsSuffered.gpuHoursLost.toFixed(1),
          ]),
        ),
      );
      const gt = governanceTenantRows(m);
      if (gt) out.push('', mdTable(GOVERNANCE_TENANT_HEAD, gt));
    }
  }
  return `${out.join('\n')}\n`;
}

export function fillMarkdown(r: FillReport): string {
  const targets = r.runs[0]?.points.map((p) => p.targetPct) ?? [];
  return `${mdTable(
    ['policy', 'placement', ...targets.map((t) => `${t}% requested`)],
    r.runs.map((run) => [
      run.policy,
      run.placement,
      ...run.points.map(
        (p) =>
          `${pct(p.allocationRatio)} / ${pct(p.fragmentationRatio)} / ${pct(p.expectedFragmentationRatio)}`,
      ),
    ]),
  )}\n`;
}
