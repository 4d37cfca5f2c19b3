// Cells and rows the terminal, HTML and Markdown reports share: number formats, the preemption-reason and
// ETA tables with their notes.
import type { ReplayMetrics } from './metrics.js';

export function fmtDuration(s: number | null): string {
  if (s === null) return '-';
  if (s < 1) return s === 0 ? '0s' : `${s.toFixed(1)}s`;
  if (s < 60) return `${Math.round(s)}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(Math.round(s % 60)).padStart(2, '0')}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
  return `${Math.floor(s / 86400)}d${String(Math.floor((s % 86400) / 3600)).padStart(2, '0')}h`;
}

export const pct = (x: number | null): string => (x === null ? '-' : `${(x * 100).toFixed(1)}%`);
export const f3 = (x: number | null): string => (x === null ? '-' : x.toFixed(3));

export const ETA_HEAD = [
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
export function etaRows(runs: readonly ReplayMetrics[]): string[][] | null {
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
export function reasonTable(runs: ReplayMetrics[]): { head: string[]; rows: string[][] } | null {
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

export const REASON_NOTE =
  "Preemptions by reason, each with the GPU-hours it threw away (work since the victim's last checkpoint; all of its run without one)";

export const ETA_NOTE =
  'ETA at submit: explain(id).eta once the cycles at the submit instant settled, for jobs still pending; error = actual start − ETA (+ = started later than shown)';
