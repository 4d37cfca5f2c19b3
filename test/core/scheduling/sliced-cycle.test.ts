// Sliced cycles (`cycle({ maxHeads })`): with nothing in between, the slices of one cycle make
// exactly the decisions of one unsliced cycle and leave the same state; with submits, finishes,
// cancels and holds in between, capacity and quotas stay exact and the cycle still ends.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type Admission,
  type CycleResult,
  type JobSpec,
  type NodeSpec,
  type QueueSpec,
  Scheduler,
  SchedulerInputError,
} from '../../../src/core/scheduling/index.js';
import { FLAVORS, ManualClock } from '../builders.js';

interface World {
  nodes: NodeSpec[];
  queues: QueueSpec[];
  fairSharing: boolean;
  placement: 'best-fit' | 'fragmentation-aware';
}

type Op =
  | {
      kind: 'submit';
      queue: number;
      gpu: number;
      pods: number;
      minPods: number;
      priority: string;
      flavor: number;
    }
  | { kind: 'finish' | 'cancel'; pick: number }
  | { kind: 'cycle' }
  | { kind: 'hold'; queue: number; on: boolean }
  | { kind: 'advance'; ms: number };

const worldArb: fc.Arbitrary<World> = fc
  .record({
    nodes: fc.array(
      fc.record({ flavor: fc.constantFrom('h100', 'h100', 'a100-1g'), gpus: fc.integer({ min: 1, max: 8 }) }),
      { minLength: 1, maxLength: 6 },
    ),
    queues: fc.array(
      fc.record({
        cohort: fc.integer({ min: 0, max: 2 }),
        h100: fc.integer({ min: 0, max: 12 }),
        mig: fc.option(fc.integer({ min: 0, max: 14 }), { nil: undefined }),
        borrowingLimit: fc.option(fc.integer({ min: 0, max: 4 }), { nil: undefined }),
        strict: fc.boolean(),
        withinQueue: fc.constantFrom('Never', 'LowerPriority' as const),
        reclaim: fc.constantFrom('Never', 'LowerPriority', 'Any' as const),
      }),
      { minLength: 1, maxLength: 5 },
    ),
    fairSharing: fc.boolean(),
    placement: fc.constantFrom('best-fit', 'fragmentation-aware' as const),
  })
  .map((w) => ({
    nodes: w.nodes.map((n, i) => ({
      name: `n${i}`,
      pool: 'default',
      flavor: n.flavor,
      gpus: n.gpus,
      cpu: 64_000,
      memory: 256_000,
    })),
    queues: w.queues.map((q, i) => {
      const spec: QueueSpec = {
        name: `q${i}`,
        tenant: `t${i}`,
        quotas: {
          h100: {
            gpu: {
              nominal: q.h100,
              ...(q.borrowingLimit !== undefined ? { borrowingLimit: q.borrowingLimit } : {}),
            },
          },
          ...(q.mig !== undefined ? { 'a100-1g': { gpu: { nominal: q.mig } } } : {}),
        },
        queueingStrategy: q.strict ? 'StrictFIFO' : 'BestEffortFIFO',
        preemption: { withinQueue: q.withinQueue, reclaimWithinCohort: q.reclaim },
      };
      if (q.cohort > 0) spec.cohort = `c${q.cohort}`;
      return spec;
    }),
    fairSharing: w.fairSharing,
    placement: w.placement,
  }));

const submitArb = fc.record({
  kind: fc.constant('submit' as const),
  queue: fc.nat(),
  gpu: fc.constantFrom(0.25, 0.5, 1, 1, 2, 3, 4, 8),
  pods: fc.integer({ min: 1, max: 3 }),
  minPods: fc.integer({ min: 1, max: 3 }),
  priority: fc.constantFrom('inference-critical', 'production', 'training', 'experiment'),
  flavor: fc.nat(),
});

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 8, arbitrary: submitArb },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('finish' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('cancel' as const), pick: fc.nat() }) },
  { weight: 3, arbitrary: fc.constant({ kind: 'cycle' as const }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 1, max: 600_000 }) }),
  },
);

/** A scheduler for the world, and a driver of ops that keeps the live jobs and what runs. */
function harness(w: World) {
  const clock = new ManualClock();
  const s = new Scheduler({
    clock,
    placement: w.placement,
    fairSharing: { enabled: w.fairSharing, usageHalfLifeMs: 600_000 },
  });
  for (const f of FLAVORS) s.upsertFlavor(f);
  for (const n of w.nodes) s.upsertNode(n);
  for (const c of ['c1', 'c2']) s.upsertCohort({ name: c });
  for (const q of w.queues) s.upsertQueue(q);
  const live = new Map<string, JobSpec>();
  const running = new Map<string, { job: JobSpec; admission: Admission }>();
  const held = new Set<string>();
  let seq = 0;
  const record = (r: CycleResult) => {
    for (const a of r.admitted) running.set(a.jobId, { job: live.get(a.jobId)!, admission: a });
    for (const p of r.preempted) running.delete(p.victimId);
  };
  const apply = (op: Exclude<Op, { kind: 'cycle' }>) => {
    if (op.kind === 'submit') {
      const q = w.queues[op.queue % w.queues.length]!;
      const flavors = Object.keys(q.quotas);
      const first = flavors[op.flavor % flavors.length]!;
      const job: JobSpec = {
        id: `j${String(seq++).padStart(4, '0')}`,
        tenant: q.tenant,
        queue: q.name,
        priorityClass: op.priority,
        submitTime: clock.now(),
        podSets: [
          {
            name: 'main',
            count: op.pods,
            minCount: Math.min(op.minPods, op.pods),
            perPod: { gpu: op.gpu, cpu: 1000 },
            flavors: [first, ...flavors.filter((f) => f !== first)],
          },
        ],
        expectedDurationMs: 600_000,
      };
      try {
        s.submit(job);
        live.set(job.id, job);
      } catch (e) {
        if (!(e instanceof SchedulerInputError)) throw e;
      }
    } else if (op.kind === 'finish' || op.kind === 'cancel') {
      const ids = [...live.keys()];
      if (ids.length === 0) return;
      const id = ids[op.pick % ids.length]!;
      s[op.kind](id);
      live.delete(id);
      running.delete(id);
    } else if (op.kind === 'hold') {
      const tenant = w.queues[op.queue % w.queues.length]!.tenant;
      if (op.on) held.add(tenant);
      else held.delete(tenant);
      s.setAdmissionHolds(
        [...held].map((id) => ({
          scope: 'tenant' as const,
          id,
          exemptPriorityClasses: [],
          budget: { spent: 2, limit: 1, currency: 'EUR', period: '2026-12' },
        })),
      );
    } else if (op.kind === 'advance') clock.advance(op.ms);
  };
  return { s, clock, live, running, record, apply };
}

/** One cycle run as slices of `maxHeads` until it ends: the slices' lists concatenated. */
function slicedCycle(
  s: Scheduler,
  maxHeads: number,
  between?: (r: CycleResult) => void,
): { result: CycleResult; slices: number } {
  const all: CycleResult = { at: 0, admitted: [], preempted: [], pending: [], more: true };
  let slices = 0;
  for (;;) {
    const r = s.cycle({ maxHeads });
    if (slices === 0) all.at = r.at;
    slices++;
    all.admitted.push(...r.admitted);
    all.preempted.push(...r.preempted);
    all.pending.push(...r.pending);
    expect(slices).toBeLessThan(10_000);
    between?.(r);
    if (!r.more) return { result: { ...all, more: false }, slices };
  }
}

/** Node capacity and queue usage as the scheduler reports them equal what the admissions add up to. */
function checkAccounts(
  w: World,
  s: Scheduler,
  running: Map<string, { job: JobSpec; admission: Admission }>,
): void {
  const perGpu = new Map<string, number[]>();
  for (const n of w.nodes) {
    const f = FLAVORS.find((x) => x.name === n.flavor)!;
    perGpu.set(n.name, new Array<number>(n.gpus).fill(f.kind === 'gpu' ? 1000 : f.slicesPerGpu! * 1000));
  }
  const used = new Map<string, number>();
  for (const { job, admission } of running.values())
    for (const ps of admission.podSets) {
      const g = Math.round((job.podSets.find((p) => p.name === ps.name)!.perPod.gpu ?? 0) * 1000);
      used.set(`${job.queue}/${ps.flavor}`, (used.get(`${job.queue}/${ps.flavor}`) ?? 0) + g * ps.count);
      for (const pl of ps.placements)
        for (const i of pl.gpuIndices ?? [])
          perGpu.get(pl.node)![i]! -= ps.flavor === 'h100' && g < 1000 ? g : 1000;
    }
  const status = s.nodeStatus();
  for (const [name, gpus] of perGpu) {
    for (const f of gpus) expect(f).toBeGreaterThanOrEqual(0);
    expect(status.find((n) => n.name === name)!.gpus.map((x) => Math.round(x.free * 1000))).toEqual(gpus);
  }
  for (const q of w.queues)
    for (const r of s.queueStatus(q.name).resources.filter((x) => x.resource === 'gpu'))
      expect(Math.round(r.used * 1000)).toBe(used.get(`${q.name}/${r.flavor}`) ?? 0);
}

describe('sliced cycles', () => {
  it('with nothing in between, the slices of a cycle give the decisions, state and explanations of one unsliced cycle', () => {
    fc.assert(
      fc.property(
        worldArb,
        fc.array(opArb, { minLength: 5, maxLength: 50 }),
        fc.integer({ min: 1, max: 4 }),
        (w, ops, maxHeads) => {
          const a = harness(w);
          const b = harness(w);
          let sliced = 0;
          for (const op of [...ops, { kind: 'cycle' as const }]) {
            if (op.kind !== 'cycle') {
              a.apply(op);
              b.apply(op);
              continue;
            }
            const whole = a.s.cycle();
            expect(whole.more).toBe(false);
            const { result, slices } = slicedCycle(b.s, maxHeads);
            sliced += slices - 1;
            expect(result).toEqual(whole);
            a.record(whole);
            b.record(result);
            expect(b.s.debugState()).toEqual(a.s.debugState());
          }
          const ids = [...a.live.keys()];
          expect(ids.map((id) => b.s.explain(id))).toEqual(ids.map((id) => a.s.explain(id)));
          return sliced >= 0;
        },
      ),
      { numRuns: 100 },
    );
  });

  it('a burst cut into slices of one head ends with the same admissions and state, and each slice evaluates at most one head', () => {
    const w: World = {
      nodes: Array.from({ length: 4 }, (_, i) => ({
        name: `n${i}`,
        pool: 'p',
        flavor: 'h100',
        gpus: 8,
        cpu: 64_000,
        memory: 256_000,
      })),
      queues: [0, 1, 2].map((i) => ({
        name: `q${i}`,
        tenant: `t${i}`,
        cohort: 'c1',
        quotas: { h100: { gpu: { nominal: 8, borrowingLimit: 8 } } },
        preemption: { reclaimWithinCohort: 'Any' as const },
      })),
      fairSharing: true,
      placement: 'best-fit',
    };
    const a = harness(w);
    const b = harness(w);
    for (let i = 0; i < 60; i++) {
      const op = {
        kind: 'submit' as const,
        queue: i % 3,
        gpu: 1 + (i % 4),
        pods: 1,
        minPods: 1,
        priority: i % 5 === 0 ? 'production' : 'training',
        flavor: 0,
      };
      a.apply(op);
      b.apply(op);
    }
    const whole = a.s.cycle();
    const { result, slices } = slicedCycle(b.s, 1);
    expect(result).toEqual(whole);
    // Every head tried and every decision refreshed is one slice (a slice may also end a pass).
    expect(slices).toBeGreaterThanOrEqual(whole.admitted.length + whole.pending.length);
    expect(b.s.debugState()).toEqual(a.s.debugState());
  });

  it('with submits, finishes, cancels, holds and time between slices, capacity and quotas stay exact and cycles end', () => {
    const betweenArb = fc.array(
      fc.oneof(
        opArb.filter((o) => o.kind !== 'cycle'),
        fc.record({ kind: fc.constant('hold' as const), queue: fc.nat(), on: fc.boolean() }),
      ),
      { maxLength: 30 },
    );
    fc.assert(
      fc.property(
        worldArb,
        fc.array(opArb, { minLength: 5, maxLength: 40 }),
        betweenArb,
        fc.integer({ min: 1, max: 3 }),
        (w, ops, between, maxHeads) => {
          const h = harness(w);
          let k = 0;
          for (const op of [...ops, { kind: 'cycle' as const }]) {
            if (op.kind !== 'cycle') {
              h.apply(op);
              continue;
            }
            slicedCycle(h.s, maxHeads, (r) => {
              h.record(r);
              checkAccounts(w, h.s, h.running);
              if (!r.more) return;
              // Each event once: a stream of submits faster than the slices would keep one cycle going.
              const e = between[k++];
              if (e) h.apply(e as Exclude<Op, { kind: 'cycle' }>);
              checkAccounts(w, h.s, h.running);
            });
            for (const id of h.running.keys()) expect(h.s.jobState(id)).toBe('admitted');
          }
          // Once events stop, a cycle run to its end leaves nothing more to do.
          slicedCycle(h.s, maxHeads, h.record);
          expect(h.s.cycle().more).toBe(false);
          checkAccounts(w, h.s, h.running);
          // What was admitted while events came in between is what the core holds.
          for (const [id, { admission }] of h.running) expect(h.s.admissionOf(id)).toEqual(admission);
        },
      ),
      { numRuns: 80 },
    );
  });
});
