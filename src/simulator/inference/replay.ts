// One inference run: the training trace replayed through the core (as src/simulator/replay.ts does:
// a virtual clock jumping from event to event, cycles after every finish and arrival, a preempted job
// restarting from its last checkpoint) with the services' replica jobs in the same Scheduler. The
// clock also stops every minute from the services' start: the minute's SLA is measured, and every
// interval each service's controller decides and planReplicas submits and cancels replica jobs.
import {
  planReplicas,
  type ReplicaJob,
  type ReplicaState,
  requestRate,
  serviceLoad,
} from '../../core/inference/index.js';
import type { Admission, JobSpec, Preemption } from '../../core/scheduling/index.js';
import { IndexedHeap } from '../../core/scheduling/index.js';
import { totalGpus } from '../cluster.js';
import { isRefusal, resolveQueues, type SimInput, toSpec } from '../engine.js';
import { buildScheduler, type PlacementName } from '../scheduling-policies.js';
import { jobGpus, savedRunMs } from '../trace.js';
import { ChangeTracker, type PartSummary, PartTotals, summarize } from './metrics.js';
import type { ServiceSpec, Steps } from './services.js';
import { controllerFor, type ServiceController, type StrategyName, setupStrategy } from './strategies.js';

const MINUTE = 60_000;
const MAX_CYCLES_PER_EVENT = 1_000_000;

export interface InferenceRunOptions {
  strategy: StrategyName;
  services: readonly ServiceSpec[];
  /** The services start, and measuring begins (epoch ms, on a minute). */
  startMs: number;
  /** The tuning part is [startMs, heldOutFromMs), the held-out part [heldOutFromMs, endMs). */
  heldOutFromMs: number;
  endMs: number;
  /** Between two decisions of a service's controller (a whole number of minutes; default 60 s). */
  intervalMs?: number;
  placement?: PlacementName;
  /** Coordinated's step limits (default DEFAULT_STEPS). */
  steps?: Steps;
}

export interface InferenceRun {
  strategy: StrategyName;
  capacityGpus: number;
  inferenceGpus: number;
  tuning: PartSummary;
  heldOut: PartSummary;
  /** Preemptions of inference-critical replicas over the whole run (the class is never preempted: none). */
  guaranteedPreempted: number;
  stats: { events: number; cycles: number; decisions: number; trainingJobs: number };
}

interface Replica {
  id: string;
  svc: number;
  slot: number;
  cls: string;
  submitTime: number;
  state: ReplicaState;
  readyAt: number;
}

interface Finish {
  t: number;
  seq: number;
  job: number;
  gen: number;
  heapIndex: number;
}
const finishesFirst = (a: Finish, b: Finish): boolean => a.t < b.t || (a.t === b.t && a.seq < b.seq);

export function runInference(training: SimInput, o: InferenceRunOptions): InferenceRun {
  const interval = o.intervalMs ?? MINUTE;
  if (interval <= 0 || interval % MINUTE !== 0)
    throw new Error('the interval must be a whole number of minutes');
  if (o.startMs % MINUTE !== 0) throw new Error('the services must start on a minute');
  if (!(o.startMs <= o.heldOutFromMs && o.heldOutFromMs < o.endMs)) throw new Error('bad run window');
  const setup = setupStrategy(o.strategy, training, o.services);
  const trace = training.trace.filter((j) => j.submitMs < o.endMs);
  const tq = resolveQueues({ ...training, trace });
  let now = Math.min(trace[0]?.submitMs ?? o.startMs, o.startMs);
  const b = buildScheduler('fairway', o.placement ?? 'best-fit', setup.cluster, setup.queues, {
    now: () => now,
  });
  const sched = b.sched;
  const capacity = totalGpus(setup.cluster);
  const names = o.services.map((s) => s.name);
  const parts = [
    new PartTotals(o.startMs, o.heldOutFromMs, names),
    new PartTotals(o.heldOutFromMs, o.endMs, names),
  ];
  const partAt = (t: number) => parts.find((p) => p.contains(t));

  // training jobs
  const idx = new Map<string, number>(trace.map((j, i) => [j.id, i]));
  const runStart = new Array<number>(trace.length).fill(-1);
  const firstStart = new Array<number>(trace.length).fill(-1);
  const gen = new Array<number>(trace.length).fill(0);
  const doneMs = new Array<number>(trace.length).fill(0);
  const heap = new IndexedHeap<Finish>(finishesFirst);
  let seq = 0;
  let trainingGpus = 0;
  // replicas
  const replicas = new Map<string, Replica>();
  const bySvc: Replica[][] = o.services.map(() => []);
  const serving = o.services.map(() => 0);
  const minuteServing = o.services.map(() => 0);
  const desired = o.services.map(() => 0);
  const controllers: ServiceController[] = o.services.map((s) =>
    controllerFor(o.strategy, s, o.startMs, o.steps),
  );
  const trackers = o.services.map(() => new ChangeTracker());
  let replicaGpus = 0;
  let replicaSeq = 0;
  let guaranteedPreempted = 0;

  let accruedTo = now;
  const accrue = (t: number): void => {
    for (const p of parts) {
      const lo = Math.max(accruedTo, p.fromMs);
      const hi = Math.min(t, p.toMs);
      if (hi <= lo) continue;
      p.heldGpuMs += (trainingGpus + replicaGpus) * (hi - lo);
      p.trainingGpuMs += trainingGpus * (hi - lo);
      p.replicaHeldGpuMs += replicaGpus * (hi - lo);
    }
    accruedTo = t;
  };

  const stopReplica = (r: Replica): void => {
    const s = o.services[r.svc]!;
    if (r.state !== 'PENDING') replicaGpus -= s.gpusPerReplica;
    if (r.state === 'RUNNING') {
      serving[r.svc]!--;
      minuteServing[r.svc] = Math.min(minuteServing[r.svc]!, serving[r.svc]!);
    }
    r.state = 'PENDING';
  };

  const admit = (a: Admission): void => {
    const r = replicas.get(a.jobId);
    if (r) {
      if (r.state !== 'PENDING') throw new Error(`core admitted replica ${r.id} twice`);
      r.state = 'ADMITTED';
      r.readyAt = now + o.services[r.svc]!.warmupMs;
      replicaGpus += o.services[r.svc]!.gpusPerReplica;
      return;
    }
    const i = idx.get(a.jobId);
    if (i === undefined) throw new Error(`core admitted unknown job ${a.jobId}`);
    if (runStart[i]! >= 0) throw new Error(`core admitted job ${a.jobId} twice`);
    runStart[i] = now;
    if (firstStart[i]! < 0) firstStart[i] = now;
    trainingGpus += jobGpus(trace[i]!);
    heap.push({
      t: now + trace[i]!.durationMs - doneMs[i]!,
      seq: seq++,
      job: i,
      gen: gen[i]!,
      heapIndex: -1,
    });
  };

  const stopTraining = (i: number): void => {
    trainingGpus -= jobGpus(trace[i]!);
    runStart[i] = -1;
    gen[i]!++;
  };

  const preempt = (p: Preemption): void => {
    const part = partAt(now);
    const r = replicas.get(p.victimId);
    if (r) {
      if (r.state === 'PENDING') throw new Error(`core preempted idle replica ${r.id}`);
      if (r.cls === 'inference-critical') guaranteedPreempted++;
      if (part) part.replicaPreemptions.set(r.cls, (part.replicaPreemptions.get(r.cls) ?? 0) + 1);
      stopReplica(r);
      return;
    }
    const v = idx.get(p.victimId);
    if (v === undefined || runStart[v]! < 0)
      throw new Error(`core preempted unknown or idle job ${p.victimId}`);
    const run = now - runStart[v]!;
    const saved = savedRunMs(trace[v]!, run);
    doneMs[v]! += saved;
    if (part) {
      const lost = jobGpus(trace[v]!) * (run - saved);
      part.trainingPreemptions++;
      part.trainingLostGpuMs += lost;
      if (replicas.has(p.preemptorId)) {
        part.trainingPreemptedByReplicas++;
        part.trainingLostToReplicasGpuMs += lost;
      }
    }
    stopTraining(v);
  };

  let cycles = 0;
  const runCycles = (): void => {
    for (let k = 0; ; k++) {
      if (k > MAX_CYCLES_PER_EVENT) throw new Error(`no fixed point after ${k} cycles at t=${now}`);
      const r = sched.cycle();
      cycles++;
      for (const a of r.admitted) admit(a);
      for (const p of r.preempted) preempt(p);
      if (r.admitted.length === 0 && r.preempted.length === 0) break;
    }
  };

  const asJob = (r: Replica): ReplicaJob => ({
    jobId: r.id,
    slot: r.slot,
    state: r.state,
    priorityClass: r.cls,
    revision: 1,
    submitTime: r.submitTime,
  });

  /** Submits and cancels what planReplicas says for service `k` at its desired count. */
  const plan = (k: number, minimum: number): void => {
    const s = o.services[k]!;
    const p = planReplicas({
      desired: desired[k]!,
      minimum,
      revision: 1,
      classes: setup.classes,
      maxSurge: 1,
      replicas: bySvc[k]!.map(asJob),
    });
    for (const c of p.cancel) {
      const r = replicas.get(c.jobId)!;
      sched.cancel(r.id);
      stopReplica(r);
      replicas.delete(r.id);
      bySvc[k] = bySvc[k]!.filter((x) => x !== r);
    }
    for (const sub of p.submit) {
      const id = `${s.name}/${String(sub.slot).padStart(3, '0')}/${replicaSeq++}`;
      const spec: JobSpec = {
        id,
        tenant: s.tenant,
        queue: s.queue,
        priorityClass: sub.priorityClass,
        submitTime: now,
        podSets: [{ name: 'replica', count: 1, perPod: { gpu: s.gpusPerReplica } }],
      };
      sched.submit(spec);
      const r: Replica = {
        id,
        svc: k,
        slot: sub.slot,
        cls: sub.priorityClass,
        submitTime: now,
        state: 'PENDING',
        readyAt: 0,
      };
      replicas.set(id, r);
      bySvc[k]!.push(r);
    }
  };

  /** Closes the minute that ends at `t`: its SLA and busy share, from the fewest replicas that served in it. */
  const closeMinute = (t: number): void => {
    const part = partAt(t - MINUTE);
    if (!part) return;
    o.services.forEach((s, k) => {
      const n = minuteServing[k]!;
      const load = serviceLoad(s.latency, n, requestRate(s.traffic, t - MINUTE));
      const st = part.services[k]!;
      st.minutes++;
      if (load.p95Ms <= s.targetP95Ms) st.okMinutes++;
      st.shortReplicaMinutes += Math.max(0, desired[k]! - n);
      // Slots below the minimum served by a burst-class replica only: the guarantee is not in force there.
      const minimum = Math.min(desired[k]!, controllers[k]!.minimumAt(t - MINUTE, desired[k]!));
      st.minimumSlotMinutes += minimum;
      const cls = new Map<number, boolean>();
      for (const r of bySvc[k]!)
        if (r.state === 'RUNNING' && r.slot < minimum)
          cls.set(r.slot, (cls.get(r.slot) ?? false) || r.cls === setup.classes.guaranteed);
      for (const guaranteed of cls.values()) if (!guaranteed) st.unguaranteedSlotMinutes++;
      st.maxServing = Math.max(st.maxServing, n);
      part.replicaBusyGpuMs += Math.min(1, load.utilization) * n * s.gpusPerReplica * MINUTE;
    });
  };

  let decisions = 0;
  const decide = (t: number, first: boolean): void => {
    const part = partAt(t);
    const free = capacity - trainingGpus - replicaGpus;
    let upShort = false;
    let down = false;
    o.services.forEach((s, k) => {
      const before = desired[k]!;
      let minimum: number;
      if (first) {
        desired[k] = controllers[k]!.initial;
        minimum = controllers[k]!.minimumAt(t, desired[k]!);
      } else {
        const admitted = new Set(bySvc[k]!.filter((r) => r.state !== 'PENDING').map((r) => r.slot)).size;
        const d = controllers[k]!.decide(t, serving[k]!, interval, admitted);
        desired[k] = d.desired;
        minimum = d.minimum;
      }
      decisions++;
      const delta = desired[k]! - before;
      if (!first && delta !== 0 && part) {
        const st = part.services[k]!;
        st.scaleEvents++;
        if (trackers[k]!.change(t, delta)) st.reversals++;
        if (delta > 0 && free < delta * s.gpusPerReplica) upShort = true;
        if (delta < 0) down = true;
      }
      if (part) part.services[k]!.maxDesired = Math.max(part.services[k]!.maxDesired, desired[k]!);
      plan(k, Math.min(minimum, desired[k]!));
    });
    if (upShort && down && part) part.contendedOpposite++;
  };

  let next = 0;
  let tick = o.startMs;
  let events = 0;
  for (;;) {
    let t = tick;
    if (next < trace.length && trace[next]!.submitMs < t) t = trace[next]!.submitMs;
    const top = heap.peek();
    if (top && top.t < t) t = top.t;
    if (t > o.endMs) break;
    accrue(t);
    now = t;
    events++;
    const isTick = t === tick;
    if (isTick) closeMinute(t);
    if (t === o.endMs) break;
    let finished = false;
    for (let h = heap.peek(); h && h.t === t; h = heap.peek()) {
      heap.pop();
      if (h.gen !== gen[h.job]) continue;
      sched.finish(trace[h.job]!.id);
      stopTraining(h.job);
      finished = true;
    }
    if (finished) runCycles();
    while (next < trace.length && trace[next]!.submitMs === t) {
      const i = next++;
      try {
        sched.submit(toSpec(trace[i]!, trace[i]!.id, trace[i]!.submitMs, b, tq[i]!));
      } catch (e) {
        if (isRefusal(e)) continue;
        throw e;
      }
      runCycles();
    }
    if (isTick) {
      for (const [k, list] of bySvc.entries())
        for (const r of list)
          if (r.state === 'ADMITTED' && r.readyAt <= t) {
            r.state = 'RUNNING';
            serving[k]!++;
          }
      if ((t - o.startMs) % interval === 0) decide(t, t === o.startMs);
      // every minute: the services' time windows (static) switch on minutes
      runCycles();
      for (let k = 0; k < serving.length; k++) minuteServing[k] = serving[k]!;
      tick += MINUTE;
    }
  }
  accrue(o.endMs);
  // training waits, by the part the job was submitted in (never started: until the end, a lower bound)
  trace.forEach((j, i) => {
    const part = partAt(j.submitMs);
    if (!part) return;
    const started = firstStart[i]! >= 0;
    part.wait(j.tenant, (started ? firstStart[i]! : o.endMs) - j.submitMs, started);
  });
  return {
    strategy: o.strategy,
    capacityGpus: capacity,
    inferenceGpus: setup.inferenceGpus,
    tuning: summarize(parts[0]!, capacity),
    heldOut: summarize(parts[1]!, capacity),
    guaranteedPreempted,
    stats: { events, cycles, decisions, trainingJobs: trace.length },
  };
}
