// Scheduler.reconfigure (src/core/scheduling/reconfigure.ts): queue and cohort specs replaced on a
// live core leave it deciding exactly as a core rebuilt from the same data (the services' rebuild
// from the database: configuration, running jobs restored, pending ones submitted in submit order).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type Admission,
  type CohortSpec,
  type CycleResult,
  type JobSpec,
  type NodeSpec,
  type QueueSpec,
  Scheduler,
  SchedulerInputError,
} from '../../../src/core/scheduling/index.js';
import { FLAVORS, ManualClock } from '../builders.js';

interface QuotaArb {
  h100: number;
  mig: number | undefined;
  borrowingLimit: number | undefined;
  lendingLimit: number | undefined;
  weight: number;
  cohort: number;
}

interface World {
  nodes: NodeSpec[];
  queues: {
    base: QuotaArb;
    strict: boolean;
    withinQueue: 'Never' | 'LowerPriority';
    reclaim: 'Never' | 'LowerPriority' | 'Any';
  }[];
  cohortH100: number[];
}

const quotaArb: fc.Arbitrary<QuotaArb> = fc.record({
  h100: fc.integer({ min: 0, max: 12 }),
  mig: fc.option(fc.integer({ min: 0, max: 14 }), { nil: undefined }),
  borrowingLimit: fc.option(fc.integer({ min: 0, max: 6 }), { nil: undefined }),
  lendingLimit: fc.option(fc.integer({ min: 0, max: 6 }), { nil: undefined }),
  weight: fc.constantFrom(0.5, 1, 1, 2),
  cohort: fc.integer({ min: 0, max: 2 }),
});

const worldArb: fc.Arbitrary<World> = fc.record({
  nodes: fc
    .array(
      fc.record({ flavor: fc.constantFrom('h100', 'h100', 'a100-1g'), gpus: fc.integer({ min: 1, max: 8 }) }),
      { minLength: 1, maxLength: 5 },
    )
    .map((ns) =>
      ns.map((n, i) => ({
        name: `n${i}`,
        pool: 'default',
        flavor: n.flavor,
        gpus: n.gpus,
        cpu: 64_000,
        memory: 256_000,
      })),
    ),
  queues: fc.array(
    fc.record({
      base: quotaArb,
      strict: fc.boolean(),
      withinQueue: fc.constantFrom('Never', 'LowerPriority' as const),
      reclaim: fc.constantFrom('Never', 'LowerPriority', 'Any' as const),
    }),
    { minLength: 1, maxLength: 4 },
  ),
  cohortH100: fc.array(fc.integer({ min: 0, max: 4 }), { minLength: 2, maxLength: 2 }),
});

function queueSpec(w: World, i: number, quota: QuotaArb): QueueSpec {
  const q = w.queues[i]!;
  const limits = {
    ...(quota.borrowingLimit !== undefined ? { borrowingLimit: quota.borrowingLimit } : {}),
    ...(quota.lendingLimit !== undefined ? { lendingLimit: Math.min(quota.lendingLimit, quota.h100) } : {}),
  };
  const spec: QueueSpec = {
    name: `q${i}`,
    tenant: `t${i}`,
    quotas: {
      h100: { gpu: { nominal: quota.h100, ...limits } },
      ...(quota.mig !== undefined ? { 'a100-1g': { gpu: { nominal: quota.mig } } } : {}),
    },
    weight: quota.weight,
    queueingStrategy: q.strict ? 'StrictFIFO' : 'BestEffortFIFO',
    preemption: { withinQueue: q.withinQueue, reclaimWithinCohort: q.reclaim },
  };
  if (quota.cohort > 0) spec.cohort = `c${quota.cohort}`;
  return spec;
}

const cohortSpecs = (h100: number[]): CohortSpec[] =>
  h100.map(
    (n, i): CohortSpec => ({ name: `c${i + 1}`, quotas: n > 0 ? { h100: { gpu: { nominal: n } } } : {} }),
  );

type Op =
  | { kind: 'submit'; queue: number; gpu: number; pods: number; priority: string; flavor: number }
  | { kind: 'finish'; pick: number }
  | { kind: 'cycle' }
  | { kind: 'advance'; ms: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      kind: fc.constant('submit' as const),
      queue: fc.nat(),
      gpu: fc.constantFrom(0.5, 1, 1, 2, 3, 4),
      pods: fc.integer({ min: 1, max: 3 }),
      priority: fc.constantFrom('production', 'training', 'training', 'experiment'),
      flavor: fc.nat(),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('finish' as const), pick: fc.nat() }) },
  { weight: 3, arbitrary: fc.constant({ kind: 'cycle' as const }) },
  // Short steps: nothing waits the two hours after which a head may hold a reservation.
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 1, max: 60_000 }) }),
  },
);

function newCore(clock: ManualClock, w: World, queues: QueueSpec[], cohorts: CohortSpec[]): Scheduler {
  const s = new Scheduler({ clock, placement: 'best-fit', fairSharing: { enabled: true } });
  for (const f of FLAVORS) s.upsertFlavor(f);
  for (const n of w.nodes) s.upsertNode(n);
  for (const c of cohorts) s.upsertCohort(c);
  for (const q of queues) s.upsertQueue(q);
  return s;
}

/** The live core after `ops`, with what a database would hold: live jobs, admissions in admission order. */
function live(w: World, ops: Op[]) {
  const clock = new ManualClock();
  const s = newCore(
    clock,
    w,
    w.queues.map((q, i) => queueSpec(w, i, q.base)),
    cohortSpecs(w.cohortH100),
  );
  const jobs = new Map<string, JobSpec>();
  const running = new Map<string, Admission>();
  let seq = 0;
  const record = (r: CycleResult) => {
    // A victim is never admitted again in the cycle that evicted it (it may have been admitted earlier in it).
    for (const a of r.admitted) {
      running.delete(a.jobId);
      running.set(a.jobId, a);
    }
    for (const p of r.preempted) running.delete(p.victimId);
  };
  for (const op of ops) {
    if (op.kind === 'submit') {
      const q = queueSpec(w, op.queue % w.queues.length, w.queues[op.queue % w.queues.length]!.base);
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
            perPod: { gpu: op.gpu, cpu: 1000 },
            flavors: [first, ...flavors.filter((f) => f !== first)],
          },
        ],
        expectedDurationMs: 600_000,
      };
      try {
        s.submit(job);
        jobs.set(job.id, job);
      } catch (e) {
        if (!(e instanceof SchedulerInputError)) throw e;
      }
    } else if (op.kind === 'finish') {
      const ids = [...jobs.keys()];
      if (ids.length === 0) continue;
      const id = ids[op.pick % ids.length]!;
      s.finish(id);
      jobs.delete(id);
      running.delete(id);
    } else if (op.kind === 'cycle') record(s.cycle());
    else clock.advance(op.ms);
  }
  return { s, clock, jobs, running, record };
}

/** As core-loader.ts builds a core: configuration, running jobs restored, pending ones in submit order. */
function rebuilt(
  w: World,
  l: ReturnType<typeof live>,
  queues: QueueSpec[],
  cohorts: CohortSpec[],
): Scheduler {
  const s = newCore(l.clock, w, queues, cohorts);
  s.restore([...l.running].map(([id, admission]) => ({ job: l.jobs.get(id)!, admission })));
  const pending = [...l.jobs.values()]
    .filter((j) => !l.running.has(j.id))
    .sort((a, b) => a.submitTime - b.submitTime || (a.id < b.id ? -1 : 1));
  for (const j of pending) s.submit(j);
  return s;
}

/** A cycle's decisions, without what only explains the past (who preempted a job before the change). */
const decisions = (r: CycleResult) => ({
  ...r,
  pending: r.pending.map(({ preemptedBy: _, message: __, ...d }) => d),
});

/**
 * The decision state (debugState), without the decayed usage history (unused without a half-life,
 * as the services run it; a core built anew starts it at its build time) nor jobs and pending shapes
 * in the order they were first seen.
 */
function state(s: Scheduler) {
  const d = s.debugState() as {
    queues: { history?: unknown }[];
    jobs: [string, ...unknown[]][];
    shapes: [string, ...unknown[]][];
  };
  for (const q of d.queues) delete q.history;
  const byKey = (a: [string, ...unknown[]], b: [string, ...unknown[]]) => (a[0] < b[0] ? -1 : 1);
  d.jobs.sort(byKey);
  d.shapes.sort(byKey);
  return d;
}

describe('reconfigure', () => {
  it('replacing queue and cohort specs in place decides as a core rebuilt from the same data', () => {
    fc.assert(
      fc.property(
        worldArb,
        fc.array(opArb, { minLength: 5, maxLength: 40 }),
        fc.array(fc.option(quotaArb, { nil: undefined }), { minLength: 4, maxLength: 4 }),
        fc.array(fc.integer({ min: 0, max: 4 }), { minLength: 2, maxLength: 2 }),
        fc.array(opArb, { minLength: 0, maxLength: 15 }),
        (w, ops, changes, cohortH100, after) => {
          const l = live(w, [...ops, { kind: 'cycle' }]);
          const queues = w.queues.map((q, i) => queueSpec(w, i, changes[i] ?? q.base));
          const cohorts = cohortSpecs(cohortH100);
          const before = l.s.debugState();
          if (!l.s.reconfigure({ cohorts, queues })) {
            // A queue with jobs would declare other flavors: refused, nothing changed (the services rebuild).
            expect(l.s.debugState()).toEqual(before);
            return;
          }
          const b = rebuilt(w, l, queues, cohorts);
          expect(state(l.s)).toEqual(state(b));
          for (const q of queues) expect(l.s.queueStatus(q.name)).toEqual(b.queueStatus(q.name));
          // The next cycle, then more work on both: the same decisions every time.
          for (const op of [{ kind: 'cycle' as const }, ...after, { kind: 'cycle' as const }]) {
            if (op.kind === 'cycle') {
              const r = l.s.cycle();
              expect(decisions(r)).toEqual(decisions(b.cycle()));
              expect(state(l.s)).toEqual(state(b));
              l.record(r);
            } else if (op.kind === 'advance') l.clock.advance(op.ms);
            else if (op.kind === 'finish') {
              const ids = [...l.jobs.keys()];
              if (ids.length === 0) continue;
              const id = ids[op.pick % ids.length]!;
              l.s.finish(id);
              b.finish(id);
              l.jobs.delete(id);
              l.running.delete(id);
            }
          }
          expect(l.s.nodeStatus()).toEqual(b.nodeStatus());
          for (const q of queues) expect(l.s.queueStatus(q.name)).toEqual(b.queueStatus(q.name));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('checks every spec before setting any: a refused batch changes nothing', () => {
    const w: World = {
      nodes: [{ name: 'n0', pool: 'default', flavor: 'h100', gpus: 8, cpu: 64_000, memory: 256_000 }],
      queues: [
        {
          base: {
            h100: 4,
            mig: undefined,
            borrowingLimit: undefined,
            lendingLimit: undefined,
            weight: 1,
            cohort: 1,
          },
          strict: false,
          withinQueue: 'Never',
          reclaim: 'Never',
        },
      ],
      cohortH100: [0, 0],
    };
    const l = live(w, [
      { kind: 'submit', queue: 0, gpu: 2, pods: 3, priority: 'training', flavor: 0 },
      { kind: 'cycle' },
    ]);
    const before = l.s.debugState();
    const good = queueSpec(w, 0, { ...w.queues[0]!.base, h100: 8 });
    const bad: QueueSpec = { ...good, name: 'other', quotas: { nope: { gpu: { nominal: 1 } } } };
    expect(() => l.s.reconfigure({ queues: [good, bad] })).toThrow(SchedulerInputError);
    expect(() =>
      l.s.reconfigure({
        cohorts: [
          { name: 'c1', parent: 'c2' },
          { name: 'c2', parent: 'c1' },
        ],
      }),
    ).toThrow(/own ancestor/);
    expect(l.s.debugState()).toEqual(before);
    expect(l.s.configuration().queues).toEqual([queueSpec(w, 0, w.queues[0]!.base)]);
  });

  it('takes new cohorts and the queues placed in them in one batch', () => {
    const w: World = {
      nodes: [{ name: 'n0', pool: 'default', flavor: 'h100', gpus: 8, cpu: 64_000, memory: 256_000 }],
      queues: [
        {
          base: {
            h100: 2,
            mig: undefined,
            borrowingLimit: undefined,
            lendingLimit: undefined,
            weight: 1,
            cohort: 0,
          },
          strict: false,
          withinQueue: 'Never',
          reclaim: 'Never',
        },
      ],
      cohortH100: [0, 0],
    };
    const l = live(w, [
      { kind: 'submit', queue: 0, gpu: 4, pods: 1, priority: 'training', flavor: 0 },
      { kind: 'cycle' },
    ]);
    expect(l.running.size).toBe(0);
    l.s.reconfigure({
      cohorts: [
        { name: 'child', parent: 'top' },
        { name: 'top', quotas: { h100: { gpu: { nominal: 4 } } } },
      ],
      queues: [{ ...queueSpec(w, 0, w.queues[0]!.base), cohort: 'child' }],
    });
    // Borrowing 2 from the new cohort's nominal: the pending job is admitted by the next cycle.
    expect(l.s.cycle().admitted.map((a) => a.jobId)).toEqual(['j0000']);
    expect(l.s.configuration().cohorts.map((c) => c.name)).toEqual(['c1', 'c2', 'child', 'top']);
  });

  it('during a cycle cut into slices, the rest of the cycle decides under the new specs', () => {
    const w: World = {
      nodes: [{ name: 'n0', pool: 'default', flavor: 'h100', gpus: 8, cpu: 64_000, memory: 256_000 }],
      queues: [0, 1, 2].map(() => ({
        base: {
          h100: 1,
          mig: undefined,
          borrowingLimit: undefined,
          lendingLimit: undefined,
          weight: 1,
          cohort: 0,
        },
        strict: false,
        withinQueue: 'Never' as const,
        reclaim: 'Never' as const,
      })),
      cohortH100: [0, 0],
    };
    const submits: Op[] = [0, 1, 2].map((queue) => ({
      kind: 'submit',
      queue,
      gpu: 2,
      pods: 1,
      priority: 'training',
      flavor: 0,
    }));
    const l = live(w, submits);
    const first = l.s.cycle({ maxHeads: 1 });
    expect(first.more).toBe(true);
    l.s.reconfigure({ queues: [0, 1, 2].map((i) => queueSpec(w, i, { ...w.queues[i]!.base, h100: 2 })) });
    const rest: CycleResult[] = [first];
    while (rest[rest.length - 1]!.more) rest.push(l.s.cycle({ maxHeads: 1 }));
    // Every job fits its new nominal: all three admitted within the same cycle, none left pending.
    expect(rest.flatMap((r) => r.admitted.map((a) => a.jobId)).sort()).toEqual(['j0000', 'j0001', 'j0002']);
    expect(l.s.cycle().admitted).toEqual([]);
  });
});
