// Terminal output: aligned tables, ages, and the one-line summary of a job's standing.
import type { Job } from './operations.js';

/** Columns padded to their widest cell; numbers (right-aligned columns) listed in `right`. */
export function table(headers: string[], rows: string[][], right: ReadonlySet<number> = new Set()): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (right.has(i) ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(headers), ...rows.map(line)].join('\n');
}

/** 42s, 5m, 3h, 2d: how long ago (or, negative, from now). */
export function duration(ms: number): string {
  const s = Math.round(Math.abs(ms) / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
  return `${Math.floor(s / 86_400)}d${Math.floor((s % 86_400) / 3600)}h`;
}

export function age(iso: string | null | undefined, now = Date.now()): string {
  return iso ? duration(now - Date.parse(iso)) : '-';
}

/** GPU-hours lost, to one decimal (two below 1, so a small loss does not read as none). */
export function lostHours(h: number): string {
  return h === 0 ? '0' : h < 1 ? h.toFixed(2) : h.toFixed(1);
}

export function gpus(n: number): string {
  return Number.isInteger(n) ? String(n) : n.toFixed(3).replace(/0+$/, '');
}

type Standing = Pick<Job, 'state' | 'eta' | 'position' | 'pendingReason'> & {
  preemptionCount?: number;
  lostGpuHours?: number | null;
  exitReason?: string | null;
};

/** "PENDING  #2/5 in queue (3/9 in cohort)  ETA in 4m  WaitingForQuota: …  preempted 1× (2.5 GPU-h lost)" */
export function standing(s: Standing, now = Date.now()): string {
  const parts: string[] = [s.state];
  if (s.state === 'PENDING' && s.position?.inQueue != null) {
    let at = `#${s.position.inQueue}/${s.position.queueLength ?? '?'} in queue`;
    if (s.position.inCohort != null)
      at += ` (#${s.position.inCohort}/${s.position.cohortLength ?? '?'} in cohort)`;
    parts.push(at);
  }
  if (s.state === 'PENDING') {
    const left = s.eta ? Date.parse(s.eta) - now : 0;
    // an ETA just passed (the next cycle has not admitted it yet) reads "due", not "in -3s"
    parts.push(
      s.eta ? `ETA ${s.eta.slice(11, 19)}Z (${left > 0 ? `in ${duration(left)}` : 'due'})` : 'ETA unknown',
    );
  }
  if (s.pendingReason && s.state === 'PENDING')
    parts.push(`${s.pendingReason.code}: ${s.pendingReason.message}`);
  if (s.preemptionCount)
    parts.push(
      `preempted ${s.preemptionCount}×${s.lostGpuHours != null ? ` (${lostHours(s.lostGpuHours)} GPU-h lost)` : ''}`,
    );
  if (s.exitReason && (s.state === 'FAILED' || s.state === 'CANCELLED')) parts.push(`(${s.exitReason})`);
  return parts.join('  ');
}
