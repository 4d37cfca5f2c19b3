// The inference comparison's report: one row per strategy and seed for a part of the run, the
// issue's targets checked per seed, and the services each seed drew. Markdown, so the same text
// is printed and written; the JSON keeps every figure.
import type { PartSummary } from './metrics.js';
import type { InferenceRun } from './replay.js';
import type { ServiceSpec } from './services.js';
import type { StrategyName } from './strategies.js';

export interface ComparisonReport {
  format: 'fairway-inference-comparison/1';
  command: string;
  commit: string;
  trace: { name: string; jobs: number; trainingGpus: number };
  window: { start: string; tuningDays: number; heldOutDays: number; intervalS: number };
  knobs: Record<string, string | number>;
  seeds: { seed: number; services: ServiceSpec[]; runs: InferenceRun[] }[];
}

const pct = (x: number, d = 1) => `${(x * 100).toFixed(d)}%`;

export function duration(s: number): string {
  if (s < 60) return `${Math.round(s)}s`;
  const m = Math.round(s / 60);
  if (m < 60) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h}h${String(m % 60).padStart(2, '0')}m`;
  return `${Math.floor(h / 24)}d${String(h % 24).padStart(2, '0')}h`;
}

const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);

function partRange(p: PartSummary): string {
  return `${day(p.fromMs)} to ${day(p.toMs - 1)}`;
}

const COLUMNS: [string, 'l' | 'r'][] = [
  ['strategy', 'l'],
  ['seed', 'r'],
  ['SLA', 'r'],
  ['worst service', 'l'],
  ['train wait p50', 'r'],
  ['p99', 'r'],
  ['worst tenant p99', 'l'],
  ['GPU alloc', 'r'],
  ['util', 'r'],
  ['scale events', 'r'],
  ['oscillation (rev + opp)', 'r'],
  ['minimum slots in burst class', 'r'],
  ['training preempted: all / by replicas', 'r'],
  ['GPU-h lost: all / to replicas', 'r'],
  ['replicas preempted', 'l'],
];
const HEADER = `| ${COLUMNS.map(([c]) => c).join(' | ')} |`;
const RULE = `| ${COLUMNS.map(([, a]) => (a === 'r' ? '---:' : '---')).join(' | ')} |`;

function row(strategy: StrategyName, seed: number, p: PartSummary): string {
  const rp = Object.entries(p.replicaPreemptions)
    .map(([c, n]) => `${n} ${c}`)
    .join(', ');
  return [
    '',
    strategy,
    seed,
    pct(p.slaAttainment, 2),
    `${p.worstServiceSla.service} ${pct(p.worstServiceSla.attainment, 2)}`,
    duration(p.waitP50S),
    duration(p.waitP99S),
    p.worstTenantP99 ? `${p.worstTenantP99.tenant} ${duration(p.worstTenantP99.p99S)}` : '–',
    pct(p.allocation),
    pct(p.utilization),
    p.scaleEvents,
    `${p.oscillationWindows} (${p.reversals} + ${p.contendedOpposite})`,
    pct(p.unguaranteedSlotShare),
    `${p.trainingPreemptions} / ${p.trainingPreemptedByReplicas}`,
    `${p.trainingLostGpuHours} / ${p.trainingLostToReplicasGpuHours}`,
    rp || '0',
    '',
  ]
    .join(' | ')
    .trim();
}

export function partTable(r: ComparisonReport, part: 'tuning' | 'heldOut'): string {
  const lines = [HEADER, RULE];
  const order: StrategyName[] = ['coordinated', 'independent', 'static'];
  for (const s of order)
    for (const seed of r.seeds) {
      const run = seed.runs.find((x) => x.strategy === s);
      if (run) lines.push(row(s, seed.seed, run[part]));
    }
  return lines.join('\n');
}

export interface TargetCheck {
  seed: number;
  target: string;
  met: boolean | null;
  detail: string;
}

/** The targets for coordinated, per seed, on the held-out part (null: a strategy was not run). */
export function checkTargets(r: ComparisonReport): TargetCheck[] {
  const out: TargetCheck[] = [];
  for (const { seed, runs } of r.seeds) {
    const get = (s: StrategyName) => runs.find((x) => x.strategy === s)?.heldOut;
    const c = get('coordinated');
    if (!c) continue;
    const st = get('static');
    const ind = get('independent');
    const add = (target: string, met: boolean | null, detail: string) =>
      out.push({ seed, target, met, detail });
    add('service SLA ≥ 99.5%', c.slaAttainment >= 0.995, pct(c.slaAttainment, 2));
    add(
      'GPU allocation ≥ static + 10 points',
      st ? c.allocation >= st.allocation + 0.1 : null,
      st
        ? `${pct(c.allocation)} vs ${pct(st.allocation)} (${((c.allocation - st.allocation) * 100).toFixed(1)} points)`
        : 'static not run',
    );
    add(
      'training p99 wait ≤ static',
      st ? c.waitP99S <= st.waitP99S : null,
      st ? `${duration(c.waitP99S)} vs ${duration(st.waitP99S)}` : 'static not run',
    );
    add(
      'fewer scale events than independent',
      ind ? c.scaleEvents < ind.scaleEvents : null,
      ind ? `${c.scaleEvents} vs ${ind.scaleEvents}` : 'independent not run',
    );
    add(
      'no oscillation window',
      c.oscillationWindows === 0,
      `${c.oscillationWindows} (${c.reversals} reversals + ${c.contendedOpposite} opposite moves under contention)`,
    );
  }
  return out;
}

function targetsTable(r: ComparisonReport): string {
  const lines = [
    '| seed | target (coordinated, held-out part) | met | figures |',
    '| ---: | --- | --- | --- |',
  ];
  for (const t of checkTargets(r))
    lines.push(
      `| ${t.seed} | ${t.target} | ${t.met === null ? 'n/a' : t.met ? 'yes' : 'no'} | ${t.detail} |`,
    );
  return lines.join('\n');
}

function servicesTable(r: ComparisonReport): string {
  const lines = [
    '| seed | service | GPUs/replica | signal | p95 target | static day/night | min day/night (coordinated) | max |',
    '| ---: | --- | ---: | --- | ---: | --- | --- | ---: |',
  ];
  for (const { seed, services } of r.seeds)
    for (const s of services)
      lines.push(
        `| ${seed} | ${s.name} | ${s.gpusPerReplica} | ${s.signal} | ${Math.round(s.targetP95Ms)} ms | ${s.dayReplicas}/${s.nightReplicas} | ${s.dayMinimum}/${s.nightMinimum} | ${s.maxReplicas} |`,
      );
  return lines.join('\n');
}

export function markdownReport(r: ComparisonReport): string {
  const first = r.seeds[0]?.runs[0];
  const held = first?.heldOut;
  const tune = first?.tuning;
  const knobs = Object.entries(r.knobs)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  return [
    `Command: \`${r.command}\` at \`${r.commit}\`.`,
    '',
    `Trace ${r.trace.name}: ${r.trace.jobs} training jobs replayed on ${r.trace.trainingGpus} training GPUs + ${first?.inferenceGpus ?? 0} GPUs added for the services (${first?.capacityGpus ?? 0} in all); services from ${r.window.start}, decisions every ${r.window.intervalS} s; ${knobs}.`,
    '',
    `## Held-out part (${held ? partRange(held) : ''}, ${r.window.heldOutDays} days)`,
    '',
    partTable(r, 'heldOut'),
    '',
    '## Targets',
    '',
    targetsTable(r),
    '',
    `## Tuning part (${tune ? partRange(tune) : ''}, ${r.window.tuningDays} days; includes the services' start)`,
    '',
    partTable(r, 'tuning'),
    '',
    '## Services',
    '',
    servicesTable(r),
    '',
  ].join('\n');
}

/** The JSON file: every figure, keys in a fixed order, nothing from the wall clock. */
export function jsonReport(r: ComparisonReport): string {
  return `${JSON.stringify(r, null, 2)}\n`;
}
