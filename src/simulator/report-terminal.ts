// The report as terminal text.
import {
  GOVERNANCE_HEAD,
  GOVERNANCE_NOTE,
  GOVERNANCE_TENANT_HEAD,
  governanceRows,
  governanceTenantRows,
} from './governance/report.js';
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

export function table(head: string[], rows: string[][]): string {
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]): string =>
    r.map((c, i) => (i === 0 ? c.padEnd(w[i]!) : c.padStart(w[i]!))).join('  ');
  return [line(head), w.map((x) => '-'.repeat(x)).join('  '), ...rows.map(line)].join('\n');
}

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
