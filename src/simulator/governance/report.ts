// The report's governance tables: only for runs made with probes, so a report without
// them keeps its earlier text byte for byte.
import type { ReplayMetrics } from '../metrics.js';

const pct = (x: number | null): string => (x === null ? '-' : `${(x * 100).toFixed(1)}%`);

export const GOVERNANCE_NOTE =
  'Probes, idle reclaim and controller: utilization = Σ GPUs × time × probed utilization inside the window ÷ (GPUs × window) (allocation × probed utilization); idle tail = GPU-h held by jobs in their idle tail; flags → reclaimed (ended: their work was done) and GPU-h freed; controller windows and adjustments by reason';

export const GOVERNANCE_HEAD = [
  'policy',
  'placement',
  'alloc',
  'utilization',
  'useful util',
  'util of alloc',
  'idle tail GPU-h',
  'idle flags',
  'reclaimed',
  'GPU-h freed',
  'windows',
  'adjustments (lend idle / tighten lend / tighten borrow / relax borrow)',
];

/** One row per run with governance; null when no run has it. */
export function governanceRows(runs: readonly ReplayMetrics[]): string[][] | null {
  const with_ = runs.filter((m) => m.governance);
  if (with_.length === 0) return null;
  return with_.map((m) => {
    const g = m.governance!;
    const r = g.adjustmentsByReason;
    return [
      m.policy,
      m.placement,
      pct(m.allocationRatio),
      pct(g.utilization),
      pct(g.usefulUtilization),
      pct(g.meanUtilizationOfAllocated),
      g.idleTailGpuHours.toFixed(0),
      g.idleReclaim ? String(g.idle.flagged) : 'off',
      g.idleReclaim ? String(g.idle.reclaimed) : '-',
      g.idleReclaim ? g.idle.gpuHoursFreed.toFixed(0) : '-',
      g.controller ? String(g.controllerWindows) : 'off',
      g.controller
        ? `${g.adjustments} (${r.LEND_IDLE} / ${r.TIGHTEN_LENDING} / ${r.TIGHTEN_BORROWING} / ${r.RELAX_BORROWING})`
        : '-',
    ];
  });
}

export const GOVERNANCE_TENANT_HEAD = [
  'tenant',
  'policy',
  'utilization',
  'util of held',
  'idle flags',
  'reclaimed',
  'GPU-h freed',
];

export function governanceTenantRows(m: ReplayMetrics): string[][] | null {
  const g = m.governance;
  if (!g) return null;
  return g.tenants.map((t) => [
    t.tenant,
    t.policy,
    pct(t.utilization),
    pct(t.meanUtilization),
    String(t.idle.flagged),
    String(t.idle.reclaimed),
    t.idle.gpuHoursFreed.toFixed(0),
  ]);
}
