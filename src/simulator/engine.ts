// The simulator engine's shared part: what a replay or a fill reads (SimInput) and
// produces (ReplayOutcome, FillOutcome), and how a trace job becomes the core's job spec.
// The loops live in replay.ts and fill.ts.
import { type JobSpec, SchedulerInputError } from '../core/scheduling/index.js';
import type { SimCluster } from './cluster.js';
import type { PodShape } from './fragmentation.js';
import type { GovernanceOutcome } from './governance/types.js';
import { nominalGpus, type SimQueue, type SimQueues } from './queues.js';
import type { BuiltScheduler, PlacementName, PolicyName } from './scheduling-policies.js';
import type { TraceJob } from './trace.js';

export interface SimInput {
  trace: TraceJob[];
  cluster: SimCluster;
  queues: SimQueues;
}

export interface TenantInfo {
  name: string;
  /** Σ nominal GPUs of the tenant's queues (from the queues file, whatever the policy). */
  nominalGpus: number;
  /** Σ fair-share weights of the tenant's queues (default 1 each). */
  weight: number;
}

export interface SimJob {
  id: string;
  line: number;
  tenant: string;
  /** The tenant's queue in the queues file. */
  queue: string;
  gpus: number;
  durationMs: number;
  submitMs: number;
  firstStartMs: number | null;
  endMs: number | null;
  starts: number;
  /** Fitted its queue's unused nominal at submit (see docs/simulator.md). */
  slaEligible: boolean;
  /** What the core's preview said at submit: fit | borrow | preempt | preempt-borrow | pending. */
  previewMode: string;
  /** Core refused the job at submit (e.g. larger than any quota): never runs. */
  rejected?: string;
  /** Still pending once the cycles at its submit instant had settled (the gateway would show it an ETA). */
  pendingAfterSubmit?: boolean;
  /**
   * ETA sampling (ReplayOptions.eta): the core's `explain(id).eta` right after those cycles, on the
   * virtual clock (ms); null when the core says it is unknown. Absent for jobs admitted at submit.
   */
  etaAtSubmit?: number | null;
  /** The core's reason when `etaAtSubmit` is null (e.g. NoDeclaredDuration); 'none' if it gave none. */
  etaUnknownReason?: string;
  /** First start after the ETA was sampled; null while it never started. Set with `etaAtSubmit`. */
  startAfterEtaMs?: number | null;
}

export interface RunSegment {
  job: number;
  tenant: string;
  start: number;
  end: number;
  gpus: number;
  preempted: boolean;
}

export interface PreemptionRecord {
  at: number;
  reason: string;
  victimId: string;
  victimTenant: string;
  preemptorId: string;
  preemptorTenant: string;
  gpus: number;
  lostGpuMs: number;
}

export interface ReplayOutcome {
  kind: 'replay';
  policy: PolicyName;
  placement: PlacementName;
  capacityGpus: number;
  windowStart: number;
  windowEnd: number;
  /** Time of the last event. */
  endMs: number;
  tenants: TenantInfo[];
  jobs: SimJob[];
  segments: RunSegment[];
  preemptions: PreemptionRecord[];
  /** ∫ free GPUs dt and ∫ unusable free GPUs dt over the window, while some pod was pending. */
  frag: { freeGpuMs: number; unusableGpuMs: number };
  /** Whether ETAs were sampled at submit (ReplayOptions.eta). */
  etaSampled: boolean;
  stats: { events: number; cycles: number; previews: number; explains: number; explainMs: number };
  /** Probes, idle reclaim and controller of the run (ReplayOptions.governance). */
  governance?: GovernanceOutcome;
}

export interface FillPoint {
  /** Target requested percentage (50, 80, …). */
  targetPct: number;
  /** Requested GPUs / capacity when the point was taken (first submission reaching the target). */
  requestedPct: number;
  jobsSubmitted: number;
  jobsRunning: number;
  jobsPending: number;
  allocationRatio: number;
  /** Free GPU capacity no pending pod shape can use / free capacity (0 when nothing is pending). */
  fragmentationRatio: number;
  /** FGD-style: Σ over the trace's pod shapes of (share of pods with that shape × free capacity that shape
   * cannot use) / free capacity.
   */
  expectedFragmentationRatio: number;
  freeGpus: number;
  unusableGpus: number;
  preemptions: number;
}

export interface FillOutcome {
  kind: 'fill';
  policy: PolicyName;
  placement: PlacementName;
  seed: number;
  capacityGpus: number;
  points: FillPoint[];
  /** Trace line numbers of the drawn jobs, in order (for reproducibility checks). */
  sample: number[];
  stats: { cycles: number };
}

export type WindowEnd = 'last-submit' | 'last-finish';

/** Map each trace job to its queue in the queues file; errors name the trace line. */
export function resolveQueues(input: SimInput): SimQueue[] {
  const byTenant = new Map<string, SimQueue>();
  const byName = new Map<string, SimQueue>();
  for (const q of input.queues.queues) {
    if (!byTenant.has(q.tenant)) byTenant.set(q.tenant, q);
    byName.set(q.name, q);
  }
  return input.trace.map((j) => {
    if (j.queue !== undefined) {
      const q = byName.get(j.queue);
      if (!q) throw new Error(`trace line ${j.line}: queue '${j.queue}' is not in ${input.queues.file}`);
      if (q.tenant !== j.tenant)
        throw new Error(
          `trace line ${j.line}: queue '${j.queue}' belongs to tenant '${q.tenant}', not '${j.tenant}'`,
        );
      return q;
    }
    const q = byTenant.get(j.tenant);
    if (!q)
      throw new Error(`trace line ${j.line}: tenant '${j.tenant}' has no queue in ${input.queues.file}`);
    return q;
  });
}

export function tenantInfos(queues: SimQueues): TenantInfo[] {
  const m = new Map<string, TenantInfo>();
  for (const q of queues.queues) {
    const t = m.get(q.tenant) ?? { name: q.tenant, nominalGpus: 0, weight: 0 };
    t.nominalGpus += nominalGpus(q);
    t.weight += q.weight ?? 1;
    m.set(q.tenant, t);
  }
  return [...m.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

export function podShape(j: TraceJob): PodShape {
  const s: PodShape = { gpu: j.gpus, cpu: j.cpuMilli ?? 0, memory: j.memoryMib ?? 0 };
  if (j.gpuType !== undefined) s.flavors = [j.gpuType];
  return s;
}

export function toSpec(j: TraceJob, id: string, submitMs: number, b: BuiltScheduler, tq: SimQueue): JobSpec {
  const r = b.route(j, tq);
  const perPod: JobSpec['podSets'][number]['perPod'] = {};
  if (j.gpus > 0) perPod.gpu = j.gpus;
  if (j.cpuMilli) perPod.cpu = j.cpuMilli;
  if (j.memoryMib) perPod.memory = j.memoryMib;
  const ps: JobSpec['podSets'][number] = { name: 'main', count: j.pods, perPod };
  if (j.gpuType !== undefined) ps.flavors = [j.gpuType];
  const spec: JobSpec = {
    id,
    tenant: r.tenant,
    queue: r.queue,
    priorityClass: b.priorityOf(j),
    submitTime: submitMs,
    podSets: [ps],
  };
  const declared = j.declaredDurationMs === undefined ? j.durationMs : j.declaredDurationMs;
  if (declared !== null) spec.expectedDurationMs = declared;
  if (j.resumable) spec.checkpoint = { resumable: true };
  else if (j.checkpointIntervalMs !== undefined) spec.checkpoint = { intervalMs: j.checkpointIntervalMs };
  return spec;
}

/** The core refused the job itself (larger than any quota, bad quantity): it never runs, the run goes on. */
export function isRefusal(e: unknown): e is SchedulerInputError {
  return (
    e instanceof SchedulerInputError && (e.code === 'REQUEST_TOO_LARGE' || e.code === 'INVALID_QUANTITY')
  );
}

export function round6(x: number): number {
  return Math.round(x * 1e6) / 1e6;
}
