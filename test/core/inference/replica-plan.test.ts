import { describe, expect, it } from 'vitest';
import { planReplicas, type ReplicaJob, replicaCounts } from '../../../src/core/inference/index.js';

const classes = { guaranteed: 'inference-critical', burst: 'production' };
let seq = 0;
const job = (slot: number, over: Partial<ReplicaJob> = {}): ReplicaJob => ({
  jobId: `j${++seq}`,
  slot,
  state: 'RUNNING',
  priorityClass: slot < 2 ? classes.guaranteed : classes.burst,
  revision: 1,
  submitTime: seq,
  ...over,
});
const plan = (
  desired: number,
  replicas: ReplicaJob[],
  over: Partial<Parameters<typeof planReplicas>[0]> = {},
) => planReplicas({ desired, minimum: 2, revision: 1, classes, maxSurge: 1, replicas, ...over });

/** The replicas after a plan, with submitted ones running (what the next plan sees). */
function apply(replicas: ReplicaJob[], p: ReturnType<typeof planReplicas>, revision = 1): ReplicaJob[] {
  const gone = new Set(p.cancel.map((c) => c.jobId));
  return [
    ...replicas.filter((r) => !gone.has(r.jobId)),
    ...p.submit.map((s) => job(s.slot, { priorityClass: s.priorityClass, revision })),
  ];
}

describe('planReplicas', () => {
  it('fills empty slots, guaranteed below the minimum, burst above', () => {
    const p = plan(4, []);
    expect(p.submit.map((s) => [s.slot, s.priorityClass])).toEqual([
      [0, 'inference-critical'],
      [1, 'inference-critical'],
      [2, 'production'],
      [3, 'production'],
    ]);
    expect(p.cancel).toEqual([]);
  });

  it('scales down from the highest slot and is a fixed point once applied', () => {
    const replicas = [0, 1, 2, 3, 4].map((s) => job(s));
    const p = plan(3, replicas);
    expect(p.cancel.map((c) => [c.slot, c.reason])).toEqual([
      [4, 'scale-down'],
      [3, 'scale-down'],
    ]);
    expect(p.submit).toEqual([]);
    expect(plan(3, apply(replicas, p))).toEqual({ submit: [], cancel: [] });
  });

  it('rolls a new revision one surge at a time: the new replica first, the old one once it runs', () => {
    let replicas = [0, 1, 2].map((s) => job(s));
    const rev = { revision: 2 };
    const first = plan(3, replicas, rev);
    expect(first.submit).toEqual([
      { slot: 0, priorityClass: 'inference-critical', replaces: replicas[0]!.jobId },
    ]);
    expect(first.cancel).toEqual([]);
    // The replacement pending: nothing more moves (the surge is taken).
    const pending = [...replicas, job(0, { state: 'PENDING', revision: 2 })];
    expect(plan(3, pending, rev)).toEqual({ submit: [], cancel: [] });
    // It runs: the old one goes, the next slot's replacement comes.
    replicas = [...replicas, job(0, { revision: 2 })];
    const second = plan(3, replicas, rev);
    expect(second.cancel).toEqual([{ jobId: replicas[0]!.jobId, slot: 0, reason: 'replaced' }]);
    expect(second.submit.map((s) => s.slot)).toEqual([1]);
    // Never more than desired + maxSurge replicas at any step, and all on the new revision at the end.
    for (let step = 0; step < 10; step++) {
      const p = plan(3, replicas, rev);
      replicas = apply(replicas, p, 2);
      expect(replicas.length).toBeLessThanOrEqual(4);
    }
    expect(replicas.map((r) => [r.slot, r.revision]).sort()).toEqual([
      [0, 2],
      [1, 2],
      [2, 2],
    ]);
  });

  it('moves a slot to the burst class when the minimum falls (the night), replacing it first', () => {
    const replicas = [0, 1, 2].map((s) => job(s));
    const p = plan(3, replicas, { minimum: 1 });
    expect(p.submit).toEqual([{ slot: 1, priorityClass: 'production', replaces: replicas[1]!.jobId }]);
  });

  it('a stale replica that is not serving gives way at once', () => {
    const stale = job(2, { state: 'PENDING', revision: 1 });
    const p = plan(3, [job(0), job(1), stale], { revision: 2, maxSurge: 1 });
    expect(p.cancel).toContainEqual({ jobId: stale.jobId, slot: 2, reason: 'replaced' });
    expect(p.submit.some((s) => s.slot === 2 && s.replaces === null)).toBe(true);
  });

  it('cancels the extra of two fresh replicas in one slot, keeping the running one', () => {
    const running = job(1);
    const extra = job(1, { state: 'PENDING' });
    const p = plan(2, [job(0), extra, running]);
    expect(p.cancel).toEqual([{ jobId: extra.jobId, slot: 1, reason: 'duplicate' }]);
    expect(p.submit).toEqual([]);
  });

  it('counts replicas per slot', () => {
    expect(
      replicaCounts([
        job(0),
        job(0, { state: 'PENDING', revision: 2 }),
        job(1, { state: 'ADMITTED' }),
        job(2, { state: 'PENDING' }),
      ]),
    ).toEqual({ admitted: 2, ready: 1, pending: 1 });
  });
});
