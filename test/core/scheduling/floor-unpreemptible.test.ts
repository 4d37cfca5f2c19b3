// A job whose priority class is never preempted (`preemptible: 'no'`, e.g. inference-critical) runs
// only within its queue's nominal (core quota-mode.ts, nominalOnly): admitted on borrowed quota, no
// reclaim could ever give the lender its nominal back, so the lender's floor would be broken for as
// long as it runs. It still preempts within its nominal; 'reclaim-only' jobs still borrow. The nominal
// is judged against the queue's never-preempted usage only (core guaranteed.ts; its preemptible jobs
// are room it takes back: test/core/scheduling/guaranteed-within-nominal.test.ts).
import { describe, expect, it } from 'vitest';
import { applyPolicy, BUILT_IN_POLICIES, baseSetting } from '../../../src/core/governance/index.js';
import type { QueueSpec } from '../../../src/core/scheduling/index.js';
import { makeCluster, makeJob, makeQueue, nodes } from '../builders.js';

const ELASTIC = BUILT_IN_POLICIES.find((p) => p.name === 'elastic')!;
const elastic = (name: string, nominal: number): QueueSpec =>
  applyPolicy(
    { name, tenant: `t-${name}`, cohort: 'c', quotas: { h100: { gpu: { nominal } } } },
    ELASTIC,
    baseSetting(ELASTIC),
  );

describe('a job that is never preempted does not borrow', () => {
  it("the reported case: an 8-GPU inference-critical job of a 4-GPU elastic queue never takes the lender's 4 idle GPUs", () => {
    const { s } = makeCluster({ nodes: nodes(1), queues: [elastic('serve', 4), elastic('lender', 4)] });
    s.submit(makeJob('ic8').queue('serve').gpus(8).priority('inference-critical').build());
    const first = s.cycle();
    expect(first.admitted).toEqual([]);
    const d = first.pending.find((p) => p.jobId === 'ic8')!;
    // 8 > its nominal: it could never be admitted, so it says so (not a wait that never ends).
    expect(d.reason).toBe('ExceedsMaxQuota');
    expect(d.shortfall).toMatchObject({
      flavor: 'h100',
      resource: 'gpu',
      requested: 8,
      nominal: 4,
      used: 0,
      available: 4,
      maxAvailable: 4,
      borrowingLimit: 0,
      nominalOnly: true,
    });
    expect(d.message).toContain('never preempted');
    expect(s.explain('ic8')).toMatchObject({ reason: 'ExceedsMaxQuota', etaUnknownReason: 'NeverFits' });
    // The lender's floor is there when it asks for it.
    s.submit(makeJob('lend4').queue('lender').gpus(4).priority('training').build());
    expect(s.cycle().admitted.map((a) => [a.jobId, a.mode])).toEqual([['lend4', 'fit']]);
  });

  it('within its nominal it is admitted (Fit); beyond what its own jobs leave it waits, with the numbers, where a training job would borrow', () => {
    const { s } = makeCluster({
      nodes: nodes(2),
      queues: [makeQueue('a').cohort('c').nominal('h100', 8), makeQueue('b').cohort('c').nominal('h100', 8)],
    });
    s.submit(makeJob('ic4').queue('a').pods(4).priority('inference-critical').build());
    expect(s.cycle().admitted.map((a) => [a.jobId, a.mode])).toEqual([['ic4', 'fit']]);
    s.submit(makeJob('ic6').queue('a').pods(6).priority('inference-critical').build());
    const r = s.cycle();
    expect(r.admitted).toEqual([]);
    const d = r.pending.find((p) => p.jobId === 'ic6')!;
    expect(d.reason).toBe('WaitingForQuota');
    // available is what it may use (nominal 8 − 4 used by never-preempted jobs), not the 12 the cohort could lend.
    expect(d.shortfall).toMatchObject({
      requested: 6,
      nominal: 8,
      used: 4,
      guaranteedUsed: 4,
      available: 4,
      maxAvailable: 8,
      borrowingLimit: 0,
      nominalOnly: true,
    });
    expect(d.message).toBe(
      "gpu on h100: requested 6, available 4 (nominal 8, used 4, never preempted 4, borrowing limit 0): its priority class is never preempted, so it runs only within the 4 its queue's nominal leaves beside the queue's jobs that are never preempted (4 of 8) and does not borrow; it waits for those jobs to end",
    );
    // The same request of a training job borrows.
    expect(s.preview(makeJob('t6').queue('a').pods(6).priority('training').build())).toMatchObject({
      admissible: true,
      borrowed: true,
    });
    // When its own job ends, it fits within the nominal again.
    s.finish('ic4');
    expect(s.cycle().admitted.map((a) => [a.jobId, a.mode])).toEqual([['ic6', 'fit']]);
  });

  it('a gang with a minimum takes what fits within its nominal instead of borrowing the rest', () => {
    const { s } = makeCluster({
      nodes: nodes(2),
      queues: [makeQueue('a').cohort('c').nominal('h100', 4), makeQueue('b').cohort('c').nominal('h100', 12)],
    });
    s.submit(makeJob('ic').queue('a').pods(8, 2).priority('inference-critical').build());
    const [adm] = s.cycle().admitted;
    expect(adm).toMatchObject({ jobId: 'ic', mode: 'fit' });
    expect(adm!.podSets[0]!.count).toBe(4);
  });

  it('it still preempts within its nominal: own lower-priority jobs (priority), and borrowers of its lent nominal (reclaim)', () => {
    // Own queue: its training job holds the nominal and b uses its own; it takes the training job's place.
    // (With b's GPUs idle it would fit at once, the training job borrowing: guaranteed-within-nominal.test.ts.)
    {
      const { s } = makeCluster({
        nodes: nodes(2),
        queues: [
          makeQueue('a').cohort('c').nominal('h100', 8).withinQueue('LowerPriority'),
          makeQueue('b').cohort('c').nominal('h100', 8),
        ],
      });
      s.submit(makeJob('train').queue('a').pods(8).priority('training').build());
      s.submit(makeJob('b8').queue('b').pods(8).priority('training').build());
      s.cycle();
      const spec = makeJob('ic').queue('a').pods(4).priority('inference-critical').build();
      const p = s.preview(spec);
      s.submit(spec);
      const r = s.cycle();
      expect(r.admitted.map((a) => [a.jobId, a.mode])).toEqual([['ic', 'preempt']]);
      expect(r.preempted.map((v) => [v.victimId, v.reason])).toEqual([['train', 'priority']]);
      expect(p).toMatchObject({ admissible: true, borrowed: false });
      expect(p.wouldPreempt.map((v) => v.victimId)).toEqual(['train']);
    }
    // Lent nominal: b borrows a's 8; a's inference-critical job reclaims it.
    {
      const { s } = makeCluster({
        nodes: nodes(2),
        queues: [
          makeQueue('a').cohort('c').nominal('h100', 8).reclaim('Any'),
          makeQueue('b').cohort('c').nominal('h100', 8),
        ],
      });
      s.submit(makeJob('b16').queue('b').pods(16).priority('training').build());
      s.cycle();
      s.submit(makeJob('ic').queue('a').pods(8).priority('inference-critical').build());
      const r = s.cycle();
      expect(r.admitted.map((a) => [a.jobId, a.mode])).toEqual([['ic', 'preempt']]);
      expect(r.preempted.map((v) => [v.victimId, v.reason])).toEqual([['b16', 'reclaim']]);
    }
  });

  it("'reclaim-only' (production) still borrows, and reclaim takes it back", () => {
    const { s } = makeCluster({
      nodes: nodes(2),
      queues: [
        makeQueue('a').cohort('c').nominal('h100', 8).reclaim('Any'),
        makeQueue('b').cohort('c').nominal('h100', 8),
      ],
    });
    s.submit(makeJob('prod').queue('b').pods(12).priority('production').build());
    expect(s.cycle().admitted.map((a) => [a.jobId, a.mode])).toEqual([['prod', 'borrow']]);
    s.submit(makeJob('a8').queue('a').pods(8).priority('experiment').build());
    const r = s.cycle();
    expect(r.preempted.map((v) => [v.victimId, v.reason])).toEqual([['prod', 'reclaim']]);
    expect(r.admitted.map((a) => a.jobId)).toEqual(['a8']);
  });

  it('one left above its nominal by a quota cut is still never a reclaim victim', () => {
    const b = makeQueue('b').cohort('c').nominal('h100', 16);
    const { s } = makeCluster({
      nodes: nodes(2),
      queues: [makeQueue('a').cohort('c').nominal('h100', 0).reclaim('Any'), b],
    });
    s.submit(makeJob('serve').queue('b').pods(16).priority('inference-critical').build());
    expect(s.cycle().admitted.map((a) => a.jobId)).toEqual(['serve']);
    s.upsertQueue(makeQueue('a').cohort('c').nominal('h100', 8).reclaim('Any').build());
    s.upsertQueue(makeQueue('b').cohort('c').nominal('h100', 8).build());
    s.submit(makeJob('a8').queue('a').pods(8).priority('training').build());
    const r = s.cycle();
    expect(r.preempted).toEqual([]);
    expect(r.pending.find((p) => p.jobId === 'a8')?.reason).toBe('WaitingForQuota');
  });

  it("waiting for its queue's never-preempted jobs to leave it room in the nominal, it is retried when one ends, even where that frees no node its pods fit", () => {
    // Node h100-0: a's 1-GPU inference-critical job and b's 7-GPU job; h100-1 free. a's 8-GPU pod fits
    // h100-1 and the cohort's quota, but not a's nominal beside a1 (1 + 8 > 8) until `a1` ends — which frees
    // one GPU on h100-0 only.
    const { s } = makeCluster({
      nodes: nodes(2),
      queues: [makeQueue('a').cohort('c').nominal('h100', 8), makeQueue('b').cohort('c').nominal('h100', 8)],
    });
    s.submit(makeJob('a1').queue('a').gpus(1).priority('inference-critical').build());
    s.cycle();
    s.submit(makeJob('b7').queue('b').gpus(7).build());
    s.cycle();
    expect(s.admissionOf('b7')?.podSets[0]?.placements[0]?.node).toBe(
      s.admissionOf('a1')?.podSets[0]?.placements[0]?.node,
    );
    s.submit(makeJob('ic').queue('a').gpus(8).priority('inference-critical').build());
    expect(s.cycle().pending.find((p) => p.jobId === 'ic')?.reason).toBe('WaitingForQuota');
    expect(s.cycle().admitted).toEqual([]);
    s.finish('a1');
    expect(s.cycle().admitted.map((a) => [a.jobId, a.mode])).toEqual([['ic', 'fit']]);
  });

  it("its ETA is when its own queue leaves room within the nominal, not now on the cohort's idle quota", () => {
    const { s, clock } = makeCluster({
      nodes: nodes(2),
      queues: [makeQueue('a').cohort('c').nominal('h100', 4), makeQueue('b').cohort('c').nominal('h100', 12)],
    });
    s.submit(makeJob('own').queue('a').pods(4).duration(3_600_000).priority('inference-critical').build());
    s.cycle();
    const admittedAt = clock.now();
    s.submit(makeJob('ic').queue('a').pods(4).priority('inference-critical').build());
    s.cycle();
    expect(s.explain('ic')).toMatchObject({
      state: 'pending',
      reason: 'WaitingForQuota',
      eta: admittedAt + 3_600_000,
    });
  });

  it('preview, explain and the cycle tell the same reason and numbers', () => {
    const { s } = makeCluster({
      nodes: nodes(2),
      queues: [makeQueue('a').cohort('c').nominal('h100', 4), makeQueue('b').cohort('c').nominal('h100', 12)],
    });
    s.submit(makeJob('own').queue('a').pods(2).priority('inference-critical').build());
    s.cycle();
    for (const [id, pods, reason] of [
      ['ic3', 3, 'WaitingForQuota'],
      ['ic6', 6, 'ExceedsMaxQuota'],
    ] as const) {
      const spec = makeJob(id).queue('a').pods(pods).priority('inference-critical').build();
      const p = s.preview(spec);
      s.submit(spec);
      const d = s.cycle().pending.find((x) => x.jobId === id)!;
      const e = s.explain(id);
      expect(d.reason).toBe(reason);
      expect([p.reason, p.message, p.shortfall]).toEqual([d.reason, d.message, d.shortfall]);
      expect([e.reason, e.message, e.shortfall]).toEqual([d.reason, d.message, d.shortfall]);
    }
  });

  it("a closed time window whose nominal would hold it: WindowClosed, judged on that window's nominal alone", () => {
    const closed = { days: [0], start: '00:00', end: '01:00', timeZone: 'UTC' }; // the clock is a Monday noon
    const { s } = makeCluster({
      nodes: nodes(2),
      queues: [
        makeQueue('a')
          .cohort('c')
          .nominal('h100', 2)
          .window({ ...closed, quotas: { h100: { gpu: { nominal: 8 } } } }),
        makeQueue('b').cohort('c').nominal('h100', 14),
      ],
    });
    s.submit(makeJob('ic8').queue('a').pods(8).priority('inference-critical').build());
    s.submit(makeJob('ic9').queue('a').pods(9).priority('inference-critical').build());
    const r = s.cycle();
    expect(r.admitted).toEqual([]);
    expect(r.pending.find((p) => p.jobId === 'ic8')?.reason).toBe('WindowClosed');
    expect(r.pending.find((p) => p.jobId === 'ic9')?.reason).toBe('ExceedsMaxQuota');
  });
});
