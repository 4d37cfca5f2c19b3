// Time-window quotas (window-closed reclaim, WindowClosed reason) and isolation levels.
import { describe, expect, it } from 'vitest';
import type { TimeWindowSpec } from '../../../src/core/scheduling/index.js';
import { windowOpen } from '../../../src/core/scheduling/windows.js';
import { ManualClock, makeCluster, makeJob, makeNode, makeQueue, nodes } from '../builders.js';

const HOUR = 3_600_000;
const officeHours = (nominal: number): TimeWindowSpec => ({
  days: [1, 2, 3, 4, 5],
  start: '08:00',
  end: '20:00',
  timeZone: 'Europe/Berlin',
  quotas: { h100: { gpu: { nominal } } },
});

describe('time windows', () => {
  it('while open the window quota applies; when it closes the excess is reclaimable as window-closed, only when needed', () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 5, 12, 0)); // Monday 13:00 in Berlin
    const { s } = makeCluster({
      clock,
      nodes: nodes(2),
      queues: [
        makeQueue('a').cohort('c').nominal('h100', 2).window(officeHours(8)),
        makeQueue('b').cohort('c').nominal('h100', 8).reclaim('Any'),
      ],
    });
    for (let i = 0; i < 4; i++) s.submit(makeJob(`a${i}`).queue('a').gpus(2).build());
    const first = s.cycle();
    expect(first.admitted.map((a) => a.mode)).toEqual(['fit', 'fit', 'fit', 'fit']);
    expect(s.queueStatus('a')).toMatchObject({
      activeWindow: 0,
      resources: [{ nominal: 8, used: 8, borrowed: 0 }],
    });

    clock.t = Date.UTC(2026, 0, 5, 19, 30); // 20:30 in Berlin: closed
    expect(s.cycle()).toMatchObject({ admitted: [], preempted: [] }); // nothing is killed that nobody needs
    expect(s.queueStatus('a')).toMatchObject({
      activeWindow: null,
      resources: [{ nominal: 2, used: 8, borrowed: 6 }],
    });

    s.submit(makeJob('b8').queue('b').gpus(8).build());
    const res = s.cycle();
    expect(res.admitted.map((a) => a.jobId)).toEqual(['b8']);
    expect(res.preempted).toHaveLength(3);
    expect(new Set(res.preempted.map((p) => p.reason))).toEqual(new Set(['window-closed']));
    expect(s.queueStatus('a').resources[0]).toMatchObject({ used: 2, borrowed: 0 });
  });

  it('a window whose closing raises the nominal leaves earlier borrowing as ordinary reclaim, not window-closed', () => {
    // Daytime the window lowers a to 2 GPUs; it borrows 6 more. At 20:00 its base of 4 returns:
    // it is still above nominal, but the switch did not take anything from it.
    const clock = new ManualClock(Date.UTC(2026, 0, 5, 12, 0)); // Monday 13:00 in Berlin
    const { s } = makeCluster({
      clock,
      nodes: nodes(2),
      queues: [
        makeQueue('a').cohort('c').nominal('h100', 4).window(officeHours(2)),
        makeQueue('b').cohort('c').nominal('h100', 12).reclaim('Any'),
      ],
    });
    for (let i = 0; i < 4; i++) s.submit(makeJob(`a${i}`).queue('a').gpus(2).build());
    expect(s.cycle().admitted).toHaveLength(4);
    clock.t = Date.UTC(2026, 0, 5, 19, 30); // 20:30 in Berlin: closed, nominal back to 4
    s.cycle();
    expect(s.queueStatus('a')).toMatchObject({
      activeWindow: null,
      resources: [{ nominal: 4, used: 8, borrowed: 4 }],
    });
    s.submit(makeJob('b8').queue('b').gpus(8).build());
    s.submit(makeJob('b4').queue('b').gpus(4).build());
    const res = { admitted: [] as string[], preempted: [] as { reason: string }[] };
    for (let i = 0; i < 3; i++) {
      const r = s.cycle();
      res.admitted.push(...r.admitted.map((a) => a.jobId));
      res.preempted.push(...r.preempted);
    }
    expect(res.admitted.sort()).toEqual(['b4', 'b8']);
    expect(res.preempted).toHaveLength(2); // b4 takes a's 4 borrowed GPUs back, two 2-GPU jobs
    expect(new Set(res.preempted.map((p) => p.reason))).toEqual(new Set(['reclaim']));
  });

  it('WindowClosed: a job that only the window allows waits for it', () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 5, 20, 0)); // Monday 21:00 in Berlin
    const { s } = makeCluster({
      clock,
      nodes: nodes(1),
      queues: [makeQueue('a').nominal('h100', 2).window(officeHours(8))],
    });
    s.submit(makeJob('big').queue('a').gpus(8).build());
    expect(s.cycle().pending).toEqual([expect.objectContaining({ jobId: 'big', reason: 'WindowClosed' })]);
    clock.t = Date.UTC(2026, 0, 6, 7, 30); // Tuesday 08:30 in Berlin
    expect(s.cycle().admitted.map((a) => a.jobId)).toEqual(['big']);
  });

  it('windows follow the named time zone and may run past midnight', () => {
    const night: TimeWindowSpec = { days: [5], start: '22:00', end: '06:00', timeZone: 'UTC', quotas: {} };
    const fri = (h: number) => Date.UTC(2026, 0, 9, h);
    expect(windowOpen(night, fri(21))).toBe(false);
    expect(windowOpen(night, fri(23))).toBe(true);
    expect(windowOpen(night, fri(24 + 5))).toBe(true); // Saturday 05:00
    expect(windowOpen(night, fri(24 + 7))).toBe(false);
    expect(windowOpen(night, fri(24 + 23))).toBe(false); // Saturday night is not in `days`
    const ny: TimeWindowSpec = {
      days: [1],
      start: '09:00',
      end: '10:00',
      timeZone: 'America/New_York',
      quotas: {},
    };
    expect(windowOpen(ny, Date.UTC(2026, 0, 5, 14, 30))).toBe(true); // 09:30 EST
    expect(windowOpen(ny, Date.UTC(2026, 0, 5, 9, 30))).toBe(false);
    expect(HOUR).toBe(3_600_000);
  });
});

describe('isolation levels', () => {
  it('DEDICATED: own pool, lends nothing, borrows nothing', () => {
    const { s } = makeCluster({
      nodes: [...nodes(1), makeNode('d0').gpus(8).pool('pd')],
      queues: [
        makeQueue('d').cohort('c').nominal('h100', 8).isolation('DEDICATED').dedicatedPool('pd'),
        makeQueue('e').cohort('c').nominal('h100', 8),
      ],
    });
    s.submit(makeJob('d8').queue('d').gpus(8).build());
    s.submit(makeJob('d-more').queue('d').gpus(1).build());
    s.submit(makeJob('e8').queue('e').gpus(8).build());
    s.submit(makeJob('e-more').queue('e').gpus(1).build());
    const res = s.cycle();
    expect(Object.fromEntries(res.admitted.map((a) => [a.jobId, a.podSets[0]!.placements[0]!.node]))).toEqual(
      { d8: 'd0', e8: 'h100-0' },
    );
    // d cannot borrow beyond its 8; e cannot borrow d's nominal.
    expect(Object.fromEntries(res.pending.map((p) => [p.jobId, p.reason]))).toEqual({
      'd-more': 'WaitingForQuota',
      'e-more': 'WaitingForQuota',
    });
    expect(s.explain('d-more').shortfall).toMatchObject({ maxAvailable: 8, borrowingLimit: 0 });
    expect(s.explain('e-more').shortfall).toMatchObject({ maxAvailable: 8 });
    s.finish('d8');
    // d's idle nominal is still not lendable.
    expect(s.cycle().admitted).toEqual([expect.objectContaining({ jobId: 'd-more' })]);
    expect(s.explain('e-more').state).toBe('pending');
  });

  it('GUARANTEED: lends idle nominal, reclaims it at once, never borrows', () => {
    const { s } = makeCluster({
      nodes: nodes(2),
      queues: [
        makeQueue('g').cohort('c').nominal('h100', 8).isolation('GUARANTEED'),
        makeQueue('e').cohort('c').nominal('h100', 8),
      ],
    });
    s.submit(makeJob('e16').queue('e').gpus(8).pods(2).build());
    expect(s.cycle().admitted).toEqual([expect.objectContaining({ jobId: 'e16', mode: 'borrow' })]);
    s.submit(makeJob('g4').queue('g').gpus(4).priority('experiment').build());
    const res = s.cycle();
    expect(res.preempted).toEqual([
      expect.objectContaining({ victimId: 'e16', reason: 'reclaim', preemptorId: 'g4' }),
    ]);
    expect(res.admitted).toEqual([expect.objectContaining({ jobId: 'g4', mode: 'preempt' })]);
    s.submit(makeJob('g-borrow').queue('g').gpus(3).pods(3).build());
    expect(s.cycle().pending).toContainEqual(
      expect.objectContaining({ jobId: 'g-borrow', reason: 'ExceedsMaxQuota' }),
    );
  });

  it('ELASTIC: lends and borrows', () => {
    const { s } = makeCluster({
      nodes: nodes(2),
      queues: [
        makeQueue('e1').cohort('c').nominal('h100', 4).isolation('ELASTIC'),
        makeQueue('e2').cohort('c').nominal('h100', 4),
      ],
    });
    s.submit(makeJob('x').queue('e1').gpus(8).build());
    expect(s.cycle().admitted).toEqual([
      expect.objectContaining({ jobId: 'x', mode: 'borrow', borrowed: true }),
    ]);
  });

  it('BEST_EFFORT: nominal 0, only borrows, first to be preempted', () => {
    const { s } = makeCluster({
      nodes: nodes(1),
      queues: [
        makeQueue('g').cohort('c').nominal('h100', 8).isolation('GUARANTEED'),
        makeQueue('be').cohort('c').nominal('h100', 4).isolation('BEST_EFFORT'),
        makeQueue('el').cohort('c').nominal('h100', 0),
      ],
    });
    expect(s.queueStatus('be').resources[0]!.nominal).toBe(0);
    s.submit(makeJob('be4').queue('be').gpus(4).priority('training').build());
    s.cycle();
    s.submit(makeJob('el4').queue('el').gpus(4).priority('experiment').build());
    s.cycle();
    expect(s.explain('be4').admission?.mode).toBe('borrow');
    s.submit(makeJob('g4').queue('g').gpus(4).priority('training').build());
    const res = s.cycle();
    // The best-effort job goes first although the elastic one has the lower priority.
    expect(res.preempted.map((p) => p.victimId)).toEqual(['be4']);
  });
});
