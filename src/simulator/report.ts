import { createHash } from 'node:crypto';
import type { FillOutcome } from './engine.js';
import { WAIT_BUCKETS, type ReplayMetrics } from './metrics.js';

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
  return JSON.stringify(r, null, 2) + '\n';
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
  const line = (r: string[]): string => r.map((c, i) => (i === 0 ? c.padEnd(w[i]!) : c.padStart(w[i]!))).join('  ');
  return [line(head), w.map((x) => '-'.repeat(x)).join('  '), ...rows.map(line)].join('\n');
}

const ETA_HEAD = ['policy', 'placement', 'pending at submit', 'with ETA', 'unknown', 'measured', 'abs err p50', 'p90', 'p99', 'signed p50', 'late / early / exact'];

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
    if (!e.sampled) return [m.policy, m.placement, String(e.pendingAtSubmit), 'not sampled', '', '', '', '', '', '', ''];
    const unknown = Object.entries(e.unknownByReason).map(([k, v]) => `${k} ${v}`).join(', ');
    return [m.policy, m.placement, String(e.pendingAtSubmit), String(e.withEta), unknown ? `${e.unknown} (${unknown})` : String(e.unknown), String(e.measured), fmtDuration(e.absErrorSeconds.p50), fmtDuration(e.absErrorSeconds.p90), fmtDuration(e.absErrorSeconds.p99), fmtSigned(e.signedErrorSecondsP50), `${e.late} / ${e.early} / ${e.exact}`];
  });
}

const ETA_NOTE = 'ETA at submit: explain(id).eta once the cycles at the submit instant settled, for jobs still pending; error = actual start − ETA (+ = started later than shown)';

export function replayTerminal(r: ReplayReport, perTenant = true): string {
  const out: string[] = [];
  out.push(`replay of ${r.inputs.jobs} jobs on ${r.inputs.capacityGpus} GPUs (${r.inputs.nodes} nodes); window ends at ${r.windowEnd}`);
  out.push(
    table(
      ['policy', 'placement', 'alloc', 'useful', 'SLA', 'Jain', 'wait p50', 'p95', 'p99', 'preempt', 'GPU-h lost', 'frag', 'unstarted'],
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
  const eta = etaRows(r.runs);
  if (eta) out.push('', ETA_NOTE, table(ETA_HEAD, eta));
  if (perTenant) {
    for (const m of r.runs) {
      out.push('');
      out.push(`${m.policy} / ${m.placement} — per tenant`);
      out.push(
        table(
          ['tenant', 'nominal', 'jobs', 'unstarted', 'wait p50', 'p99', 'SLA', 'recv/entitled', 'GPU-h recv', 'preempted', 'GPU-h lost'],
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
    }
  }
  return out.join('\n');
}

export function fillTerminal(r: FillReport): string {
  const targets = r.runs[0]?.points.map((p) => p.targetPct) ?? [];
  const out: string[] = [];
  out.push(`fill on ${r.inputs.capacityGpus} GPUs (${r.inputs.nodes} nodes), seed ${r.seed}: allocation / fragmentation (pending shapes) / expected fragmentation (trace shapes) at each requested %`);
  out.push(
    table(
      ['policy', 'placement', ...targets.map((t) => `${t}%`)],
      r.runs.map((run) => [run.policy, run.placement, ...run.points.map((p) => `${pct(p.allocationRatio)} / ${pct(p.fragmentationRatio)} / ${pct(p.expectedFragmentationRatio)}`)]),
    ),
  );
  return out.join('\n');
}

// ---------------------------------------------------------------- HTML

const PALETTE = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac', '#1f77b4', '#aec7e8', '#ffbb78', '#98df8a', '#c5b0d5', '#c49c94', '#f7b6d2', '#dbdb8d', '#9edae5', '#393b79'];
const REASON_COLORS: Record<string, string> = { reclaim: '#e15759', priority: '#4e79a7', 'fair-share': '#f28e2b', 'window-closed': '#59a14f', idle: '#9c755f' };

export function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

const n1 = (x: number): string => (Math.round(x * 10) / 10).toString();

const anchor = (f: number): string => (f === 0 ? 'start' : f === 1 ? 'end' : 'middle');

/** Axis label for an offset of `ms` on an axis that spans `spanMs`. */
export function axisTime(ms: number, spanMs: number): string {
  if (spanMs >= 2 * 86_400_000) return `${n1(ms / 86_400_000)}d`;
  if (spanMs >= 2 * 3_600_000) return `${n1(ms / 3_600_000)}h`;
  if (spanMs >= 120_000) return `${n1(ms / 60_000)}m`;
  return `${n1(ms / 1000)}s`;
}

function legend(items: { label: string; color: string }[]): string {
  return `<div class="legend">${items.map((i) => `<span><i style="background:${i.color}"></i>${esc(i.label)}</span>`).join('')}</div>`;
}

function stackedArea(m: ReplayMetrics, W = 760, Hh = 220): string {
  const tl = m.timeline;
  const nb = tl.allocation[0]?.length ?? 0;
  if (nb === 0) return '<p>no data</p>';
  const pad = { l: 48, r: 8, t: 8, b: 24 };
  const iw = W - pad.l - pad.r;
  const ih = Hh - pad.t - pad.b;
  const cap = m.capacityGpus;
  const x = (b: number): number => pad.l + (b / nb) * iw;
  const y = (v: number): number => pad.t + ih - (Math.min(v, cap) / cap) * ih;
  const base = new Array<number>(nb).fill(0);
  const paths: string[] = [];
  tl.allocation.forEach((series, ti) => {
    const top = series.map((v, b) => base[b]! + v);
    let d = '';
    for (let b = 0; b < nb; b++) d += `${b === 0 ? 'M' : 'L'}${n1(x(b))},${n1(y(top[b]!))}L${n1(x(b + 1))},${n1(y(top[b]!))}`;
    for (let b = nb - 1; b >= 0; b--) d += `L${n1(x(b + 1))},${n1(y(base[b]!))}L${n1(x(b))},${n1(y(base[b]!))}`;
    paths.push(`<path d="${d}Z" fill="${PALETTE[ti % PALETTE.length]}" stroke="none"><title>${esc(tl.tenants[ti]!)}</title></path>`);
    for (let b = 0; b < nb; b++) base[b] = top[b]!;
  });
  const span = nb * tl.bucketMs;
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => `<text x="${n1(pad.l + f * iw)}" y="${Hh - 6}" text-anchor="${anchor(f)}">${axisTime(f * span, span)}</text>`);
  const yt = [0, 0.5, 1].map((f) => `<text x="${pad.l - 4}" y="${n1(y(f * cap) + 4)}" text-anchor="end">${Math.round(f * cap)}</text>`);
  const win = pad.l + ((m.window.endMs - tl.startMs) / (nb * tl.bucketMs)) * iw;
  return `<svg viewBox="0 0 ${W} ${Hh}" width="${W}" height="${Hh}" role="img" aria-label="GPU allocation per tenant">${paths.join('')}<line x1="${pad.l}" x2="${pad.l + iw}" y1="${y(cap)}" y2="${y(cap)}" stroke="#333" stroke-dasharray="4 3"/><line x1="${n1(win)}" x2="${n1(win)}" y1="${pad.t}" y2="${pad.t + ih}" stroke="#999" stroke-dasharray="2 2"><title>end of measurement window</title></line><line x1="${pad.l}" x2="${pad.l}" y1="${pad.t}" y2="${pad.t + ih}" stroke="#333"/>${ticks.join('')}${yt.join('')}</svg>${legend(tl.tenants.map((t, i) => ({ label: t, color: PALETTE[i % PALETTE.length]! })))}`;
}

function waitHistogram(runs: ReplayMetrics[], W = 760, Hh = 240): string {
  const pad = { l: 48, r: 8, t: 8, b: 24 };
  const iw = W - pad.l - pad.r;
  const ih = Hh - pad.t - pad.b;
  const nbk = WAIT_BUCKETS.length;
  const gw = iw / nbk;
  const bw = (gw * 0.8) / Math.max(1, runs.length);
  const bars: string[] = [];
  runs.forEach((m, ri) => {
    const total = m.waitHistogram.reduce((s, x) => s + x, 0) || 1;
    m.waitHistogram.forEach((c, b) => {
      const f = c / total;
      const h = f * ih;
      bars.push(`<rect x="${n1(pad.l + b * gw + gw * 0.1 + ri * bw)}" y="${n1(pad.t + ih - h)}" width="${n1(bw)}" height="${n1(h)}" fill="${PALETTE[ri % PALETTE.length]}"><title>${esc(`${m.policy}/${m.placement} ${WAIT_BUCKETS[b]!.label}: ${c} jobs (${(f * 100).toFixed(1)}%)`)}</title></rect>`);
    });
  });
  const labels = WAIT_BUCKETS.map((wb, b) => `<text x="${n1(pad.l + b * gw + gw / 2)}" y="${Hh - 6}" text-anchor="middle">${esc(wb.label)}</text>`);
  const yt = [0, 0.5, 1].map((f) => `<text x="${pad.l - 4}" y="${n1(pad.t + ih - f * ih + 4)}" text-anchor="end">${f * 100}%</text>`);
  return `<svg viewBox="0 0 ${W} ${Hh}" width="${W}" height="${Hh}" role="img" aria-label="wait time distribution">${bars.join('')}<line x1="${pad.l}" x2="${pad.l + iw}" y1="${pad.t + ih}" y2="${pad.t + ih}" stroke="#333"/>${labels.join('')}${yt.join('')}</svg>${legend(runs.map((m, i) => ({ label: `${m.policy} / ${m.placement}`, color: PALETTE[i % PALETTE.length]! })))}`;
}

function preemptionChart(m: ReplayMetrics, W = 760, Hh = 140): string {
  const tl = m.timeline;
  const nb = tl.preemptions.length;
  const totals = tl.preemptions.map((r) => Object.values(r).reduce((s, x) => s + x, 0));
  const max = Math.max(1, ...totals);
  if (totals.every((t) => t === 0)) return '<p class="muted">no preemptions</p>';
  const pad = { l: 48, r: 8, t: 8, b: 24 };
  const iw = W - pad.l - pad.r;
  const ih = Hh - pad.t - pad.b;
  const bw = iw / nb;
  const reasons = [...new Set(tl.preemptions.flatMap((r) => Object.keys(r)))].sort();
  const bars: string[] = [];
  tl.preemptions.forEach((r, b) => {
    let acc = 0;
    for (const reason of reasons) {
      const c = r[reason] ?? 0;
      if (!c) continue;
      const h = (c / max) * ih;
      bars.push(`<rect x="${n1(pad.l + b * bw)}" y="${n1(pad.t + ih - acc - h)}" width="${n1(Math.max(1, bw - 0.5))}" height="${n1(h)}" fill="${REASON_COLORS[reason] ?? '#666'}"><title>${esc(`${reason}: ${c}`)}</title></rect>`);
      acc += h;
    }
  });
  const span = nb * tl.bucketMs;
  const ticks = [0, 0.5, 1].map((f) => `<text x="${n1(pad.l + f * iw)}" y="${Hh - 6}" text-anchor="${anchor(f)}">${axisTime(f * span, span)}</text>`);
  return `<svg viewBox="0 0 ${W} ${Hh}" width="${W}" height="${Hh}" role="img" aria-label="preemptions over time">${bars.join('')}<line x1="${pad.l}" x2="${pad.l + iw}" y1="${pad.t + ih}" y2="${pad.t + ih}" stroke="#333"/>${ticks.join('')}<text x="${pad.l - 4}" y="${pad.t + 8}" text-anchor="end">${max}</text></svg>${legend(reasons.map((r) => ({ label: r, color: REASON_COLORS[r] ?? '#666' })))}`;
}

function htmlTable(head: string[], rows: string[][]): string {
  return `<table><thead><tr>${head.map((h) => `<th>${esc(h)}</th>`).join('')}</tr></thead><tbody>${rows.map((r) => `<tr>${r.map((c) => `<td>${esc(c)}</td>`).join('')}</tr>`).join('')}</tbody></table>`;
}

const CSS = `body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1100px}table{border-collapse:collapse;margin:8px 0 16px}th,td{border:1px solid #ddd;padding:3px 8px;text-align:right}th:first-child,td:first-child{text-align:left}th{background:#f4f4f4}svg{font:11px sans-serif;display:block}.legend span{display:inline-block;margin:2px 10px 2px 0;font-size:12px}.legend i{display:inline-block;width:10px;height:10px;margin-right:4px}.muted{color:#888}h2{margin-top:32px;border-bottom:1px solid #ccc}`;

function page(title: string, body: string): string {
  return `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>${esc(title)}</title><style>${CSS}</style></head><body>${body}</body></html>\n`;
}

export function replayHtml(r: ReplayReport): string {
  const parts: string[] = [];
  parts.push(`<h1>Fairway simulation — replay</h1><p>${esc(`${r.inputs.jobs} jobs from ${r.inputs.trace} on ${r.inputs.capacityGpus} GPUs (${r.inputs.nodes} nodes, ${r.inputs.cluster}), queues ${r.inputs.queues}; SLA = start within ${r.slaSeconds}s; measurement window ends at ${r.windowEnd}.`)}</p>`);
  parts.push(
    htmlTable(
      ['policy', 'placement', 'allocation', 'useful allocation', 'SLA attainment', 'Jain', 'wait p50', 'p95', 'p99', 'preemptions', 'GPU-h lost', 'fragmentation', 'unstarted'],
      r.runs.map((m) => [m.policy, m.placement, pct(m.allocationRatio), pct(m.usefulAllocationRatio), pct(m.sla.attainment), f3(m.jainIndex), fmtDuration(m.waitSeconds.p50), fmtDuration(m.waitSeconds.p95), fmtDuration(m.waitSeconds.p99), String(m.preemptions.count), m.preemptions.gpuHoursLost.toFixed(1), pct(m.fragmentationRatio), String(m.unstarted + m.rejected)]),
    ),
  );
  const eta = etaRows(r.runs);
  if (eta) parts.push('<h2>ETA at submit</h2>', `<p>${esc(ETA_NOTE)}.</p>`, htmlTable(ETA_HEAD, eta));
  parts.push('<h2>Wait-time distribution</h2>', waitHistogram(r.runs));
  for (const m of r.runs) {
    parts.push(`<h2>${esc(`${m.policy} / ${m.placement}`)}</h2>`);
    parts.push('<h3>GPU allocation over time per tenant</h3>', stackedArea(m));
    parts.push('<h3>Preemptions over time</h3>', preemptionChart(m));
    parts.push(
      '<h3>Per tenant</h3>',
      htmlTable(
        ['tenant', 'nominal GPUs', 'jobs', 'unstarted', 'wait p50', 'p95', 'p99', 'SLA', 'recv/entitled', 'GPU-h received', 'GPU-h entitled', 'preempted', 'GPU-h lost'],
        m.tenants.map((t) => [t.tenant, String(t.nominalGpus), String(t.jobs), String(t.unstarted + t.rejected), fmtDuration(t.waitSeconds.p50), fmtDuration(t.waitSeconds.p95), fmtDuration(t.waitSeconds.p99), pct(t.sla.attainment), f3(t.fairnessRatio), t.gpuHoursReceived.toFixed(0), t.gpuHoursEntitled.toFixed(0), String(t.preemptionsSuffered.count), t.preemptionsSuffered.gpuHoursLost.toFixed(1)]),
      ),
    );
  }
  return page('Fairway simulation — replay', parts.join('\n'));
}

function fillChart(r: FillReport, key: 'allocationRatio' | 'fragmentationRatio' | 'expectedFragmentationRatio', W = 760, Hh = 220): string {
  const pad = { l: 48, r: 8, t: 8, b: 24 };
  const iw = W - pad.l - pad.r;
  const ih = Hh - pad.t - pad.b;
  const targets = r.runs[0]?.points.map((p) => p.targetPct) ?? [];
  const minT = Math.min(...targets);
  const maxT = Math.max(...targets);
  const x = (t: number): number => pad.l + 24 + (maxT > minT ? (t - minT) / (maxT - minT) : 0.5) * (iw - 48);
  const y = (v: number): number => pad.t + ih - v * ih;
  const lines = r.runs.map((run, i) => {
    const pts = run.points.map((p) => `${n1(x(p.targetPct))},${n1(y(p[key]))}`).join(' ');
    const dots = run.points.map((p) => `<circle cx="${n1(x(p.targetPct))}" cy="${n1(y(p[key]))}" r="3" fill="${PALETTE[i % PALETTE.length]}"><title>${esc(`${run.policy}/${run.placement} @${p.targetPct}%: ${(p[key] * 100).toFixed(1)}%`)}</title></circle>`).join('');
    return `<polyline points="${pts}" fill="none" stroke="${PALETTE[i % PALETTE.length]}" stroke-width="2"/>${dots}`;
  });
  const xt = targets.map((t) => `<text x="${n1(x(t))}" y="${Hh - 6}" text-anchor="middle">${t}%</text>`);
  const yt = [0, 0.5, 1].map((f) => `<text x="${pad.l - 4}" y="${n1(y(f) + 4)}" text-anchor="end">${f * 100}%</text>`);
  return `<svg viewBox="0 0 ${W} ${Hh}" width="${W}" height="${Hh}" role="img" aria-label="${key}">${lines.join('')}<line x1="${pad.l}" x2="${pad.l + iw}" y1="${pad.t + ih}" y2="${pad.t + ih}" stroke="#333"/>${xt.join('')}${yt.join('')}</svg>${legend(r.runs.map((run, i) => ({ label: `${run.policy} / ${run.placement}`, color: PALETTE[i % PALETTE.length]! })))}`;
}

export function fillHtml(r: FillReport): string {
  const targets = r.runs[0]?.points.map((p) => p.targetPct) ?? [];
  const parts = [
    `<h1>Fairway simulation — fill</h1><p>${esc(`Jobs drawn with seed ${r.seed} from ${r.inputs.trace} (${r.inputs.jobs} jobs), never finishing, on ${r.inputs.capacityGpus} GPUs (${r.inputs.nodes} nodes).`)}</p>`,
    htmlTable(['policy', 'placement', ...targets.map((t) => `alloc @${t}%`), ...targets.map((t) => `frag @${t}%`), ...targets.map((t) => `exp. frag @${t}%`)], r.runs.map((run) => [run.policy, run.placement, ...run.points.map((p) => pct(p.allocationRatio)), ...run.points.map((p) => pct(p.fragmentationRatio)), ...run.points.map((p) => pct(p.expectedFragmentationRatio))])),
    '<h2>Allocation ratio vs requested</h2>',
    fillChart(r, 'allocationRatio'),
    '<h2>Fragmentation ratio (pending shapes) vs requested</h2>',
    fillChart(r, 'fragmentationRatio'),
    '<h2>Expected fragmentation ratio (trace shapes by popularity) vs requested</h2>',
    fillChart(r, 'expectedFragmentationRatio'),
  ];
  return page('Fairway simulation — fill', parts.join('\n'));
}

// ---------------------------------------------------------------- Markdown

function mdTable(head: string[], rows: string[][]): string {
  return [`| ${head.join(' | ')} |`, `| ${head.map((_, i) => (i < 2 ? '---' : '---:')).join(' | ')} |`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

export function replayMarkdown(r: ReplayReport, perTenant = false): string {
  const out: string[] = [];
  out.push(
    mdTable(
      ['policy', 'placement', 'GPU allocation', 'useful allocation', 'SLA attainment', 'Jain', 'wait p50', 'p95', 'p99', 'preemptions', 'GPU-h lost', 'fragmentation', 'unstarted'],
      r.runs.map((m) => [m.policy, m.placement, pct(m.allocationRatio), pct(m.usefulAllocationRatio), pct(m.sla.attainment), f3(m.jainIndex), fmtDuration(m.waitSeconds.p50), fmtDuration(m.waitSeconds.p95), fmtDuration(m.waitSeconds.p99), String(m.preemptions.count), m.preemptions.gpuHoursLost.toFixed(1), pct(m.fragmentationRatio), String(m.unstarted + m.rejected)]),
    ),
  );
  const eta = etaRows(r.runs);
  if (eta) out.push('', `${ETA_NOTE}:`, '', mdTable(ETA_HEAD, eta));
  if (perTenant) {
    for (const m of r.runs) {
      out.push('', `**${m.policy} / ${m.placement}** per tenant`, '');
      out.push(
        mdTable(
          ['tenant', 'nominal', 'jobs', 'unstarted', 'wait p50', 'p99', 'SLA', 'recv/entitled', 'GPU-h recv', 'preempted', 'GPU-h lost'],
          m.tenants.map((t) => [t.tenant, String(t.nominalGpus), String(t.jobs), String(t.unstarted + t.rejected), fmtDuration(t.waitSeconds.p50), fmtDuration(t.waitSeconds.p99), pct(t.sla.attainment), f3(t.fairnessRatio), t.gpuHoursReceived.toFixed(0), String(t.preemptionsSuffered.count), t.preemptionsSuffered.gpuHoursLost.toFixed(1)]),
        ),
      );
    }
  }
  return out.join('\n') + '\n';
}

export function fillMarkdown(r: FillReport): string {
  const targets = r.runs[0]?.points.map((p) => p.targetPct) ?? [];
  return (
    mdTable(
      ['policy', 'placement', ...targets.map((t) => `${t}% requested`)],
      r.runs.map((run) => [run.policy, run.placement, ...run.points.map((p) => `${pct(p.allocationRatio)} / ${pct(p.fragmentationRatio)} / ${pct(p.expectedFragmentationRatio)}`)]),
    ) + '\n'
  );
}
