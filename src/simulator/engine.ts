import { SchedulerInputError, type Admission, type JobSpec, type NodeStatus, type Preemption } from '../core/index.js';
import { totalGpus, type SimCluster } from './cluster.js';
import { fragmentation, shapeKey, unitsInUse, type PodShape } from './fragmentation.js';
import { MinHeap } from './heap.js';
import { NominalBook } from './nominal-book.js';
import { PendingShapes } from './pending-shapes.js';
import { buildScheduler, type BuiltScheduler, type PlacementName, type PolicyName } from './policies.js';
import { Prng } from './prng.js';
import { nominalGpus, type SimQueue, type SimQueues } from './queues.js';
import { jobGpus, type TraceJob } from './trace.js';

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
  /** FGD-style: Σ over the trace's pod shapes of (share of pods with that shape × free capacity that shape cannot use) / free capacity. */
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

export interface ReplayOptions {
  policy: PolicyName;
  placement: PlacementName;
  /** Measurement window end (start is always the first submit). Default last-submit. */
  windowEnd?: WindowEnd;
  /** Call the core's preview at each submit (default true). */
  preview?: boolean;
  /**
   * Sample the core's ETA (explain) for each job still pending after its submit instant
   * (default false: on the Philly trace it makes a replay 4–9 times slower).
   */
  eta?: boolean;
  /** Called every `progressEvery` submitted jobs (default 5000) with jobs submitted so far and the virtual time. */
  onProgress?: (submitted: number, nowMs: number) => void;
  progressEvery?: number;
}

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
      if (q.tenant !== j.tenant) throw new Error(`trace line ${j.line}: queue '${j.queue}' belongs to tenant '${q.tenant}', not '${j.tenant}'`);
      return q;
    }
    const q = byTenant.get(j.tenant);
    if (!q) throw new Error(`trace line ${j.line}: tenant '${j.tenant}' has no queue in ${input.queues.file}`);
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

function podShape(j: TraceJob): PodShape {
  const s: PodShape = { gpu: j.gpus, cpu: j.cpuMilli ?? 0, memory: j.memoryMib ?? 0 };
  if (j.gpuType !== undefined) s.flavors = [j.gpuType];
  return s;
}

function toSpec(j: TraceJob, id: string, submitMs: number, b: BuiltScheduler, tq: SimQueue): JobSpec {
  const r = b.route(j, tq);
  const perPod: JobSpec['podSets'][number]['perPod'] = {};
  if (j.gpus > 0) perPod.gpu = j.gpus;
  if (j.cpuMilli) perPod.cpu = j.cpuMilli;
  if (j.memoryMib) perPod.memory = j.memoryMib;
  const ps: JobSpec['podSets'][number] = { name: 'main', count: j.pods, perPod };
  if (j.gpuType !== undefined) ps.flavors = [j.gpuType];
  const spec: JobSpec = { id, tenant: r.tenant, queue: r.queue, priorityClass: b.priorityOf(j), submitTime: submitMs, podSets: [ps] };
  const declared = j.declaredDurationMs === undefined ? j.durationMs : j.declaredDurationMs;
  if (declared !== null) spec.expectedDurationMs = declared;
  return spec;
}

function admissionFlavor(a: Admission, fallback: string): string {
  return a.podSets[0]?.flavor ?? fallback;
}

const MAX_CYCLES_PER_EVENT = 1_000_000;

/** Replay a trace through the core on a virtual clock that jumps from event to event. */
export function runReplay(input: SimInput, opts: ReplayOptions): ReplayOutcome {
  const trace = input.trace;
  if (trace.length === 0) throw new Error('replay needs a trace with at least one job');
  const tq = resolveQueues(input);
  const doPreview = opts.preview ?? true;
  const doEta = opts.eta ?? false;
  let now = trace[0]!.submitMs;
  const clock = { now: () => now };
  const b = buildScheduler(opts.policy, opts.placement, input.cluster, input.queues, clock);
  const sched = b.sched;
  const capacity = totalGpus(input.cluster);
  const book = new NominalBook();
  const firstSubmit = trace[0]!.submitMs;
  const lastSubmit = trace[trace.length - 1]!.submitMs;

  const idx = new Map<string, number>();
  const jobs: SimJob[] = trace.map((j, i) => {
    idx.set(j.id, i);
    return {
      id: j.id,
      line: j.line,
      tenant: j.tenant,
      queue: tq[i]!.name,
      gpus: jobGpus(j),
      durationMs: j.durationMs,
      submitMs: j.submitMs,
      firstStartMs: null,
      endMs: null,
      starts: 0,
      slaEligible: false,
      previewMode: 'none',
    };
  });
  const runStart: number[] = new Array<number>(trace.length).fill(-1);
  const runFlavor: string[] = new Array<string>(trace.length).fill('');
  const gen: number[] = new Array<number>(trace.length).fill(0);
  const segments: RunSegment[] = [];
  const preemptions: PreemptionRecord[] = [];
  const heap = new MinHeap<{ t: number; seq: number; job: number; gen: number }>();
  let seq = 0;
  const pendingShapes = new PendingShapes();
  const shapeOf = trace.map(podShape);
  const keyOf = shapeOf.map(shapeKey);
  // versions: the fragmentation sample is recomputed only when nodes or the set of pending shapes changed
  let nodesVer = 0;

  let events = 0;
  let cycles = 0;
  let previews = 0;
  let explains = 0;
  let explainMs = 0;
  let fragAt = now;
  let fragFree = 0;
  let fragUnusable = 0;
  let fragActive = false;
  let freeGpuMs = 0;
  let unusableGpuMs = 0;
  let windowEnd = opts.windowEnd === 'last-finish' || lastSubmit === firstSubmit ? Number.POSITIVE_INFINITY : lastSubmit;

  const accrueFrag = (t: number): void => {
    const hi = Math.min(t, windowEnd);
    if (fragActive && hi > fragAt) {
      freeGpuMs += fragFree * (hi - fragAt);
      unusableGpuMs += fragUnusable * (hi - fragAt);
    }
    fragAt = t;
  };

  let runningGpus = 0;
  const stop = (i: number, t: number, preempted: boolean): void => {
    const j = trace[i]!;
    runningGpus -= jobGpus(j);
    nodesVer++;
    segments.push({ job: i, tenant: j.tenant, start: runStart[i]!, end: t, gpus: jobGpus(j), preempted });
    book.add(tq[i]!, runFlavor[i]!, j, -1);
    runStart[i] = -1;
    gen[i]!++;
  };

  const applyPreemption = (p: Preemption): void => {
    const v = idx.get(p.victimId);
    if (v === undefined || runStart[v]! < 0) throw new Error(`core preempted unknown or idle job ${p.victimId}`);
    const j = trace[v]!;
    const lost = jobGpus(j) * (now - runStart[v]!);
    const pi = idx.get(p.preemptorId);
    preemptions.push({
      at: now,
      reason: p.reason,
      victimId: p.victimId,
      victimTenant: j.tenant,
      preemptorId: p.preemptorId,
      preemptorTenant: pi !== undefined ? trace[pi]!.tenant : '',
      gpus: jobGpus(j),
      lostGpuMs: lost,
    });
    stop(v, now, true);
    pendingShapes.add(shapeOf[v]!, keyOf[v]!);
  };

  const applyAdmission = (a: Admission): void => {
    const i = idx.get(a.jobId);
    if (i === undefined) throw new Error(`core admitted unknown job ${a.jobId}`);
    if (runStart[i]! >= 0) throw new Error(`core admitted job ${a.jobId} twice`);
    const j = trace[i]!;
    const rec = jobs[i]!;
    runStart[i] = now;
    runningGpus += jobGpus(j);
    nodesVer++;
    rec.starts++;
    if (rec.firstStartMs === null) rec.firstStartMs = now;
    if (rec.startAfterEtaMs === null) rec.startAfterEtaMs = now;
    const fl = admissionFlavor(a, j.gpuType ?? Object.keys(tq[i]!.quotas)[0] ?? '');
    runFlavor[i] = fl;
    book.add(tq[i]!, fl, j, 1);
    pendingShapes.remove(keyOf[i]!);
    heap.push({ t: now + j.durationMs, seq: seq++, job: i, gen: gen[i]! });
  };

  const runCycles = (): void => {
    for (let k = 0; ; k++) {
      if (k > MAX_CYCLES_PER_EVENT) throw new Error(`no fixed point after ${MAX_CYCLES_PER_EVENT} cycles at t=${now}`);
      const r = sched.cycle();
      cycles++;
      // a job admitted earlier in a cycle can be chosen as a victim later in the same
      // cycle (the core never re-admits a victim in the cycle that evicted it)
      for (const a of r.admitted) applyAdmission(a);
      for (const p of r.preempted) applyPreemption(p);
      if (r.admitted.length === 0 && r.preempted.length === 0) break;
    }
  };

  let nodes: NodeStatus[] = [];
  let sampledNodesVer = -1;
  let sampledShapesVer = -1;
  let next = 0;
  const n = trace.length;
  while (next < n || heap.size > 0) {
    let t = Number.POSITIVE_INFINITY;
    if (next < n) t = trace[next]!.submitMs;
    const top = heap.peek();
    if (top && top.t < t) t = top.t;
    accrueFrag(t);
    now = t;
    events++;
    let finished = false;
    // finishes first: capacity freed at t is usable by jobs submitted at t
    for (let h = heap.peek(); h && h.t === t; h = heap.peek()) {
      heap.pop();
      if (h.gen !== gen[h.job]) continue; // preempted since
      const i = h.job;
      sched.finish(trace[i]!.id);
      stop(i, t, false);
      jobs[i]!.endMs = t;
      finished = true;
    }
    if (finished) runCycles();
    // then arrivals, one at a time in trace order, each followed by scheduling: a job's
    // "state at submit" includes the admissions of the jobs that arrived just before it
    while (next < n && trace[next]!.submitMs === t) {
      const i = next++;
      const j = trace[i]!;
      const rec = jobs[i]!;
      const spec = toSpec(j, j.id, j.submitMs, b, tq[i]!);
      rec.slaEligible = book.fits(tq[i]!, j);
      if (doPreview) {
        try {
          const p = sched.preview(spec);
          previews++;
          rec.previewMode = p.admissible ? (p.admission?.mode ?? (p.borrowed ? 'borrow' : 'fit')) : 'pending';
        } catch {
          rec.previewMode = 'error';
        }
      }
      try {
        sched.submit(spec);
      } catch (e) {
        if (e instanceof SchedulerInputError && (e.code === 'REQUEST_TOO_LARGE' || e.code === 'INVALID_QUANTITY')) {
          rec.rejected = `${e.code}: ${e.message}`;
          rec.slaEligible = false;
          continue;
        }
        throw new Error(`trace line ${j.line}: the scheduler refused job ${j.id}: ${(e as Error).message}`);
      }
      pendingShapes.add(shapeOf[i]!, keyOf[i]!);
      runCycles();
      // What the gateway shows right after the submit: the cycles at this instant have
      // settled (the service cycles again after every admission, as runCycles does) and
      // the job is still pending. A job admitted by then has no ETA to show.
      rec.pendingAfterSubmit = runStart[i]! < 0;
      if (doEta && rec.pendingAfterSubmit) {
        const t0 = performance.now();
        const e = sched.explain(j.id);
        explainMs += performance.now() - t0;
        explains++;
        rec.etaAtSubmit = typeof e.eta === 'number' ? e.eta : null;
        // read without depending on the field's declaration (older cores have no reason)
        if (rec.etaAtSubmit === null) rec.etaUnknownReason = (e as { etaUnknownReason?: string }).etaUnknownReason ?? 'none';
        rec.startAfterEtaMs = null;
      }
      if (opts.onProgress && next % (opts.progressEvery ?? 5000) === 0) opts.onProgress(next, now);
    }
    // fragmentation state until the next event
    if (pendingShapes.size > 0 && t < windowEnd) {
      if (nodesVer !== sampledNodesVer) {
        nodes = sched.nodeStatus();
        sampledNodesVer = nodesVer;
        sampledShapesVer = -1;
        const used = unitsInUse(nodes);
        if (Math.abs(used - runningGpus) > 1e-6) throw new Error(`replay at ${now}: ${runningGpus} GPUs admitted but the nodes show ${used} in use`);
      }
      if (pendingShapes.version !== sampledShapesVer) {
        const f = fragmentation(nodes, pendingShapes.shapes());
        fragFree = f.free;
        fragUnusable = f.unusable;
        sampledShapesVer = pendingShapes.version;
      }
      fragActive = true;
    } else fragActive = false;
  }
  const endMs = now;
  if (!Number.isFinite(windowEnd)) windowEnd = endMs;
  if (windowEnd <= firstSubmit) windowEnd = Math.max(endMs, firstSubmit + 1);
  // close running segments (cannot happen after the loop, all jobs finished) — defensive
  for (let i = 0; i < n; i++) if (runStart[i]! >= 0) stop(i, endMs, false);
  return {
    kind: 'replay',
    policy: opts.policy,
    placement: opts.placement,
    capacityGpus: capacity,
    windowStart: firstSubmit,
    windowEnd,
    endMs,
    tenants: tenantInfos(input.queues),
    jobs,
    segments,
    preemptions,
    frag: { freeGpuMs, unusableGpuMs },
    etaSampled: doEta,
    stats: { events, cycles, previews, explains, explainMs },
  };
}

export interface FillOptions {
  policy: PolicyName;
  placement: PlacementName;
  seed: number;
  /** Requested percentages to report at (default 50, 80, 90, 100, 130). */
  targetsPct?: number[];
}

export const DEFAULT_FILL_TARGETS = [50, 80, 90, 100, 130];

/**
 * Fill: draw jobs uniformly with replacement from the trace (seeded), submit them one
 * at a time (1 ms apart on the virtual clock; nothing ever finishes) and run the
 * scheduler after each, until the GPUs requested reach each target percentage of the
 * cluster. Fragmentation uses the trace's distinct pod shapes as the pending workload.
 */
export function runFill(input: SimInput, opts: FillOptions): FillOutcome {
  const trace = input.trace;
  if (trace.length === 0) throw new Error('fill needs a trace with at least one job');
  const tq = resolveQueues(input);
  const targets = [...(opts.targetsPct ?? DEFAULT_FILL_TARGETS)].sort((a, b) => a - b);
  let now = 0;
  const clock = { now: () => now };
  const b = buildScheduler(opts.policy, opts.placement, input.cluster, input.queues, clock);
  const sched = b.sched;
  const capacity = totalGpus(input.cluster);
  const rng = new Prng(opts.seed);
  // the trace's pod shapes with their popularity (share of pods)
  const shapes = new Map<string, { shape: PodShape; pods: number }>();
  let allPods = 0;
  for (const j of trace) {
    const s = podShape(j);
    const k = shapeKey(s);
    const e = shapes.get(k);
    if (e) e.pods += j.pods;
    else shapes.set(k, { shape: s, pods: j.pods });
    allPods += j.pods;
  }
  const shapeList = [...shapes.values()];
  const running = new Map<string, number>(); // id → gpus
  const pendingShapes = new PendingShapes();
  const shapeOfId = new Map<string, { shape: PodShape; key: string }>();
  let allocated = 0;
  let requested = 0;
  let submitted = 0;
  let preempted = 0;
  let cycles = 0;
  const sample: number[] = [];
  const drawnGpus = new Map<string, number>();
  const points: FillPoint[] = [];
  const bump = (id: string, d: 1 | -1): void => {
    const sh = shapeOfId.get(id);
    if (!sh) return;
    if (d === 1) pendingShapes.add(sh.shape, sh.key);
    else pendingShapes.remove(sh.key);
  };
  let ti = 0;
  const maxDraws = 1_000_000;
  if (!trace.some((j) => jobGpus(j) > 0)) throw new Error('fill needs a trace with GPU jobs');
  while (ti < targets.length) {
    if (submitted >= maxDraws) throw new Error(`fill did not reach ${targets[ti]}% requested after ${maxDraws} jobs`);
    const k = rng.int(trace.length);
    const j = trace[k]!;
    sample.push(j.line);
    now = submitted + 1;
    const id = `fill-${submitted}`;
    submitted++;
    const spec = toSpec(j, id, now, b, tq[k]!);
    requested += jobGpus(j);
    drawnGpus.set(id, jobGpus(j));
    const ps = podShape(j);
    const pk = shapeKey(ps);
    shapeOfId.set(id, { shape: ps, key: pk });
    pendingShapes.add(ps, pk);
    try {
      sched.submit(spec);
    } catch (e) {
      if (!(e instanceof SchedulerInputError && (e.code === 'REQUEST_TOO_LARGE' || e.code === 'INVALID_QUANTITY'))) {
        throw new Error(`trace line ${j.line}: the scheduler refused job: ${(e as Error).message}`);
      }
      bump(id, -1); // refused: it will never be pending in the core
    }
    for (;;) {
      const r = sched.cycle();
      cycles++;
      // admissions first: a job admitted earlier in a cycle may be a victim later in it
      for (const a of r.admitted) {
        if (running.has(a.jobId)) throw new Error(`core admitted job ${a.jobId} twice`);
        const gj = drawnGpus.get(a.jobId) ?? 0;
        running.set(a.jobId, gj);
        allocated += gj;
        bump(a.jobId, -1);
      }
      for (const p of r.preempted) {
        const g = running.get(p.victimId);
        if (g === undefined) throw new Error(`core preempted job ${p.victimId}, which is not running`);
        allocated -= g;
        running.delete(p.victimId);
        bump(p.victimId, 1);
        preempted++;
      }
      if (r.admitted.length === 0 && r.preempted.length === 0) break;
    }
    while (ti < targets.length && requested >= (targets[ti]! / 100) * capacity - 1e-9) {
      const nodes = sched.nodeStatus();
      // cross-check the simulator's books against the core's node state
      const used = unitsInUse(nodes);
      if (Math.abs(used - allocated) > 1e-6) throw new Error(`fill: ${allocated} GPUs admitted but the nodes show ${used} in use`);
      const f = fragmentation(nodes, pendingShapes.shapes());
      let expUnusable = 0;
      for (const e of shapeList) expUnusable += (e.pods / allPods) * fragmentation(nodes, [e.shape]).unusable;
      points.push({
        targetPct: targets[ti]!,
        requestedPct: round6((requested / capacity) * 100),
        jobsSubmitted: submitted,
        jobsRunning: running.size,
        jobsPending: submitted - running.size,
        allocationRatio: round6(allocated / capacity),
        fragmentationRatio: round6(f.free > 1e-9 && pendingShapes.size > 0 ? f.unusable / f.free : 0),
        expectedFragmentationRatio: round6(f.free > 1e-9 ? expUnusable / f.free : 0),
        freeGpus: round6(f.free),
        unusableGpus: round6(f.unusable),
        preemptions: preempted,
      });
      ti++;
    }
  }
  return { kind: 'fill', policy: opts.policy, placement: opts.placement, seed: opts.seed, capacityGpus: capacity, points, sample, stats: { cycles } };

}

export function round6(x: number): number {
  return Math.round(x * 1e6) / 1e6;
}
