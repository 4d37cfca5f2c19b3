import type { WorkloadShape } from '../core/scheduling/index.js';
import { totalGpus } from './cluster.js';
import {
  type FillOutcome,
  type FillPoint,
  isRefusal,
  podShape,
  resolveQueues,
  round6,
  type SimInput,
  toSpec,
} from './engine.js';
import { fragmentation, type PodShape, shapeKey, unitsInUse } from './fragmentation.js';
import { PendingShapes } from './pending-shapes.js';
import { Prng } from './prng.js';
import { buildScheduler, type PlacementName, type PolicyName } from './scheduling-policies.js';
import { jobGpus } from './trace.js';

export interface FillOptions {
  policy: PolicyName;
  placement: PlacementName;
  seed: number;
  /** Requested percentages to report at (default 50, 80, 90, 100, 130). */
  targetsPct?: number[];
  /** Called after every `progressEvery` (default 200) drawn jobs with the GPUs requested so far and the last target's. */
  onProgress?: (p: FillProgress) => void;
  progressEvery?: number;
}

export interface FillProgress {
  submitted: number;
  requestedGpus: number;
  /** GPUs requested when the highest target is reached (the run ends there). */
  targetGpus: number;
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
  // FGD's premise: the scheduler knows the workload's shape mix (here, the trace's popularity)
  if (opts.placement === 'fragmentation-aware') sched.setWorkloadShapes(workloadOf(shapeList));
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
  const progressEvery = opts.progressEvery ?? 200;
  const maxDraws = 1_000_000;
  if (!trace.some((j) => jobGpus(j) > 0)) throw new Error('fill needs a trace with GPU jobs');
  while (ti < targets.length) {
    if (submitted >= maxDraws)
      throw new Error(`fill did not reach ${targets[ti]}% requested after ${maxDraws} jobs`);
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
      if (!isRefusal(e)) {
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
    if (opts.onProgress && submitted % progressEvery === 0)
      opts.onProgress({
        submitted,
        requestedGpus: requested,
        targetGpus: (targets[targets.length - 1]! / 100) * capacity,
      });
    while (ti < targets.length && requested >= (targets[ti]! / 100) * capacity - 1e-9) {
      const nodes = sched.nodeStatus();
      // cross-check the simulator's books against the core's node state
      const used = unitsInUse(nodes);
      if (Math.abs(used - allocated) > 1e-6)
        throw new Error(`fill: ${allocated} GPUs admitted but the nodes show ${used} in use`);
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
  return {
    kind: 'fill',
    policy: opts.policy,
    placement: opts.placement,
    seed: opts.seed,
    capacityGpus: capacity,
    points,
    sample,
    stats: { cycles },
  };
}

/** The trace's pod shapes as the core's expected workload (weight = pods of that shape). */
export function workloadOf(shapes: readonly { shape: PodShape; pods: number }[]): WorkloadShape[] {
  return shapes.map(({ shape, pods }) => {
    const w: WorkloadShape = {
      perPod: { gpu: shape.gpu, cpu: shape.cpu, memory: shape.memory },
      weight: pods,
    };
    if (shape.flavors) w.flavors = [...shape.flavors];
    return w;
  });
}
