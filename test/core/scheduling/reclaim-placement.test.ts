// Placement-aware reclaim: quota owed to a queue is taken back from victims whose
// release makes the pods fit on nodes, not from the ones that free GPUs scattered over the cluster.
import { describe, expect, it } from 'vitest';
import { makeCluster, makeJob, makeQueue, nodes } from '../builders.js';

const HOUR = 3_600_000;

/**
 * The demo's shape: 4 × 8 H100, queues a and b with 16 nominal each in one cohort, a reclaims Any.
 * b runs 28 (borrows 12): x1 (6) on h100-0 and x2 (6) on h100-1, then w1..w4 (4 each) filling
 * h100-2 and h100-3 — 2 GPUs free on each of h100-0/1. The most recently admitted b jobs (the
 * policy's first candidates) sit on the full nodes.
 */
function demo() {
  const c = makeCluster({
    nodes: nodes(4),
    queues: [
      makeQueue('a').cohort('c').nominal('h100', 16).reclaim('Any'),
      makeQueue('b').cohort('c').nominal('h100', 16),
    ],
  });
  const { s } = c;
  s.submit(makeJob('x1').queue('b').gpus(6).duration(HOUR).submittedAt(1).build());
  s.submit(makeJob('x2').queue('b').gpus(6).duration(HOUR).submittedAt(2).build());
  expect(s.cycle().admitted.map((a) => [a.jobId, a.podSets[0]?.placements[0]?.node])).toEqual([
    ['x1', 'h100-0'],
    ['x2', 'h100-1'],
  ]);
  for (let i = 1; i <= 4; i++)
    s.submit(
      makeJob(`w${i}`)
        .queue('b')
        .gpus(4)
        .duration(HOUR)
        .submittedAt(10 + i)
        .build(),
    );
  expect(s.cycle().admitted.map((a) => [a.jobId, a.podSets[0]?.placements[0]?.node])).toEqual([
    ['w1', 'h100-2'],
    ['w2', 'h100-2'],
    ['w3', 'h100-3'],
    ['w4', 'h100-3'],
  ]);
  expect(s.queueStatus('b').resources[0]).toMatchObject({ used: 28, borrowed: 12 });
  return c;
}

const gang = (id: string, at = 100) =>
  makeJob(id).queue('a').gpus(8).pods(2).duration(HOUR).submittedAt(at).build();

describe('placement-aware reclaim', () => {
  it('reclaims the jobs whose release frees whole nodes for a 2 × 8 gang, and only those', () => {
    const { s } = demo();
    s.submit(gang('a1'));
    const res = s.cycle();
    expect(res.preempted.map((p) => [p.victimId, p.reason]).sort()).toEqual([
      ['x1', 'reclaim'],
      ['x2', 'reclaim'],
    ]);
    expect(res.admitted.map((a) => [a.jobId, a.podSets[0]?.placements.map((p) => p.node)])).toEqual([
      ['a1', ['h100-0', 'h100-1']],
    ]);
    // b is back at its nominal, not below it; a got exactly what it is owed.
    expect(s.queueStatus('b').resources[0]).toMatchObject({ used: 16, borrowed: 0 });
    expect(s.queueStatus('a').resources[0]).toMatchObject({ used: 16 });
  });

  it('a second gang of a (which would borrow) reclaims nothing more', () => {
    const { s } = demo();
    s.submit(gang('a1'));
    s.submit(gang('a2', 101));
    const res = s.cycle();
    expect(res.admitted.map((a) => a.jobId)).toEqual(['a1']);
    expect(res.preempted).toHaveLength(2);
    expect(s.explain('a2').state).toBe('pending');
  });

  it('preview predicts exactly the victims and placement the next cycle applies, and leaves the state as it was', () => {
    const { s } = demo();
    const before = s.debugState();
    const pre = s.preview(gang('a1'));
    expect(s.debugState()).toEqual(before);
    expect(pre.admissible).toBe(true);
    s.submit(gang('a1'));
    const res = s.cycle();
    expect(pre.wouldPreempt.map((p) => [p.victimId, p.reason])).toEqual(
      res.preempted.map((p) => [p.victimId, p.reason]),
    );
    expect(pre.wouldPreempt.length).toBeGreaterThan(0);
    expect(pre.admission?.podSets).toEqual(res.admitted[0]?.podSets);
  });

  it('when the policy order already frees room, the victims stay the policy choice (most recently admitted first)', () => {
    const { s } = makeCluster({
      nodes: nodes(4),
      queues: [
        makeQueue('a').cohort('c').nominal('h100', 16).reclaim('Any'),
        makeQueue('b').cohort('c').nominal('h100', 16),
      ],
    });
    for (let i = 0; i < 4; i++)
      s.submit(makeJob(`b${i}`).queue('b').gpus(7).duration(HOUR).submittedAt(i).build());
    s.cycle();
    s.submit(gang('a1'));
    const res = s.cycle();
    // 28 used, 4 free (1 per node): b3 then b2 (most recent) free two nodes.
    expect(res.preempted.map((p) => p.victimId).sort()).toEqual(['b2', 'b3']);
  });
});
