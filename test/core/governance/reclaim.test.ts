// Scheduler.reclaim: a governance flag takes an admitted job's resources back. The next
// cycle lists the preemption first (no preemptor), frees quota and nodes as a preemption does, puts
// the job back to pending in its place and keeps it out until its hold ends; sliced cycles, what-ifs,
// restore and admission holds stay exact.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type AdmissionHold,
  type JobSpec,
  Scheduler,
  SchedulerInputError,
} from '../../../src/core/scheduling/index.js';
import { FLAVORS, ManualClock, makeCluster, makeJob, makeQueue, nodes } from '../builders.js';

const MIN = 60_000;

/** Queue a (nominal 4 h100 GPUs, priority preemption within the queue) alone on one 8-GPU node. */
function cluster(opts: { strict?: boolean } = {}) {
  const a = makeQueue('a').nominal('h100', 4).withinQueue('LowerPriority');
  if (opts.strict) a.strictFIFO();
  return makeCluster({ nodes: nodes(1), queues: [a] });
}
const gpusFree = (s: Scheduler): number => s.nodeStatus().reduce((n, x) => n + x.free.gpu, 0);
const used = (s: Scheduler, q: string): number =>
  s.queueStatus(q).resources.find((r) => r.flavor === 'h100' && r.resource === 'gpu')!.used;
const code = (f: () => void): string | undefined => {
  try {
    f();
  } catch (e) {
    if (e instanceof SchedulerInputError) return e.code;
    throw e;
  }
  return undefined;
};

describe('Scheduler.reclaim', () => {
  it('refuses unknown, pending and held jobs and bad arguments, changing nothing', () => {
    const { s } = cluster();
    s.submit(makeJob('run').queue('a').gpus(2).build());
    s.submit(makeJob('wait').queue('a').gpus(8).build());
    s.cycle();
    const before = s.debugState();
    expect(code(() => s.reclaim('nope', 'idle'))).toBe('UNKNOWN_JOB');
    expect(code(() => s.reclaim('wait', 'idle'))).toBe('NOT_ADMITTED');
    expect(code(() => s.reclaim('run', 'idle', -1))).toBe('INVALID_SPEC');
    expect(code(() => s.reclaim('run', 'idle', Number.NaN))).toBe('INVALID_SPEC');
    expect(code(() => s.reclaim('run', 'bored' as 'idle'))).toBe('INVALID_SPEC');
    expect(s.debugState()).toEqual(before);
  });

  it('the next cycle lists it first, frees its quota and nodes, and re-admits it only from the cycle after', () => {
    const { s, clock } = cluster();
    s.submit(makeJob('j1').queue('a').gpus(2).build());
    s.cycle();
    clock.advance(10 * MIN);
    s.reclaim('j1', 'idle');
    // Nothing happens before the cycle.
    expect(s.jobState('j1')).toBe('admitted');
    expect(used(s, 'a')).toBe(2);
    const r = s.cycle();
    expect(r.preempted).toEqual([
      {
        victimId: 'j1',
        victimQueue: 'a',
        preemptorId: '',
        preemptorQueue: '',
        reason: 'idle',
        at: clock.now(),
        lostGpuMs: 2 * 10 * MIN,
      },
    ]);
    expect(r.admitted).toEqual([]);
    expect(s.jobState('j1')).toBe('pending');
    expect(used(s, 'a')).toBe(0);
    expect(gpusFree(s)).toBe(8);
    const e = s.explain('j1');
    expect(e).toMatchObject({
      state: 'pending',
      preemptions: 1,
      lastPreemption: { reason: 'idle', preemptorId: '' },
      positionInQueue: 1,
    });
    expect(e.preemptedBy).toBeUndefined();
    expect(s.cycle().admitted.map((a) => a.jobId)).toEqual(['j1']);
  });

  it('comes before the cycle’s own preemptions, and what it frees is used in the same cycle', () => {
    const { s, clock } = cluster();
    s.submit(makeJob('j1').queue('a').gpus(2).priority('training').build());
    s.submit(makeJob('j2').queue('a').gpus(2).priority('experiment').build());
    s.cycle();
    clock.advance(MIN);
    s.reclaim('j1', 'not-running', 0);
    s.submit(makeJob('j3').queue('a').gpus(4).priority('production').build());
    const r = s.cycle();
    expect(r.preempted.map((p) => [p.victimId, p.reason, p.preemptorId])).toEqual([
      ['j1', 'not-running', ''],
      ['j2', 'priority', 'j3'],
    ]);
    expect(r.admitted.map((a) => a.jobId)).toEqual(['j3']);
  });

  it('goes back to pending in its place (original submit time), ahead of later jobs of its queue', () => {
    const { s } = cluster({ strict: true });
    s.submit(makeJob('first').queue('a').gpus(4).submittedAt(1).build());
    s.cycle();
    s.submit(makeJob('later').queue('a').gpus(4).submittedAt(5).build());
    s.cycle();
    s.reclaim('first', 'idle');
    const r = s.cycle();
    // StrictFIFO: the freed quota is not taken by the later job while the head was evicted this cycle.
    expect(r.admitted).toEqual([]);
    expect(s.explain('first').positionInQueue).toBe(1);
    expect(s.explain('later')).toMatchObject({ positionInQueue: 2 });
    expect(s.cycle().admitted.map((a) => a.jobId)).toEqual(['first']);
  });

  it('with a hold: ReclaimHold until now + holdMs, then back in its queue', () => {
    const { s, clock } = cluster();
    s.submit(makeJob('j1').queue('a').gpus(2).build());
    s.cycle();
    const asked = clock.now();
    s.reclaim('j1', 'idle', 5 * MIN);
    clock.advance(1000);
    s.cycle();
    const e = s.explain('j1');
    expect(e).toMatchObject({
      state: 'pending',
      reason: 'ReclaimHold',
      reclaimHoldUntil: asked + 5 * MIN,
      eta: null,
      etaUnknownReason: 'ReclaimHold',
    });
    expect(e.message).toContain(new Date(asked + 5 * MIN).toISOString());
    expect(e.message).not.toContain('j1');
    expect(s.queueStatus('a').pendingCount).toBe(1);
    expect(s.pendingShapes()).toEqual([]);
    clock.t = asked + 5 * MIN - 1;
    expect(s.cycle().admitted).toEqual([]);
    clock.t = asked + 5 * MIN;
    expect(s.cycle().admitted.map((a) => a.jobId)).toEqual(['j1']);
    expect((s.debugState() as { reclaimHeld: unknown[] }).reclaimHeld).toEqual([]);
  });

  it('a hold that ended before the cycle ran is no hold (the job waits only for the next cycle)', () => {
    const { s, clock } = cluster();
    s.submit(makeJob('j1').queue('a').gpus(2).build());
    s.cycle();
    s.reclaim('j1', 'idle', 1000);
    clock.advance(2000);
    expect(s.cycle().preempted).toHaveLength(1);
    expect(s.explain('j1')).toMatchObject({
      reason: 'NotYetEvaluated',
      message: 'fits now; waits for the next admission cycle',
    });
    expect(s.cycle().admitted.map((a) => a.jobId)).toEqual(['j1']);
  });

  it('a sliced cycle emits it first in the slice after the call, before and during the cycle', () => {
    const { s } = makeCluster({
      nodes: nodes(2),
      queues: ['a', 'b', 'c', 'd'].map((q) => makeQueue(q).nominal('h100', 4)),
    });
    s.submit(makeJob('r1').queue('a').gpus(2).build());
    s.submit(makeJob('r2').queue('b').gpus(2).build());
    s.cycle();
    for (const q of ['a', 'b', 'c', 'd']) s.submit(makeJob(`p-${q}`).queue(q).gpus(1).build());
    s.reclaim('r1', 'idle');
    const first = s.cycle({ maxHeads: 1 });
    expect(first.more).toBe(true);
    expect(first.preempted.map((p) => p.victimId)).toEqual(['r1']);
    s.reclaim('r2', 'not-running', MIN);
    const second = s.cycle({ maxHeads: 1 });
    expect(second.preempted.map((p) => [p.victimId, p.reason])).toEqual([['r2', 'not-running']]);
    let r = second;
    while (r.more) r = s.cycle({ maxHeads: 1 });
    // Both evicted jobs wait for a later cycle; r2 for its hold too.
    expect(s.jobState('r1')).toBe('pending');
    expect(s.explain('r2').reason).toBe('ReclaimHold');
    expect(s.cycle().admitted.map((a) => a.jobId)).toEqual(['r1']);
  });

  it('forgets a reclaim of a job that finished before the cycle; asked twice, the later call counts once', () => {
    const { s } = cluster();
    s.submit(makeJob('gone').queue('a').gpus(1).build());
    s.submit(makeJob('twice').queue('a').gpus(1).build());
    s.cycle();
    s.reclaim('gone', 'idle');
    s.finish('gone');
    s.reclaim('twice', 'idle', 0);
    s.reclaim('twice', 'not-running', MIN);
    const r = s.cycle();
    expect(r.preempted.map((p) => [p.victimId, p.reason])).toEqual([['twice', 'not-running']]);
    expect(s.explain('twice').reason).toBe('ReclaimHold');
  });

  it('counts the work lost since the last checkpoint (resumable: none)', () => {
    const { s, clock } = cluster();
    s.submit({ ...makeJob('cp').queue('a').gpus(2).build(), checkpoint: { intervalMs: 4 * MIN } });
    s.submit({ ...makeJob('res').queue('a').gpus(1).build(), checkpoint: { resumable: true } });
    s.cycle();
    clock.advance(10 * MIN);
    s.reclaim('cp', 'idle');
    s.reclaim('res', 'idle');
    expect(s.cycle().preempted.map((p) => [p.victimId, p.lostGpuMs])).toEqual([
      ['cp', 2 * 2 * MIN],
      ['res', 0],
    ]);
  });

  it('leaves what-ifs exact: preview and explain change nothing, before or after the cycle', () => {
    const { s, clock } = makeCluster({
      nodes: nodes(1),
      queues: [makeQueue('a').cohort('c').nominal('h100', 4), makeQueue('b').cohort('c').nominal('h100', 4)],
    });
    s.submit(
      makeJob('j1')
        .queue('a')
        .gpus(2)
        .duration(60 * MIN)
        .build(),
    );
    s.submit(
      makeJob('j2')
        .queue('b')
        .gpus(4)
        .duration(60 * MIN)
        .build(),
    );
    s.cycle();
    s.submit(
      makeJob('w')
        .queue('b')
        .gpus(4)
        .duration(30 * MIN)
        .build(),
    );
    s.cycle();
    const what = makeJob('what').queue('a').gpus(3).build();
    s.reclaim('j1', 'idle', 10 * MIN);
    let before = s.debugState();
    s.preview(what);
    for (const id of ['j1', 'j2', 'w']) s.explain(id);
    expect(s.debugState()).toEqual(before);
    clock.advance(MIN);
    s.cycle();
    before = s.debugState();
    // The freed GPUs went to w (b borrows them): a's job would need a reclaim a does not do.
    expect(s.jobState('w')).toBe('admitted');
    expect(s.preview(what).admissible).toBe(false);
    for (const id of ['j1', 'j2', 'w']) s.explain(id);
    expect(s.debugState()).toEqual(before);
  });

  it('reclaims a restored job (lost work from its recorded admission)', () => {
    const clock = new ManualClock();
    const a = cluster();
    const spec = makeJob('old').queue('a').gpus(2).build();
    a.s.submit(spec);
    a.s.cycle();
    const admission = a.s.admissionOf('old')!;
    clock.t = a.clock.now() + 60 * MIN;
    const s = new Scheduler({ clock });
    for (const f of FLAVORS) s.upsertFlavor(f);
    for (const n of nodes(1)) s.upsertNode(n.build());
    s.upsertQueue(makeQueue('a').nominal('h100', 4).build());
    s.restore([{ job: spec, admission }]);
    s.reclaim('old', 'not-running');
    expect(s.cycle().preempted).toEqual([
      expect.objectContaining({ victimId: 'old', lostGpuMs: 2 * 60 * MIN }),
    ]);
    expect(gpusFree(s)).toBe(8);
  });

  it('admission holds: a reclaim-held job stays held until its hold ends, then the budget hold keeps it', () => {
    const { s, clock } = cluster();
    s.submit(makeJob('j1').queue('a').gpus(2).build());
    s.cycle();
    s.reclaim('j1', 'idle', 10 * MIN);
    s.cycle();
    const hold: AdmissionHold = {
      scope: 'tenant',
      id: 't-a',
      exemptPriorityClasses: [],
      budget: { spent: 10, limit: 5, currency: 'EUR', period: '2026-01' },
    };
    s.setAdmissionHolds([hold]);
    s.setAdmissionHolds([]); // lifting the budget hold does not lift the reclaim hold
    expect(s.explain('j1').reason).toBe('ReclaimHold');
    s.setAdmissionHolds([hold]);
    clock.advance(10 * MIN);
    expect(s.cycle().admitted).toEqual([]);
    expect(s.explain('j1').reason).toBe('BudgetExhausted');
    s.setAdmissionHolds([]);
    expect(s.cycle().admitted.map((a) => a.jobId)).toEqual(['j1']);
  });

  it('cancelling a reclaim-held job leaves nothing behind', () => {
    const { s } = cluster();
    s.submit(makeJob('j1').queue('a').gpus(2).build());
    s.cycle();
    s.reclaim('j1', 'idle', 10 * MIN);
    s.cycle();
    s.cancel('j1');
    const st = s.debugState() as { held: unknown[]; reclaimHeld: unknown[]; reclaims: unknown[] };
    expect([st.held, st.reclaimHeld, st.reclaims]).toEqual([[], [], []]);
    expect(s.queueStatus('a').pendingCount).toBe(0);
  });

  it('property: with reclaims mixed into submits, finishes and (sliced) cycles, capacity and quota come back exactly', () => {
    const opArb = fc.oneof(
      {
        weight: 5,
        arbitrary: fc.record({
          kind: fc.constant('submit' as const),
          q: fc.constantFrom('a', 'b'),
          gpus: fc.constantFrom(1, 2, 4),
          pods: fc.integer({ min: 1, max: 2 }),
          pc: fc.constantFrom('training', 'experiment', 'production'),
        }),
      },
      {
        weight: 3,
        arbitrary: fc.record({
          kind: fc.constant('reclaim' as const),
          pick: fc.nat(),
          hold: fc.constantFrom(0, 0, 30_000, 300_000),
        }),
      },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('finish' as const), pick: fc.nat() }) },
      {
        weight: 4,
        arbitrary: fc.record({
          kind: fc.constant('cycle' as const),
          maxHeads: fc.option(fc.integer({ min: 1, max: 2 }), { nil: undefined }),
        }),
      },
      {
        weight: 2,
        arbitrary: fc.record({
          kind: fc.constant('advance' as const),
          ms: fc.integer({ min: 1, max: 120_000 }),
        }),
      },
    );
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 40 }), (ops) => {
        const { s, clock } = makeCluster({
          nodes: nodes(2),
          queues: [
            makeQueue('a').cohort('c').nominal('h100', 8),
            makeQueue('b').cohort('c').nominal('h100', 8).reclaim('Any'),
          ],
        });
        const empty = s.debugState() as { quota: unknown; nodes: unknown; flavors: unknown };
        const ids: string[] = [];
        const perPod = new Map<string, number>();
        let n = 0;
        for (const op of ops) {
          if (op.kind === 'submit') {
            const spec: JobSpec = makeJob(`j${n++}`)
              .queue(op.q)
              .gpus(op.gpus)
              .pods(op.pods)
              .priority(op.pc)
              .build();
            s.submit(spec);
            ids.push(spec.id);
            perPod.set(spec.id, op.gpus);
          } else if (op.kind === 'reclaim' || op.kind === 'finish') {
            const live = ids.filter((id) => s.jobState(id) !== undefined);
            const id = live[op.pick % Math.max(1, live.length)];
            if (id === undefined) continue;
            if (op.kind === 'finish') s.finish(id);
            else if (s.jobState(id) === 'admitted') s.reclaim(id, 'idle', op.hold);
            else expect(code(() => s.reclaim(id, 'idle', op.hold))).toBe('NOT_ADMITTED');
          } else if (op.kind === 'cycle') {
            const r = s.cycle(op.maxHeads === undefined ? undefined : { maxHeads: op.maxHeads });
            for (const p of r.preempted) expect(s.jobState(p.victimId)).toBe('pending');
          } else clock.advance(op.ms);
          // Capacity is exact at every step: free GPUs = 16 − GPUs of admitted jobs.
          const held = ids
            .filter((id) => s.jobState(id) === 'admitted')
            .reduce(
              (g, id) => g + s.admissionOf(id)!.podSets.reduce((x, p) => x + p.count * perPod.get(id)!, 0),
              0,
            );
          expect(gpusFree(s)).toBe(16 - held);
        }
        for (const id of ids) if (s.jobState(id) !== undefined) s.cancel(id);
        let r = s.cycle();
        while (r.more) r = s.cycle();
        const end = s.debugState() as typeof empty;
        expect([end.quota, end.nodes, end.flavors]).toEqual([empty.quota, empty.nodes, empty.flavors]);
      }),
      { numRuns: 150, seed: 42 },
    );
  });
});
