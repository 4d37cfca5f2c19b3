// Views, explain and restore (src/core/scheduling/views.ts, explain.ts, eta-tree.ts, restore.ts), called
// directly: what-ifs leave the state exactly as it was; restore rebuilds it without deciding.
import { describe, expect, it } from 'vitest';
import { simulateTree, trialAdmit } from '../../../src/core/scheduling/eta-tree.js';
import { explain, treeView } from '../../../src/core/scheduling/explain.js';
import type { JobSpec } from '../../../src/core/scheduling/index.js';
import { buildJob } from '../../../src/core/scheduling/jobs.js';
import { restore } from '../../../src/core/scheduling/restore.js';
import { rollback } from '../../../src/core/scheduling/trail.js';
import { admissionOf, preview } from '../../../src/core/scheduling/views.js';
import { makeJob, makeQueue, nodes } from '../builders.js';
import { admit, makeCore, queueOf, snapshot } from '../core-builders.js';

const setup = () =>
  makeCore({
    nodes: nodes(2),
    queues: [
      makeQueue('a').cohort('c').nominal('h100', 8).reclaim('Any'),
      makeQueue('b').cohort('c').nominal('h100', 8),
    ],
  });

describe('what-ifs', () => {
  it('preview predicts the victims and leaves the state exactly as it was', () => {
    const { core } = setup();
    admit(core, makeJob('b1').queue('b').gpus(8), makeJob('b2').queue('b').gpus(8));
    const before = snapshot(core);
    const p = preview(core, makeJob('p').queue('a').gpus(8).build());
    expect(p.wouldPreempt.map((x) => [x.victimId, x.reason])).toEqual([['b2', 'reclaim']]);
    expect(snapshot(core)).toEqual(before);
  });

  it('a trial admission on the snapshot returns its own release; the ETA search undoes everything', () => {
    const { core } = setup();
    admit(core, makeJob('r').queue('a').gpus(8).duration(60_000));
    const before = snapshot(core);
    const job = buildJob(core, makeJob('w').queue('a').gpus(8).build());
    const release = trialAdmit(core, job);
    expect(release).not.toBeNull();
    expect(trialAdmit(core, buildJob(core, makeJob('w2').queue('a').gpus(8).pods(2).build()))).toBeNull();
    release?.();
    rollback(core, 0);
    expect(snapshot(core)).toEqual(before);
    const etas = simulateTree(core, [job]);
    expect(etas.get(job)?.at).toBe(core.clock.now()); // b's nominal is free: it fits at once
    expect(snapshot(core)).toEqual(before);
  });

  it('explain reads a cached tree view until the pending set or state changes', () => {
    const { core } = setup();
    admit(core, makeJob('r').queue('a').gpus(8).pods(2).duration(60_000));
    admit(core, makeJob('w').queue('a').gpus(8));
    const root = queueOf(core, 'a').root;
    const v1 = treeView(core, root);
    expect(treeView(core, root)).toBe(v1);
    expect(explain(core, 'w')).toMatchObject({
      state: 'pending',
      positionInQueue: 1,
      positionInCohort: 1,
      cohortPending: 1,
    });
    admit(core, makeJob('w2').queue('b').gpus(8));
    expect(treeView(core, root)).not.toBe(v1);
  });
});

describe('restore', () => {
  it('rebuilds usage and placements from admissions, equal to the state that made them', () => {
    const a = setup();
    const specs: JobSpec[] = [
      makeJob('x').queue('a').gpus(4).pods(2).build(),
      makeJob('y').queue('b').gpus(2).build(),
    ];
    admit(a.core, ...specs);
    const b = setup();
    restore(
      b.core,
      specs.map((job) => ({ job, admission: admissionOf(a.core, job.id)! })),
    );
    const strip = (s: unknown) => {
      const o = s as { quota: unknown; nodes: unknown; flavors: unknown };
      return [o.quota, o.nodes, o.flavors];
    };
    expect(strip(snapshot(b.core))).toEqual(strip(snapshot(a.core)));
    expect(admissionOf(b.core, 'x')).toEqual(admissionOf(a.core, 'x'));
  });
});
