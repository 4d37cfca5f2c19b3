// Admission holds (spent hard budgets): held pending jobs are never admitted nor preempt, running
// jobs are untouched, lifting makes them eligible at the next cycle, and a hold behaves exactly as
// if its jobs were withdrawn while it matched and submitted again when it lifted.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type AdmissionHold,
  type CycleResult,
  type JobSpec,
  Scheduler,
  SchedulerInputError,
} from '../../../src/core/scheduling/index.js';
import { admittedIds, FLAVORS, ManualClock, makeCluster, makeJob, makeQueue, nodes } from '../builders.js';

const budget = { spent: 1234, limit: 1000, currency: 'USD', period: '2026-12' };
const tenantHold = (id: string, exempt = ['inference-critical']): AdmissionHold => ({
  scope: 'tenant',
  id,
  exemptPriorityClasses: exempt,
  budget,
});
const projectHold = (id: string, exempt: string[] = []): AdmissionHold => ({
  scope: 'project',
  id,
  exemptPriorityClasses: exempt,
  budget,
});
const withProject = (spec: JobSpec, project: string): JobSpec => ({ ...spec, project });

const cluster = () =>
  makeCluster({
    nodes: nodes(2),
    queues: [
      makeQueue('a').nominal('h100', 8),
      makeQueue('b').nominal('h100', 8),
      makeQueue('s').tenant('t-a').nominal('h100', 0).strictFIFO(),
    ],
  });

describe('admission holds', () => {
  it('keeps a held job out while other tenants and exempt classes are admitted; lifting admits it at the next cycle', () => {
    const { s } = cluster();
    s.setAdmissionHolds([tenantHold('t-a')]);
    s.submit(makeJob('a1').queue('a').gpus(2).build());
    s.submit(makeJob('a2').queue('a').gpus(2).priority('inference-critical').build());
    s.submit(makeJob('b1').queue('b').gpus(2).build());
    expect(admittedIds(s.cycle())).toEqual(['a2', 'b1']);
    expect(s.jobState('a1')).toBe('pending');
    expect(s.queueStatus('a').pendingCount).toBe(1);
    expect(admittedIds(s.cycle())).toEqual([]);
    s.setAdmissionHolds([]);
    expect(admittedIds(s.cycle())).toEqual(['a1']);
  });

  it('explains a held job with the numbers, no position and no ETA', () => {
    const { s } = cluster();
    s.submit(makeJob('a1').queue('a').gpus(2).duration(60_000).build());
    s.setAdmissionHolds([tenantHold('t-a')]);
    const e = s.explain('a1');
    expect(e).toMatchObject({
      state: 'pending',
      reason: 'BudgetExhausted',
      message:
        "The tenant's monthly budget is exhausted: 1,234.00 of 1,000.00 USD spent in 2026-12; jobs of this priority class wait until it is raised or the month ends",
      hold: { scope: 'tenant', id: 't-a', spent: 1234, limit: 1000, currency: 'USD', period: '2026-12' },
      eta: null,
      etaUnknownReason: 'BudgetExhausted',
    });
    expect(e.positionInQueue).toBeUndefined();
    expect(e.positionInCohort).toBeUndefined();
  });

  it('positions of the others exclude held jobs, and a held StrictFIFO head blocks nobody', () => {
    const { s } = makeCluster({
      nodes: nodes(1),
      queues: [makeQueue('s').tenant('t-a').nominal('h100', 8).strictFIFO()],
    });
    s.submit(
      withProject(
        makeJob('big').queue('s').tenant('t-a').gpus(8).pods(2).priority('production').build(),
        'p1',
      ),
    );
    s.submit(makeJob('small').queue('s').tenant('t-a').gpus(1).build());
    expect(admittedIds(s.cycle())).toEqual([]);
    expect(s.explain('small')).toMatchObject({ reason: 'StrictFIFOBlocked', positionInQueue: 2 });
    s.setAdmissionHolds([projectHold('p1')]);
    expect(s.explain('small')).toMatchObject({ positionInQueue: 1, queuePending: 1 });
    expect(admittedIds(s.cycle())).toEqual(['small']);
  });

  it('holds by project scope only the jobs of that project', () => {
    const { s } = cluster();
    s.setAdmissionHolds([projectHold('p1')]);
    s.submit(withProject(makeJob('p1-job').queue('a').gpus(1).priority('inference-critical').build(), 'p1'));
    s.submit(withProject(makeJob('p2-job').queue('a').gpus(1).build(), 'p2'));
    s.submit(makeJob('none').queue('a').gpus(1).build());
    expect(admittedIds(s.cycle())).toEqual(['none', 'p2-job']);
    expect(s.explain('p1-job')).toMatchObject({
      reason: 'BudgetExhausted',
      hold: { scope: 'project', id: 'p1' },
    });
    expect(s.explain('p1-job').message).toContain("The project's monthly budget is exhausted");
  });

  it('cancels and finishes held jobs', () => {
    const { s } = cluster();
    s.setAdmissionHolds([tenantHold('t-a')]);
    s.submit(makeJob('a1').queue('a').build());
    s.submit(makeJob('a2').queue('a').build());
    s.cancel('a1');
    s.finish('a2');
    expect(s.jobState('a1')).toBeUndefined();
    expect(s.jobState('a2')).toBeUndefined();
    expect((s.debugState() as { held: string[] }).held).toEqual([]);
    s.setAdmissionHolds([]);
    expect(admittedIds(s.cycle())).toEqual([]);
  });

  it('leaves running jobs alone; a victim evicted under a hold waits held', () => {
    const { s } = makeCluster({
      nodes: nodes(1),
      queues: [makeQueue('a').nominal('h100', 8).withinQueue('LowerPriority')],
    });
    s.submit(withProject(makeJob('r').queue('a').gpus(8).build(), 'p1'));
    expect(admittedIds(s.cycle())).toEqual(['r']);
    s.setAdmissionHolds([projectHold('p1', ['inference-critical'])]);
    expect(s.jobState('r')).toBe('admitted');
    s.submit(withProject(makeJob('vip').queue('a').gpus(8).priority('inference-critical').build(), 'p1'));
    const r = s.cycle();
    expect(admittedIds(r)).toEqual(['vip']);
    expect(r.preempted.map((p) => p.victimId)).toEqual(['r']);
    expect(s.explain('r')).toMatchObject({ reason: 'BudgetExhausted', preemptedBy: { jobId: 'vip' } });
    s.finish('vip');
    expect(admittedIds(s.cycle())).toEqual([]);
    s.setAdmissionHolds([]);
    expect(admittedIds(s.cycle())).toEqual(['r']);
  });

  it('preview of a held spec says BudgetExhausted with the numbers and changes nothing', () => {
    const { s } = cluster();
    s.setAdmissionHolds([tenantHold('t-a')]);
    const before = s.debugState();
    expect(s.preview(makeJob('p').queue('a').build())).toMatchObject({
      admissible: false,
      reason: 'BudgetExhausted',
      hold: { spent: 1234, limit: 1000 },
    });
    expect(s.preview(makeJob('p').queue('a').priority('inference-critical').build())).toMatchObject({
      admissible: true,
    });
    expect(s.debugState()).toEqual(before);
  });

  it('setting the same holds again changes nothing; new numbers move no job', () => {
    const { s } = cluster();
    s.submit(makeJob('a1').queue('a').gpus(8).pods(4).build());
    s.submit(makeJob('a2').queue('a').build());
    s.cycle();
    s.setAdmissionHolds([tenantHold('t-a')]);
    const before = s.debugState() as Record<string, unknown>;
    s.setAdmissionHolds([tenantHold('t-a')]);
    expect(s.debugState()).toEqual(before);
    s.setAdmissionHolds([{ ...tenantHold('t-a'), budget: { ...budget, spent: 1300 } }]);
    const after = s.debugState() as Record<string, unknown>;
    expect({ ...after, holds: null }).toEqual({ ...before, holds: null });
    expect(s.explain('a1').hold?.spent).toBe(1300);
  });

  it('rejects a malformed or duplicated hold', () => {
    const { s } = cluster();
    expect(() => s.setAdmissionHolds([tenantHold('t-a'), tenantHold('t-a')])).toThrow(SchedulerInputError);
    expect(() => s.setAdmissionHolds([{ ...tenantHold('t-a'), scope: 'queue' as 'tenant' }])).toThrow(
      SchedulerInputError,
    );
  });
});

// ─── Property: a hold is exactly "withdrawn while it matches, submitted again when it lifts" ───

type Op =
  | { kind: 'submit'; queue: number; gpu: number; pods: number; priority: string; project: number }
  | { kind: 'finish' | 'cancel'; pick: number }
  | { kind: 'cycle' }
  | { kind: 'advance'; ms: number }
  | { kind: 'holds'; picks: { target: number; exempt: boolean }[] };

const TARGETS: [AdmissionHold['scope'], string][] = [
  ['tenant', 't0'],
  ['tenant', 't1'],
  ['project', 'p0'],
  ['project', 'p1'],
];
const CLASSES = ['inference-critical', 'production', 'training', 'experiment'];

const worldArb = fc.record({
  gpus: fc.array(fc.integer({ min: 2, max: 8 }), { minLength: 1, maxLength: 3 }),
  queues: fc.array(
    fc.record({
      nominal: fc.integer({ min: 1, max: 8 }),
      cohort: fc.constantFrom(true, true, false),
      strict: fc.boolean(),
      withinQueue: fc.constantFrom('Never', 'LowerPriority', 'LowerOrNewerEqualPriority' as const),
      reclaim: fc.constantFrom('Never', 'LowerPriority', 'Any', 'Any' as const),
    }),
    { minLength: 1, maxLength: 4 },
  ),
  fairSharing: fc.boolean(),
  placement: fc.constantFrom('best-fit', 'fragmentation-aware' as const),
});
type World = typeof worldArb extends fc.Arbitrary<infer W> ? W : never;

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      kind: fc.constant('submit' as const),
      queue: fc.nat(),
      gpu: fc.constantFrom(0.5, 1, 1, 2, 4),
      pods: fc.integer({ min: 1, max: 2 }),
      priority: fc.constantFrom(...CLASSES),
      project: fc.integer({ min: 0, max: 2 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constantFrom('finish' as const, 'cancel' as const), pick: fc.nat() }),
  },
  { weight: 6, arbitrary: fc.constant({ kind: 'cycle' as const }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 1, max: 600_000 }) }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('holds' as const),
      picks: fc.uniqueArray(fc.record({ target: fc.integer({ min: 0, max: 3 }), exempt: fc.boolean() }), {
        selector: (p) => p.target,
        maxLength: 3,
      }),
    }),
  },
);

function build(w: World, clock: ManualClock): Scheduler {
  const s = new Scheduler({ clock, placement: w.placement, fairSharing: { enabled: w.fairSharing } });
  for (const f of FLAVORS) s.upsertFlavor(f);
  w.gpus.forEach((g, i) =>
    s.upsertNode({ name: `n${i}`, pool: 'default', flavor: 'h100', gpus: g, cpu: 64_000, memory: 256_000 }),
  );
  s.upsertCohort({ name: 'c' });
  w.queues.forEach((q, i) =>
    s.upsertQueue({
      name: `q${i}`,
      tenant: `t${i % 2}`,
      quotas: { h100: { gpu: { nominal: q.nominal } } },
      ...(q.cohort ? { cohort: 'c' } : {}),
      queueingStrategy: q.strict ? 'StrictFIFO' : 'BestEffortFIFO',
      preemption: { withinQueue: q.withinQueue, reclaimWithinCohort: q.reclaim },
    }),
  );
  return s;
}

/** debugState without the hold bookkeeping and the held jobs, in an order that does not depend on
 * resubmission.
 */
function normalized(s: Scheduler, held: Set<string>): unknown {
  const d = s.debugState() as { jobs: [string][]; shapes: [string][]; holds?: unknown; held?: unknown };
  const { holds: _h, held: _held, ...rest } = d;
  const byKey = (a: [string], b: [string]) => (a[0] < b[0] ? -1 : 1);
  return {
    ...rest,
    jobs: d.jobs.filter((j) => !held.has(j[0])).sort(byKey),
    shapes: [...d.shapes].sort(byKey),
  };
}

/** Cycle results compared without `preemptedBy` (a withdrawn-and-resubmitted job forgets who evicted it; a held one does not). */
const comparable = (r: CycleResult) => ({ ...r, pending: r.pending.map(({ preemptedBy: _p, ...d }) => d) });

describe('admission holds (property)', () => {
  it('never admits a held job, and behaves exactly as withdrawing held jobs and resubmitting them on lift', () => {
    fc.assert(
      fc.property(worldArb, fc.array(opArb, { minLength: 10, maxLength: 60 }), (w, ops) => {
        const clockA = new ManualClock();
        const clockB = new ManualClock();
        const a = build(w, clockA);
        const b = build(w, clockB);
        let holds: AdmissionHold[] = [];
        const matches = (j: JobSpec) =>
          holds.some(
            (h) =>
              (h.scope === 'tenant' ? j.tenant === h.id : j.project === h.id) &&
              !h.exemptPriorityClasses.includes(j.priorityClass),
          );
        const live = new Map<string, JobSpec>(); // submission order
        const stash = new Map<string, JobSpec>(); // withdrawn from b, in the order a held them
        const pendingInB = new Set<string>();
        let seq = 0;
        const check = () => expect(normalized(a, new Set(stash.keys()))).toEqual(normalized(b, new Set()));
        const withdraw = (id: string) => {
          b.cancel(id);
          pendingInB.delete(id);
          stash.set(id, live.get(id)!);
        };
        // Low-priority work running first, so that later jobs have victims (some of them under a hold by
        // then).
        const fill: Op[] = w.queues.flatMap((_, i) =>
          [0, 1, 2].map((p) => ({
            kind: 'submit' as const,
            queue: i,
            gpu: 1,
            pods: 2,
            priority: 'experiment',
            project: p,
          })),
        );
        for (const op of [
          ...fill,
          { kind: 'cycle' as const },
          ...ops,
          { kind: 'holds' as const, picks: [] },
          { kind: 'cycle' as const },
          { kind: 'cycle' as const },
        ]) {
          if (op.kind === 'submit') {
            const qi = op.queue % w.queues.length;
            const job: JobSpec = {
              id: `j${seq++}`,
              tenant: `t${qi % 2}`,
              ...(op.project < 2 ? { project: `p${op.project}` } : {}),
              queue: `q${qi}`,
              priorityClass: op.priority,
              submitTime: clockA.now(),
              podSets: [{ name: 'main', count: op.pods, perPod: { gpu: op.gpu } }],
              expectedDurationMs: 600_000,
            };
            let err: unknown = null;
            try {
              a.submit(job);
            } catch (e) {
              err = e;
            }
            if (err) {
              expect(err).toBeInstanceOf(SchedulerInputError);
              continue;
            }
            live.set(job.id, job);
            if (matches(job)) {
              b.preview(job); // b will accept it when it is resubmitted: the same validation as a submit, undone
              stash.set(job.id, job);
            } else {
              b.submit(job);
              pendingInB.add(job.id);
            }
          } else if (op.kind === 'finish' || op.kind === 'cancel') {
            const ids = [...live.keys()];
            if (ids.length === 0) continue;
            const id = ids[op.pick % ids.length]!;
            a[op.kind](id);
            if (stash.has(id)) stash.delete(id);
            else b[op.kind](id);
            live.delete(id);
            pendingInB.delete(id);
          } else if (op.kind === 'advance') {
            clockA.advance(op.ms);
            clockB.advance(op.ms);
          } else if (op.kind === 'holds') {
            holds = op.picks.map(({ target, exempt }) => {
              const [scope, id] = TARGETS[target]!;
              return { scope, id, exemptPriorityClasses: exempt ? ['inference-critical'] : [], budget };
            });
            a.setAdmissionHolds(holds);
            // In submission order, as the core does (the order decides which withdrawal unblocks a
            // StrictFIFO queue).
            for (const [id, job] of live) if (pendingInB.has(id) && matches(job)) withdraw(id);
            for (const [id, job] of [...stash]) {
              if (matches(job)) continue;
              stash.delete(id);
              b.submit(job);
              pendingInB.add(id);
            }
          } else {
            const ra = a.cycle();
            const rb = b.cycle();
            for (const x of ra.admitted) expect(matches(live.get(x.jobId)!)).toBe(false);
            expect(comparable(ra)).toEqual(comparable(rb));
            for (const x of rb.admitted) pendingInB.delete(x.jobId);
            for (const p of rb.preempted) {
              pendingInB.add(p.victimId);
              if (matches(live.get(p.victimId)!)) withdraw(p.victimId);
            }
          }
          for (const id of stash.keys()) expect(a.explain(id).reason).toBe('BudgetExhausted');
          check();
        }
        expect(stash.size).toBe(0);
      }),
      { numRuns: 150 },
    );
  });

  it('a what-if under holds leaves the state exactly as it was', () => {
    fc.assert(
      fc.property(
        worldArb,
        fc.array(opArb, { minLength: 5, maxLength: 30 }),
        fc.array(opArb, { minLength: 1, maxLength: 4 }),
        (w, ops, probes) => {
          const clock = new ManualClock();
          const s = build(w, clock);
          let seq = 0;
          const spec = (op: Extract<Op, { kind: 'submit' }>, id: string): JobSpec => {
            const qi = op.queue % w.queues.length;
            return {
              id,
              tenant: `t${qi % 2}`,
              ...(op.project < 2 ? { project: `p${op.project}` } : {}),
              queue: `q${qi}`,
              priorityClass: op.priority,
              submitTime: clock.now(),
              podSets: [{ name: 'main', count: op.pods, perPod: { gpu: op.gpu } }],
            };
          };
          const ids: string[] = [];
          for (const op of ops) {
            try {
              if (op.kind === 'submit') {
                s.submit(spec(op, `j${seq}`));
                ids.push(`j${seq++}`);
              } else if (op.kind === 'cycle') s.cycle();
              else if (op.kind === 'holds')
                s.setAdmissionHolds(
                  op.picks.map(({ target, exempt }) => ({
                    scope: TARGETS[target]![0],
                    id: TARGETS[target]![1],
                    exemptPriorityClasses: exempt ? ['inference-critical'] : [],
                    budget,
                  })),
                );
            } catch (e) {
              if (!(e instanceof SchedulerInputError)) throw e;
            }
          }
          for (const [i, p] of probes.entries()) {
            if (p.kind !== 'submit') continue;
            const before = s.debugState();
            try {
              s.preview(spec(p, `probe${i}`));
              for (const id of ids) s.explain(id);
            } catch (e) {
              if (!(e instanceof SchedulerInputError)) throw e;
            }
            expect(s.debugState()).toEqual(before);
          }
        },
      ),
      { numRuns: 120 },
    );
  });
});
