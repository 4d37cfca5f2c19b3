// The undo trail (src/core/scheduling/trail.ts): every trial change pushes its inverse; rollback to a mark
// restores the exact state (compared with debugState), and later marks nest inside earlier ones.
import { describe, expect, it } from 'vitest';
import { assignDirect } from '../../../src/core/scheduling/assignment/direct.js';
import { buildJob } from '../../../src/core/scheduling/jobs.js';
import type { FlavorState } from '../../../src/core/scheduling/nodes.js';
import {
  rollback,
  tCharge,
  tPlace,
  tReadd,
  tRelease,
  tReleaseHeld,
  tUncharge,
} from '../../../src/core/scheduling/trail.js';
import { makeJob, makeQueue, nodes } from '../builders.js';
import { admit, availGpus, gpuUsage, jobOf, makeCore, queueOf, snapshot } from '../core-builders.js';

const setup = () => {
  const { core } = makeCore({
    nodes: nodes(2),
    queues: [makeQueue('a').cohort('c').nominal('h100', 8), makeQueue('b').cohort('c').nominal('h100', 8)],
  });
  admit(core, makeJob('run').queue('a').gpus(4).pods(2));
  return core;
};

describe('trail', () => {
  it('a trial release of a running job frees its quota and nodes; rolling back restores the exact state', () => {
    const core = setup();
    const before = snapshot(core);
    const mark = core.trail.length;
    expect(mark).toBe(0);
    expect(availGpus(core, 'a')).toBe(8);
    tRelease(core, jobOf(core, 'run'));
    expect(core.trail.length).toBe(1);
    expect(availGpus(core, 'a')).toBe(16);
    expect((core.flavors.get('h100') as FlavorState).freeGpu).toBe(16_000);
    expect(snapshot(core)).not.toEqual(before);
    rollback(core, mark);
    expect(snapshot(core)).toEqual(before);
  });

  it('tReadd after tRelease puts the job back; rolling back both leaves the state as it was', () => {
    const core = setup();
    const before = snapshot(core);
    tRelease(core, jobOf(core, 'run'));
    tReadd(core, jobOf(core, 'run'));
    expect(availGpus(core, 'a')).toBe(8);
    expect(core.trail.length).toBe(2);
    rollback(core, 0);
    expect(snapshot(core)).toEqual(before);
  });

  it('rollback to a mark undoes only what came after it, newest first', () => {
    const core = setup();
    const a = queueOf(core, 'a');
    const b = queueOf(core, 'b');
    tCharge(core, a, gpuUsage('h100', 2));
    const mark = core.trail.length;
    const afterFirst = snapshot(core);
    tCharge(core, b, gpuUsage('h100', 6)); // a now uses 10 of the cohort's 16: b takes the rest
    expect(availGpus(core, 'b')).toBe(0);
    tUncharge(core, a, gpuUsage('h100', 1));
    expect(availGpus(core, 'b')).toBe(1);
    rollback(core, mark);
    expect(snapshot(core)).toEqual(afterFirst);
    expect(availGpus(core, 'a')).toBe(6);
    rollback(core, 0);
    expect(availGpus(core, 'a')).toBe(8);
  });

  it('a placement that fails pushes nothing; one that succeeds pushes one undo for all its pods', () => {
    const core = setup();
    const h100 = core.flavors.get('h100') as FlavorState;
    const shape = { gpu: 8000, cpu: 0, mem: 0 };
    expect(tPlace(core, h100, 2, shape, () => true)).toBeNull();
    expect(core.trail.length).toBe(0);
    const allocs = tPlace(core, h100, 1, shape, () => true);
    expect(allocs).toHaveLength(1);
    expect(core.trail.length).toBe(1);
    expect(h100.freeGpu).toBe(0);
    rollback(core, 0);
    expect(h100.freeGpu).toBe(8000);
  });

  it('a simulated admission released with tReleaseHeld undoes to the exact state (the ETA search)', () => {
    const core = setup();
    const before = snapshot(core);
    const job = buildJob(core, makeJob('sim').queue('a').gpus(8).build());
    const r = assignDirect(core, job, [1]);
    if (!r.ok) throw new Error(r.message);
    const withSim = snapshot(core);
    const mark = core.trail.length;
    tReleaseHeld(
      core,
      queueOf(core, 'a'),
      r.usage,
      r.parts.flatMap((p) => p.allocs),
    );
    // Released: as before the simulated admission (but for the trail, which holds both changes).
    expect({ ...(snapshot(core) as object), trail: 0 }).toEqual(before);
    rollback(core, mark);
    expect(snapshot(core)).toEqual(withSim); // its undo re-applies it
    rollback(core, 0);
    expect(snapshot(core)).toEqual(before);
  });
});
