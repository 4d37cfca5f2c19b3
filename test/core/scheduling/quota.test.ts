// Quota arithmetic: fit, borrowing within/beyond limits, lending limits, nested cohorts.
import { describe, expect, it } from 'vitest';
import type { CohortSpec } from '../../../src/core/scheduling/index.js';
import { type JobBuilder, makeCluster, makeJob, makeQueue, nodes, type QueueBuilder } from '../builders.js';

interface QuotaCase {
  name: string;
  queues: QueueBuilder[];
  cohorts?: CohortSpec[];
  /** Admitted first (all must be admitted). */
  running?: JobBuilder[];
  job: JobBuilder;
  expect: { mode: 'fit' | 'borrow' } | { reason: string; available?: number; maxAvailable?: number };
}

const cases: QuotaCase[] = [
  {
    name: 'fits within nominal',
    queues: [makeQueue('a').nominal('h100', 8)],
    job: makeJob().queue('a').pods(4),
    expect: { mode: 'fit' },
  },
  {
    name: 'fits exactly the nominal',
    queues: [makeQueue('a').nominal('h100', 8)],
    job: makeJob().queue('a').pods(8),
    expect: { mode: 'fit' },
  },
  {
    name: 'no cohort: nothing to borrow',
    queues: [makeQueue('a').nominal('h100', 8)],
    job: makeJob().queue('a').pods(9),
    expect: { reason: 'ExceedsMaxQuota', maxAvailable: 8 },
  },
  {
    name: 'borrows within the borrowing limit',
    queues: [
      makeQueue('a').cohort('c').nominal('h100', 8).borrowingLimit(4),
      makeQueue('b').cohort('c').nominal('h100', 8),
    ],
    job: makeJob().queue('a').pods(12),
    expect: { mode: 'borrow' },
  },
  {
    name: 'beyond the borrowing limit never fits',
    queues: [
      makeQueue('a').cohort('c').nominal('h100', 8).borrowingLimit(4),
      makeQueue('b').cohort('c').nominal('h100', 8),
    ],
    job: makeJob().queue('a').pods(13),
    expect: { reason: 'ExceedsMaxQuota', maxAvailable: 12 },
  },
  {
    name: 'no borrowing limit: all the cohort holds',
    queues: [makeQueue('a').cohort('c').nominal('h100', 8), makeQueue('b').cohort('c').nominal('h100', 8)],
    job: makeJob().queue('a').pods(16),
    expect: { mode: 'borrow' },
  },
  {
    name: 'lending limit caps what a sibling can take',
    queues: [
      makeQueue('a').cohort('c').nominal('h100', 8),
      makeQueue('b').cohort('c').nominal('h100', 8).lendingLimit(2),
    ],
    job: makeJob().queue('a').pods(11),
    expect: { reason: 'ExceedsMaxQuota', maxAvailable: 10 },
  },
  {
    name: 'lending limit: borrowing up to it fits',
    queues: [
      makeQueue('a').cohort('c').nominal('h100', 8),
      makeQueue('b').cohort('c').nominal('h100', 8).lendingLimit(2),
    ],
    job: makeJob().queue('a').pods(10),
    expect: { mode: 'borrow' },
  },
  {
    name: 'the lender keeps its non-lendable part even when a borrower is in',
    queues: [
      makeQueue('a').cohort('c').nominal('h100', 8),
      makeQueue('b').cohort('c').nominal('h100', 8).lendingLimit(2),
    ],
    running: [makeJob().queue('a').pods(10)],
    job: makeJob().queue('b').pods(6),
    expect: { mode: 'fit' },
  },
  {
    name: 'borrowed capacity is not available to the lender without preemption',
    queues: [makeQueue('a').cohort('c').nominal('h100', 8), makeQueue('b').cohort('c').nominal('h100', 8)],
    running: [makeJob().queue('a').pods(12)],
    job: makeJob().queue('b').pods(8),
    expect: { reason: 'WaitingForQuota', available: 4 },
  },
  {
    name: 'waiting for quota while the cohort is in use',
    queues: [
      makeQueue('a').cohort('c').nominal('h100', 8).borrowingLimit(8),
      makeQueue('b').cohort('c').nominal('h100', 8),
    ],
    running: [makeJob().queue('a').pods(8), makeJob().queue('b').pods(8)],
    job: makeJob().queue('a').pods(1),
    expect: { reason: 'WaitingForQuota', available: 0 },
  },
  {
    name: 'nested cohorts: borrow across the tree',
    cohorts: [{ name: 'root' }, { name: 'c1', parent: 'root' }, { name: 'c2', parent: 'root' }],
    queues: [
      makeQueue('a').cohort('c1').nominal('h100', 4),
      makeQueue('b').cohort('c1').nominal('h100', 4),
      makeQueue('x').cohort('c2').nominal('h100', 8),
    ],
    job: makeJob().queue('a').pods(16),
    expect: { mode: 'borrow' },
  },
  {
    name: 'nested cohorts: an inner cohort borrowing limit caps its queues',
    cohorts: [
      { name: 'root' },
      { name: 'c1', parent: 'root', quotas: { h100: { gpu: { nominal: 0, borrowingLimit: 2 } } } },
      { name: 'c2', parent: 'root' },
    ],
    queues: [
      makeQueue('a').cohort('c1').nominal('h100', 4),
      makeQueue('b').cohort('c1').nominal('h100', 4),
      makeQueue('x').cohort('c2').nominal('h100', 8),
    ],
    job: makeJob().queue('a').pods(11),
    expect: { reason: 'ExceedsMaxQuota', maxAvailable: 10 },
  },
  {
    name: 'nested cohorts: usage in another branch is charged up to the root',
    cohorts: [{ name: 'root' }, { name: 'c1', parent: 'root' }, { name: 'c2', parent: 'root' }],
    queues: [
      makeQueue('a').cohort('c1').nominal('h100', 4),
      makeQueue('b').cohort('c1').nominal('h100', 4),
      makeQueue('x').cohort('c2').nominal('h100', 8),
    ],
    running: [makeJob().queue('x').pods(8)],
    job: makeJob().queue('a').pods(9),
    expect: { reason: 'WaitingForQuota', available: 8 },
  },
  {
    name: 'a cohort may hold its own nominal',
    cohorts: [{ name: 'c', quotas: { h100: { gpu: { nominal: 8 } } } }],
    queues: [makeQueue('a').cohort('c').nominal('h100', 0)],
    job: makeJob().queue('a').pods(8),
    expect: { mode: 'borrow' },
  },
  {
    name: 'cpu quota counts too',
    queues: [makeQueue('a').nominal('h100', 8).nominal('h100', 4000, 'cpu')],
    job: makeJob().queue('a').pods(1).cpu(5000),
    expect: { reason: 'ExceedsMaxQuota' },
  },
  {
    name: 'an undeclared resource is limited by nodes only',
    queues: [makeQueue('a').nominal('h100', 8)],
    job: makeJob().queue('a').pods(1).cpu(60_000),
    expect: { mode: 'fit' },
  },
];

describe('quota arithmetic', () => {
  it.each(cases)('$name', (c) => {
    const { s } = makeCluster({
      nodes: nodes(4),
      queues: c.queues,
      ...(c.cohorts ? { cohorts: c.cohorts } : {}),
    });
    for (const r of c.running ?? []) s.submit(r.build());
    if (c.running) expect(s.cycle().admitted).toHaveLength(c.running.length);
    const job = c.job.build();
    s.submit(job);
    const res = s.cycle();
    if ('mode' in c.expect) {
      expect(res.admitted.map((a) => [a.jobId, a.mode])).toEqual([[job.id, c.expect.mode]]);
      expect(res.admitted[0]!.borrowed).toBe(c.expect.mode === 'borrow');
    } else {
      expect(res.admitted).toEqual([]);
      const d = res.pending.find((p) => p.jobId === job.id);
      expect(d?.reason).toBe(c.expect.reason);
      if (c.expect.available !== undefined) expect(d?.shortfall?.available).toBe(c.expect.available);
      if (c.expect.maxAvailable !== undefined) expect(d?.shortfall?.maxAvailable).toBe(c.expect.maxAvailable);
    }
  });

  it('queueStatus reports nominal, used, borrowed, lent and the weighted share', () => {
    const { s } = makeCluster({
      nodes: nodes(4),
      queues: [
        makeQueue('a').cohort('c').nominal('h100', 8).borrowingLimit(8).weight(2),
        makeQueue('b').cohort('c').nominal('h100', 8),
      ],
      options: { fairSharing: { enabled: true } },
    });
    s.submit(makeJob().queue('a').pods(12).build());
    s.submit(makeJob().queue('a').pods(8).build());
    s.cycle();
    const a = s.queueStatus('a');
    expect(a.resources).toEqual([
      { flavor: 'h100', resource: 'gpu', nominal: 8, used: 12, borrowed: 4, lent: 0, borrowingLimit: 8 },
    ]);
    // lendable from the parent for a = 16 (potential of the cohort); DRS = 4*1000/16 = 250; weight 2 → 125
    expect(a.weightedShare).toBe(125);
    expect(a.pendingCount).toBe(1);
    expect(a.admittedCount).toBe(1);
    const b = s.queueStatus('b');
    expect(b.resources[0]).toMatchObject({ used: 0, borrowed: 0, lent: 4 });
    expect(b.weightedShare).toBe(0);
  });

  it('finishing a job frees quota up the tree and lets the next job in', () => {
    const { s } = makeCluster({
      nodes: nodes(2),
      queues: [makeQueue('a').cohort('c').nominal('h100', 8), makeQueue('b').cohort('c').nominal('h100', 8)],
    });
    const big = makeJob().queue('a').pods(16).build();
    const next = makeJob().queue('b').pods(8).build();
    s.submit(big);
    expect(s.cycle().admitted.map((a) => a.jobId)).toEqual([big.id]);
    s.submit(next);
    expect(s.cycle().admitted).toEqual([]);
    s.finish(big.id);
    expect(s.cycle().admitted.map((a) => a.jobId)).toEqual([next.id]);
    expect(s.queueStatus('a').resources[0]!.used).toBe(0);
  });
});
