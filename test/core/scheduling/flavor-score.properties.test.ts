// Properties of flavor choice by score and the expected-workload fragmentation score, over random
// clusters of two GPU flavors and unpinned jobs (the general property tests pin every job's list):
// node capacity is never exceeded, preview leaves the state exactly as it was, decisions are the
// same when replayed, and every admitted pod set is on a flavor its queue declares.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type JobSpec,
  Scheduler,
  SchedulerInputError,
  type SchedulerOptions,
} from '../../../src/core/scheduling/index.js';
import { FLAVORS, ManualClock } from '../builders.js';

const worldArb = fc.record({
  nodes: fc.array(
    fc.record({
      flavor: fc.constantFrom('h100', 'a100'),
      gpus: fc.integer({ min: 0, max: 8 }),
      cpu: fc.constantFrom(8000, 32000),
    }),
    { minLength: 2, maxLength: 6 },
  ),
  placement: fc.constantFrom<'best-fit' | 'fragmentation-aware'>('best-fit', 'fragmentation-aware'),
  workload: fc.boolean(),
  whenCanBorrow: fc.constantFrom<'Borrow' | 'TryNextFlavor'>('Borrow', 'TryNextFlavor'),
  nominal: fc.record({ h100: fc.integer({ min: 0, max: 12 }), a100: fc.integer({ min: 0, max: 12 }) }),
});
const opArb = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('submit' as const),
      queue: fc.nat(1),
      gpu: fc.constantFrom(0, 0.2, 0.5, 0.7, 1, 1, 2, 4),
      cpu: fc.constantFrom(0, 2000, 6000),
      pods: fc.integer({ min: 1, max: 2 }),
      prio: fc.constantFrom('training', 'experiment'),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('finish' as const), pick: fc.nat() }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('cycle' as const) }) },
);
type World = typeof worldArb extends fc.Arbitrary<infer T> ? T : never;
type Op = typeof opArb extends fc.Arbitrary<infer T> ? T : never;

function run(w: World, ops: Op[], checkPreview: boolean): unknown[] {
  const opts: SchedulerOptions = { clock: new ManualClock(), placement: w.placement };
  if (w.workload)
    opts.workloadShapes = [
      { perPod: { gpu: 1, cpu: 2000 }, weight: 3 },
      { perPod: { gpu: 0.5 }, weight: 2 },
      { perPod: { gpu: 4 }, flavors: ['h100'], weight: 1 },
    ];
  const s = new Scheduler(opts);
  for (const f of FLAVORS) s.upsertFlavor(f);
  w.nodes.forEach((n, i) =>
    s.upsertNode({ name: `n${i}`, pool: 'p', flavor: n.flavor, gpus: n.gpus, cpu: n.cpu, memory: 1e6 }),
  );
  s.upsertCohort({ name: 'c' });
  for (const [i, name] of ['qa', 'qb'].entries()) {
    // qa declares h100 first, qb a100 first
    const order = i === 0 ? (['h100', 'a100'] as const) : (['a100', 'h100'] as const);
    const quotas: Record<string, { gpu: { nominal: number } }> = {};
    for (const f of order) quotas[f] = { gpu: { nominal: w.nominal[f] } };
    s.upsertQueue({
      name,
      tenant: name,
      cohort: 'c',
      quotas,
      flavorFungibility: { whenCanBorrow: w.whenCanBorrow },
      preemption: { reclaimWithinCohort: 'Any', withinQueue: 'LowerPriority' },
    });
  }
  const live: string[] = [];
  const out: unknown[] = [];
  let seq = 0;
  for (const op of ops) {
    if (op.kind === 'submit') {
      const q = op.queue === 0 ? 'qa' : 'qb';
      const perPod = op.gpu === 0 && op.cpu === 0 ? { cpu: 1000 } : { gpu: op.gpu, cpu: op.cpu };
      const job: JobSpec = {
        id: `j${seq++}`,
        tenant: q,
        queue: q,
        priorityClass: op.prio,
        submitTime: seq,
        podSets: [{ name: 'main', count: op.pods, perPod }],
      };
      try {
        s.submit(job);
        live.push(job.id);
      } catch (e) {
        out.push(['refused', job.id, (e as { code?: string }).code]);
      }
    } else if (op.kind === 'finish') {
      if (live.length === 0) continue;
      const id = live.splice(op.pick % live.length, 1)[0]!;
      s.finish(id);
    } else {
      if (checkPreview) {
        const before = s.debugState();
        try {
          s.preview({
            id: 'probe',
            tenant: 'qa',
            queue: 'qa',
            priorityClass: 'training',
            submitTime: 0,
            podSets: [{ name: 'main', count: 2, perPod: { gpu: 0.5, cpu: 2000 } }],
          });
        } catch (e) {
          if (!(e instanceof SchedulerInputError)) throw e; // e.g. no node with GPUs at all
        }
        expect(s.debugState()).toEqual(before);
      }
      const r = s.cycle();
      out.push(r);
      for (const a of r.admitted) for (const ps of a.podSets) expect(['h100', 'a100']).toContain(ps.flavor);
      // capacity: no GPU, cpu below zero on any node
      for (const n of s.nodeStatus()) {
        for (const g of n.gpus) expect(g.free).toBeGreaterThanOrEqual(-1e-9);
        expect(n.free.cpu).toBeGreaterThanOrEqual(0);
      }
    }
  }
  return out;
}

describe('flavor choice by score: properties', () => {
  it('capacity holds, preview is exact, and the same calls give the same decisions', () => {
    fc.assert(
      fc.property(worldArb, fc.array(opArb, { minLength: 5, maxLength: 40 }), (w, ops) => {
        expect(run(w, ops, true)).toEqual(run(w, ops, false));
      }),
      { numRuns: 100 },
    );
  });
});
