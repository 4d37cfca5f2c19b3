// Random worlds for the guaranteed-within-nominal rule (core guaranteed.ts; cases in
// guaranteed-within-nominal.test.ts): queues in flat or nested cohorts with borrowing and lending
// limits, every preemption policy, fair sharing on or off, mixed priority classes. After every cycle:
// (a) the never-preempted usage of every queue and flavor is within its nominal, and the core's own
// count of it agrees with the admissions; (c) no job of a never-preempted class is a victim; (d) a
// never-preempted job's quota wait shows that usage and at most the room it leaves. And (b): where
// reclaim can free everything the cohort's queues hold above their nominals, a never-preempted job
// that fits its queue's nominal beside the queue's never-preempted jobs is admitted in the next cycle.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type CycleResult,
  type JobSpec,
  type QueueSpec,
  Scheduler,
  SchedulerInputError,
} from '../../../src/core/scheduling/index.js';
import { FLAVORS, ManualClock } from '../builders.js';

const CLASSES = ['inference-critical', 'inference-critical', 'production', 'training', 'experiment'] as const;
const GUARANTEED = 'inference-critical';

const policyArb = fc.record({
  withinQueue: fc.constantFrom('Never', 'LowerPriority', 'LowerOrNewerEqualPriority' as const),
  reclaimWithinCohort: fc.constantFrom('Never', 'LowerPriority', 'Any' as const),
  borrowWithinCohort: fc.option(fc.record({ policy: fc.constantFrom('Never', 'LowerPriority' as const) }), {
    nil: undefined,
  }),
});

const worldArb = fc.record({
  nodes: fc.array(
    fc.record({ flavor: fc.constantFrom('h100', 'h100', 'a100'), gpus: fc.integer({ min: 1, max: 8 }) }),
    {
      minLength: 1,
      maxLength: 6,
    },
  ),
  nested: fc.boolean(),
  queues: fc.array(
    fc.record({
      cohort: fc.integer({ min: 0, max: 2 }),
      h100: fc.integer({ min: 0, max: 10 }),
      a100: fc.option(fc.integer({ min: 0, max: 8 }), { nil: undefined }),
      borrowingLimit: fc.option(fc.integer({ min: 0, max: 4 }), { nil: undefined }),
      lendingLimit: fc.option(fc.integer({ min: 0, max: 6 }), { nil: undefined }),
      strict: fc.boolean(),
      preemption: policyArb,
    }),
    { minLength: 1, maxLength: 5 },
  ),
  fairSharing: fc.boolean(),
});

type Op =
  | { kind: 'submit'; queue: number; gpu: number; pods: number; cls: number; flavor: number }
  | { kind: 'finish'; pick: number }
  | { kind: 'cycle' }
  | { kind: 'advance'; ms: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      kind: fc.constant('submit' as const),
      queue: fc.nat(),
      gpu: fc.constantFrom(1, 1, 2, 4),
      pods: fc.integer({ min: 1, max: 3 }),
      cls: fc.nat(),
      flavor: fc.nat(),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('finish' as const), pick: fc.nat() }) },
  { weight: 3, arbitrary: fc.constant({ kind: 'cycle' as const }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 1, max: 600_000 }) }),
  },
);

type World = typeof worldArb extends fc.Arbitrary<infer W> ? W : never;

function build(w: World, clock: ManualClock): { s: Scheduler; queues: QueueSpec[] } {
  const s = new Scheduler({ clock, fairSharing: { enabled: w.fairSharing } });
  for (const f of FLAVORS) s.upsertFlavor(f);
  w.nodes.forEach((n, i) => {
    s.upsertNode({ name: `n${i}`, pool: 'p', flavor: n.flavor, gpus: n.gpus, cpu: 64_000, memory: 256_000 });
  });
  const cohorts = w.nested
    ? [{ name: 'root' }, { name: 'c1', parent: 'root' }, { name: 'c2', parent: 'root' }]
    : [{ name: 'c1' }, { name: 'c2' }];
  for (const c of cohorts) s.upsertCohort(c);
  const queues = w.queues.map((q, i): QueueSpec => {
    const limits = {
      ...(q.borrowingLimit !== undefined ? { borrowingLimit: q.borrowingLimit } : {}),
      ...(q.lendingLimit !== undefined ? { lendingLimit: q.lendingLimit } : {}),
    };
    return {
      name: `q${i}`,
      tenant: `t${i}`,
      quotas: {
        h100: { gpu: { nominal: q.h100, ...limits } },
        ...(q.a100 !== undefined ? { a100: { gpu: { nominal: q.a100 } } } : {}),
      },
      queueingStrategy: q.strict ? 'StrictFIFO' : 'BestEffortFIFO',
      preemption: JSON.parse(JSON.stringify(q.preemption)) as NonNullable<QueueSpec['preemption']>,
      ...(q.cohort > 0 ? { cohort: `c${q.cohort}` } : {}),
    };
  });
  for (const q of queues) s.upsertQueue(q);
  return { s, queues };
}

/** Never-preempted GPUs per `queue/flavor` from the admissions alone. */
function guaranteedUse(
  running: Map<string, { job: JobSpec; flavor: string; gpus: number }[]>,
): Map<string, number> {
  const g = new Map<string, number>();
  for (const parts of running.values())
    for (const p of parts) {
      if (p.job.priorityClass !== GUARANTEED) continue;
      const k = `${p.job.queue}/${p.flavor}`;
      g.set(k, (g.get(k) ?? 0) + p.gpus);
    }
  return g;
}

function checkCycle(
  s: Scheduler,
  queues: QueueSpec[],
  r: CycleResult,
  live: Map<string, JobSpec>,
  running: Map<string, { job: JobSpec; flavor: string; gpus: number }[]>,
): void {
  // (c) no victim of a never-preempted class
  for (const p of r.preempted) expect(live.get(p.victimId)?.priorityClass).not.toBe(GUARANTEED);
  const g = guaranteedUse(running);
  const dbg = s.debugState() as { queues: { name: string; guaranteed: Record<string, number[]> }[] };
  for (const q of queues)
    for (const [f, res] of Object.entries(q.quotas)) {
      const used = g.get(`${q.name}/${f}`) ?? 0;
      // (a) within the nominal, and the core's count agrees
      expect(used).toBeLessThanOrEqual(res.gpu!.nominal);
      const mine = dbg.queues.find((x) => x.name === q.name)!.guaranteed[f]?.[0] ?? 0;
      expect(mine).toBe(Math.round(used * 1000));
    }
  // (d) a quota wait of a never-preempted job shows its queue's never-preempted usage and the room it leaves
  for (const d of r.pending) {
    const sf = d.shortfall;
    if (!sf?.nominalOnly || d.reason !== 'WaitingForQuota' || sf.resource !== 'gpu') continue;
    const used = g.get(`${d.queue}/${sf.flavor}`) ?? 0;
    expect(sf.guaranteedUsed).toBe(used);
    expect(sf.available).toBeLessThanOrEqual(Math.max(0, sf.nominal - used) + 1e-9);
    expect(d.message).toContain(`never preempted ${used},`);
    expect(d.message).toContain(`(${used} of ${sf.nominal})`);
    if (sf.requested > sf.nominal - used) expect(d.message).toContain('it waits for those jobs to end');
  }
}

describe('guaranteed within nominal, random worlds', () => {
  it('(a) never-preempted usage within nominal, (c) never a victim, (d) the wait in those numbers', () => {
    fc.assert(
      fc.property(worldArb, fc.array(opArb, { minLength: 5, maxLength: 40 }), (w, ops) => {
        const clock = new ManualClock();
        const { s, queues } = build(w, clock);
        const live = new Map<string, JobSpec>();
        const running = new Map<string, { job: JobSpec; flavor: string; gpus: number }[]>();
        let seq = 0;
        for (const op of [...ops, { kind: 'cycle' } as Op]) {
          if (op.kind === 'submit') {
            const q = queues[op.queue % queues.length]!;
            const flavors = Object.keys(q.quotas);
            const first = flavors[op.flavor % flavors.length]!;
            const job: JobSpec = {
              id: `j${seq++}`,
              tenant: q.tenant,
              queue: q.name,
              priorityClass: CLASSES[op.cls % CLASSES.length]!,
              submitTime: clock.now(),
              podSets: [
                {
                  name: 'm',
                  count: op.pods,
                  perPod: { gpu: op.gpu, cpu: 1000 },
                  flavors: [first, ...flavors.filter((f) => f !== first)],
                },
              ],
            };
            try {
              s.submit(job);
              live.set(job.id, job);
            } catch (e) {
              if (!(e instanceof SchedulerInputError)) throw e;
            }
          } else if (op.kind === 'finish') {
            const ids = [...live.keys()];
            if (ids.length === 0) continue;
            const id = ids[op.pick % ids.length]!;
            s.finish(id);
            live.delete(id);
            running.delete(id);
          } else if (op.kind === 'advance') clock.advance(op.ms);
          else {
            const r = s.cycle();
            for (const p of r.preempted) running.delete(p.victimId);
            for (const a of r.admitted) {
              const job = live.get(a.jobId)!;
              const per = job.podSets[0]!.perPod.gpu ?? 0;
              running.set(
                a.jobId,
                a.podSets.map((ps) => ({ job, flavor: ps.flavor, gpus: per * ps.count })),
              );
            }
            checkCycle(s, queues, r, live, running);
          }
        }
      }),
      { numRuns: 150 },
    );
  });

  it('(b) within its room beside the never-preempted jobs it is admitted in the next cycle, whatever borrows or fills the nominal', () => {
    // Cluster capacity = sum of nominals, one flavor, one-GPU pods (no fragmentation), no youth or
    // lost-run limits, reclaim of lower priority or any: whatever a queue holds above its nominal can be
    // freed, so the room within a nominal can always be made.
    const arb = fc.record({
      nominals: fc.array(fc.integer({ min: 0, max: 10 }), { minLength: 2, maxLength: 5 }),
      jobs: fc.array(fc.record({ queue: fc.nat(), pods: fc.integer({ min: 1, max: 6 }), cls: fc.nat() }), {
        maxLength: 30,
      }),
      within: fc.constantFrom('Never', 'LowerPriority', 'LowerOrNewerEqualPriority' as const),
      reclaim: fc.constantFrom('LowerPriority', 'Any' as const),
      probeQueue: fc.nat(),
      probeSize: fc.nat(),
      fairSharing: fc.boolean(),
      strict: fc.boolean(),
    });
    fc.assert(
      fc.property(arb, ({ nominals, jobs, within, reclaim, probeQueue, probeSize, fairSharing, strict }) => {
        const total = nominals.reduce((a, b) => a + b, 0);
        if (total === 0) return;
        const s = new Scheduler({ clock: new ManualClock(), fairSharing: { enabled: fairSharing } });
        s.upsertFlavor(FLAVORS[0]!);
        for (let i = 0, left = total; left > 0; i++, left -= 8)
          s.upsertNode({
            name: `n${i}`,
            pool: 'p',
            flavor: 'h100',
            gpus: Math.min(8, left),
            cpu: 1e6,
            memory: 1e6,
          });
        s.upsertCohort({ name: 'c' });
        nominals.forEach((n, i) => {
          s.upsertQueue({
            name: `q${i}`,
            tenant: `t${i}`,
            cohort: 'c',
            quotas: { h100: { gpu: { nominal: n } } },
            preemption: { withinQueue: within, reclaimWithinCohort: reclaim },
            ...(strict ? { queueingStrategy: 'StrictFIFO' as const } : {}),
          });
        });
        const cls = new Map<string, string>();
        const guaranteed = new Map<string, number>(); // running never-preempted GPUs per queue
        const pods = new Map<string, number>();
        const apply = (r: CycleResult) => {
          for (const p of r.preempted) {
            expect(cls.get(p.victimId)).not.toBe(GUARANTEED);
            pods.delete(p.victimId);
          }
          for (const a of r.admitted) {
            pods.set(a.jobId, a.podSets[0]!.count);
            if (cls.get(a.jobId) === GUARANTEED)
              guaranteed.set(a.queue, (guaranteed.get(a.queue) ?? 0) + a.podSets[0]!.count);
          }
          nominals.forEach((n, i) => expect(guaranteed.get(`q${i}`) ?? 0).toBeLessThanOrEqual(n));
        };
        jobs.forEach((j, i) => {
          const q = j.queue % nominals.length;
          const c = CLASSES[j.cls % CLASSES.length]!;
          cls.set(`j${i}`, c);
          s.submit({
            id: `j${i}`,
            tenant: `t${q}`,
            queue: `q${q}`,
            priorityClass: c,
            submitTime: i,
            podSets: [{ name: 'm', count: j.pods, perPod: { gpu: 1 } }],
          });
          if (i % 4 === 3) apply(s.cycle());
        });
        apply(s.cycle());
        const qi = probeQueue % nominals.length;
        const room = nominals[qi]! - (guaranteed.get(`q${qi}`) ?? 0);
        if (room < 1) return;
        const k = 1 + (probeSize % room);
        cls.set('probe', GUARANTEED);
        s.submit({
          id: 'probe',
          tenant: `t${qi}`,
          queue: `q${qi}`,
          priorityClass: GUARANTEED,
          submitTime: -1, // the head of its queue
          podSets: [{ name: 'm', count: k, perPod: { gpu: 1 } }],
        });
        const r = s.cycle();
        expect(r.admitted.map((a) => a.jobId)).toContain('probe');
        expect(r.admitted.find((a) => a.jobId === 'probe')?.borrowed).toBe(false);
        apply(r);
      }),
      { numRuns: 300 },
    );
  });
});
