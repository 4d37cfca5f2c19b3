import type { Admission, NodeStatus, Preemption } from '../core/scheduling/index.js';
import { IndexedHeap } from '../core/scheduling/index.js';
import { totalGpus } from './cluster.js';
import {
  isRefusal,
  type PreemptionRecord,
  podShape,
  type ReplayOutcome,
  type RunSegment,
  resolveQueues,
  type SimInput,
  type SimJob,
  tenantInfos,
  toSpec,
  type WindowEnd,
} from './engine.js';
import { fragmentation, shapeKey, unitsInUse } from './fragmentation.js';
import { GovernanceRun } from './governance/governance.js';
import type { GovernanceOptions } from './governance/types.js';
import { NominalBook } from './nominal-book.js';
import { PendingShapes } from './pending-shapes.js';
import { queueAt } from './queues.js';
import { buildScheduler, type PlacementName, type PolicyName } from './scheduling-policies.js';
import { jobGpus, savedRunMs } from './trace.js';

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
  /**
   * Called after every `progressEvery` (default 1000) submits and finishes together, with the
   * counts so far; cheap enough to leave on (a counter per event, nothing per cycle).
   */
  onProgress?: (p: ReplayProgress) => void;
  progressEvery?: number;
  /** Probes, idle reclaim and the controller (governance.ts); without it none of them run. */
  governance?: GovernanceOptions;
}

export interface ReplayProgress {
  submitted: number;
  finished: number;
  /** Jobs in the trace. */
  total: number;
  virtualMs: number;
}

function admissionFlavor(a: Admission, fallback: string): string {
  return a.podSets[0]?.flavor ?? fallback;
}

const MAX_CYCLES_PER_EVENT = 1_000_000;

/** A running job's finish, due at `t`; stale once the job was preempted (its `gen` moved on). */
interface Finish {
  t: number;
  /** Push order: finishes due at the same instant pop in the order they were scheduled, so runs are
   * deterministic.
   */
  seq: number;
  job: number;
  gen: number;
  /** The slot IndexedHeap keeps the item at (-1 outside the heap). */
  heapIndex: number;
}

// (t, seq) is unique per finish, so the pop order is fully determined by it.
const finishesFirst = (a: Finish, b: Finish): boolean => a.t < b.t || (a.t === b.t && a.seq < b.seq);

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
  const gov = opts.governance
    ? new GovernanceRun(trace, tq, input.queues.queues, b, opts.governance, now)
    : undefined;
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
  // run time kept across preemptions (checkpoints): a restarted job runs only what is left
  const doneMs: number[] = new Array<number>(trace.length).fill(0);
  const segments: RunSegment[] = [];
  const preemptions: PreemptionRecord[] = [];
  const heap = new IndexedHeap<Finish>(finishesFirst);
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
  let windowEnd =
    opts.windowEnd === 'last-finish' || lastSubmit === firstSubmit ? Number.POSITIVE_INFINITY : lastSubmit;

  const accrueFrag = (t: number): void => {
    const hi = Math.min(t, windowEnd);
    if (fragActive && hi > fragAt) {
      freeGpuMs += fragFree * (hi - fragAt);
      unusableGpuMs += fragUnusable * (hi - fragAt);
    }
    fragAt = t;
  };

  let runningGpus = 0;
  const stop = (i: number, t: number, preempted: boolean, savedMs = 0): void => {
    const j = trace[i]!;
    runningGpus -= jobGpus(j);
    nodesVer++;
    // a preempted run counts as useful up to its last checkpoint, lost after it
    const cut = runStart[i]! + savedMs;
    if (preempted && savedMs > 0)
      segments.push({
        job: i,
        tenant: j.tenant,
        start: runStart[i]!,
        end: cut,
        gpus: jobGpus(j),
        preempted: false,
      });
    segments.push({
      job: i,
      tenant: j.tenant,
      start: preempted ? cut : runStart[i]!,
      end: t,
      gpus: jobGpus(j),
      preempted,
    });
    book.add(tq[i]!, runFlavor[i]!, j, -1);
    gov?.stopped(i, t, preempted, savedMs);
    runStart[i] = -1;
    gen[i]!++;
  };

  const applyPreemption = (p: Preemption): void => {
    const v = idx.get(p.victimId);
    if (v === undefined || runStart[v]! < 0)
      throw new Error(`core preempted unknown or idle job ${p.victimId}`);
    const j = trace[v]!;
    const run = now - runStart[v]!;
    const saved = savedRunMs(j, run);
    const lost = jobGpus(j) * (run - saved);
    // the core's own figure (Preemption.lostGpuMs) must agree with the trace's checkpoints
    if (p.lostGpuMs !== undefined && Math.abs(p.lostGpuMs - lost) > 1e-6 * Math.max(1, lost)) {
      throw new Error(`core says preempting ${p.victimId} loses ${p.lostGpuMs} GPU-ms, the trace ${lost}`);
    }
    doneMs[v]! += saved;
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
    stop(v, now, true, saved);
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
    gov?.started(i, now, doneMs[i]!);
    heap.push({ t: now + j.durationMs - doneMs[i]!, seq: seq++, job: i, gen: gen[i]!, heapIndex: -1 });
  };

  const runCycles = (): void => {
    for (let k = 0; ; k++) {
      if (k > MAX_CYCLES_PER_EVENT)
        throw new Error(`no fixed point after ${MAX_CYCLES_PER_EVENT} cycles at t=${now}`);
      const r = sched.cycle();
      cycles++;
      // a job admitted earlier in a cycle can be chosen as a victim later in the same
      // cycle (the core never re-admits a victim in the cycle that evicted it)
      for (const a of r.admitted) applyAdmission(a);
      for (const p of r.preempted) applyPreemption(p);
      if (r.admitted.length === 0 && r.preempted.length === 0) break;
    }
  };

  const progressEvery = opts.progressEvery ?? 1000;
  let finishedJobs = 0;
  let untilProgress = progressEvery;
  const progressed = (): void => {
    if (!opts.onProgress || --untilProgress > 0) return;
    untilProgress = progressEvery;
    opts.onProgress({ submitted: next, finished: finishedJobs, total: trace.length, virtualMs: now });
  };

  let nodes: NodeStatus[] = [];
  let sampledNodesVer = -1;
  let sampledShapesVer = -1;
  let next = 0;
  // time windows: the clock also stops where a queue's window opens or closes, and a cycle runs
  // there; after the last submit and finish only while jobs wait, and for at most 8 days (a week's
  // windows have all opened by then: what still waits never starts)
  let lastEvent = now;
  const windowStop = (): number | undefined => {
    const w = sched.nextWindowChange(now);
    return w !== undefined &&
      (next < n || heap.size > 0 || (pendingShapes.size > 0 && w <= lastEvent + 8 * 86_400_000))
      ? w
      : undefined;
  };
  const n = trace.length;
  for (let w = windowStop(); next < n || heap.size > 0 || w !== undefined; w = windowStop()) {
    let t = Number.POSITIVE_INFINITY;
    if (next < n) t = trace[next]!.submitMs;
    const top = heap.peek();
    if (top && top.t < t) t = top.t;
    if (gov && gov.nextAt() < t) t = gov.nextAt();
    if (w !== undefined && w < t) t = w;
    else lastEvent = t;
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
      finishedJobs++;
      progressed();
    }
    // governance: idle flags due now (a reclaimed job's work is done: it ends here), controller window
    const governed = gov?.fire(t, (i) => {
      sched.finish(trace[i]!.id);
      stop(i, t, false);
      jobs[i]!.endMs = t;
      finishedJobs++;
    });
    if (finished || t === w || governed) runCycles();
    // then arrivals, one at a time in trace order, each followed by scheduling: a job's
    // "state at submit" includes the admissions of the jobs that arrived just before it
    while (next < n && trace[next]!.submitMs === t) {
      const i = next++;
      const j = trace[i]!;
      const rec = jobs[i]!;
      const spec = toSpec(j, j.id, j.submitMs, b, tq[i]!);
      rec.slaEligible = book.fits(queueAt(tq[i]!, t), j);
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
        if (isRefusal(e)) {
          rec.rejected = `${e.code}: ${e.message}`;
          rec.slaEligible = false;
          progressed();
          continue;
        }
        throw new Error(`trace line ${j.line}: the scheduler refused job ${j.id}: ${(e as Error).message}`);
      }
      pendingShapes.add(shapeOf[i]!, keyOf[i]!);
      gov?.submitted(i, t, rec.slaEligible);
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
        if (rec.etaAtSubmit === null)
          rec.etaUnknownReason = (e as { etaUnknownReason?: string }).etaUnknownReason ?? 'none';
        rec.startAfterEtaMs = null;
      }
      progressed();
    }
    // fragmentation state until the next event
    if (pendingShapes.size > 0 && t < windowEnd) {
      if (nodesVer !== sampledNodesVer) {
        nodes = sched.nodeStatus();
        sampledNodesVer = nodesVer;
        sampledShapesVer = -1;
        const used = unitsInUse(nodes);
        if (Math.abs(used - runningGpus) > 1e-6)
          throw new Error(`replay at ${now}: ${runningGpus} GPUs admitted but the nodes show ${used} in use`);
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
    ...(gov ? { governance: gov.outcome() } : {}),
  };
}
