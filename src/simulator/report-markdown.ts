// The report as Markdown tables.
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
