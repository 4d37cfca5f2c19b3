// Each workload kind's suspend and resume patches, applied as the API server applies a merge patch to
// what the cluster stores: the new placement and admission where the controller allows it, the rest
// kept; an object that cannot change into the new admission is made anew.
import { describe, expect, it } from 'vitest';
import { ANNOTATION_WORKLOAD } from '../../../src/backends/kubernetes/job-updates.js';
import { ANNOTATION_ADMISSION } from '../../../src/backends/kubernetes/naming.js';
import { HOSTNAME_LABEL, PLACEMENT_GATE } from '../../../src/backends/kubernetes/placement-gates.js';
import {
  CUSTOM_WORKLOADS,
  type CustomObject,
  type CustomWorkloadKind,
} from '../../../src/backends/kubernetes/workload-kinds.js';
import {
  build,
  CONTAINERS,
  job,
  KINDS,
  kindJob,
  mergePatch,
  pinned,
  SHAPES,
  schemaErrors,
  wire,
} from './workload-fixtures.js';

// --- suspend and resume ------------------------------------------------------------------------

/** As the cluster stores it: defaults added (which a resume must keep), suspended. */
function stored(kind: CustomWorkloadKind, obj: CustomObject): any {
  const out = wire(obj);
  if (kind === 'JOBSET')
    for (const rj of out.spec.replicatedJobs) {
      rj.groupName = 'default';
      rj.template.spec.template.spec.dnsPolicy = 'ClusterFirst';
    }
  const cluster = kind === 'RAY_JOB' ? out.spec.rayClusterSpec : kind === 'RAY_CLUSTER' ? out.spec : null;
  for (const g of cluster?.workerGroupSpecs ?? []) g.numOfHosts = 1;
  return mergePatch(out, CUSTOM_WORKLOADS[kind].suspendPatch());
}

/** Admission B: other nodes, in no pool, a later time. */
const readmitted = (kind: CustomWorkloadKind) =>
  job(SHAPES[kind], { workload: { container: CONTAINERS[kind] } }, (i, k) => `m${i}-${k}`, 1_700_000_600_000);

describe.each(KINDS)('%s: suspend and resume', (kind) => {
  const w = CUSTOM_WORKLOADS[kind];

  it('the suspend patch suspends it', () => {
    const existing = stored(kind, build(kind).obj);
    expect(w.isSuspended(existing)).toBe(true);
    expect(schemaErrors(kind, existing)).toEqual([]);
  });

  it('the resume patch gives the templates the new placement and admission, keeps the rest, resumes', () => {
    const existing = stored(kind, build(kind).obj);
    const desired = build(kind, readmitted(kind)).obj;
    expect(w.canResume(existing, desired)).toBe(true);
    const after = mergePatch(existing, w.resumePatch(existing, desired, '1700000600000'));
    expect(w.isSuspended(after)).toBe(false);
    expect(schemaErrors(kind, after)).toEqual([]);
    expect(after.metadata.annotations[ANNOTATION_ADMISSION]).toBe('1700000600000');
    const want = w.podTemplates(desired);
    w.podTemplates(after).forEach((t, i) => {
      expect(t.metadata?.annotations?.[ANNOTATION_ADMISSION]).toBe('1700000600000');
      // The pool of admission A is gone from the node selector.
      expect(t.spec!.nodeSelector).toEqual(want[i]!.spec!.nodeSelector);
      expect(t.spec!.nodeSelector?.['fairway.dev/pool']).toBeUndefined();
      expect(t.spec!.tolerations).toEqual(want[i]!.spec!.tolerations);
      expect(t.spec!.schedulingGates).toEqual([{ name: PLACEMENT_GATE }]);
      expect(t.spec!.containers).toEqual(w.podTemplates(existing)[i]!.spec!.containers);
    });
    if (kind === 'JOBSET') {
      expect(after.spec.replicatedJobs.map((rj: any) => rj.groupName)).toEqual(['default', 'default']);
      // The JobSet webhook's check: with the fields a suspended JobSet may change put back, nothing changed.
      const munged = structuredClone(after.spec.replicatedJobs);
      munged.forEach((rj: any, i: number) => {
        const before = existing.spec.replicatedJobs[i].template.spec.template;
        const t = rj.template.spec.template;
        t.metadata = before.metadata;
        for (const f of ['nodeSelector', 'tolerations', 'schedulingGates'])
          if (before.spec[f] === undefined) delete t.spec[f];
          else t.spec[f] = before.spec[f];
      });
      expect(munged).toEqual(existing.spec.replicatedJobs);
    }
    if (kind === 'RAY_JOB' || kind === 'RAY_CLUSTER') {
      const cluster = kind === 'RAY_JOB' ? after.spec.rayClusterSpec : after.spec;
      expect(cluster.workerGroupSpecs.every((g: any) => g.numOfHosts === 1)).toBe(true);
    }
  });

  it('pinned to other nodes: the new affinity where the controller allows it, a new object where not', () => {
    const existing = stored(kind, build(kind, kindJob(kind), pinned).obj);
    const desired = build(kind, readmitted(kind), pinned).obj;
    if (kind === 'JOBSET') {
      expect(w.canResume(existing, desired)).toBe(false);
      return;
    }
    expect(w.canResume(existing, desired)).toBe(true);
    const after = mergePatch(existing, w.resumePatch(existing, desired, '1700000600000'));
    const want = w.podTemplates(desired);
    w.podTemplates(after).forEach((t, i) => {
      expect(t.spec!.affinity).toEqual(want[i]!.spec!.affinity);
      const nodes =
        t.spec!.affinity!.nodeAffinity!.requiredDuringSchedulingIgnoredDuringExecution!.nodeSelectorTerms[0]!
          .matchExpressions![0]!;
      expect(nodes.key).toBe(HOSTNAME_LABEL);
      expect(nodes.values!.every((n) => n.startsWith('m'))).toBe(true);
    });
  });

  it('another shape (more pods, another image) cannot resume: the object is made anew', () => {
    const existing = stored(kind, build(kind).obj);
    const more = SHAPES[kind].map((s) =>
      s.name === 'head' || s.name === 'master' ? s : { ...s, count: s.count + 1 },
    );
    expect(
      w.canResume(existing, build(kind, job(more, { workload: { container: CONTAINERS[kind] } })).obj),
    ).toBe(false);
    const image = { workload: { container: { ...CONTAINERS[kind], image: 'registry.example.com/train:2' } } };
    expect(w.canResume(existing, build(kind, kindJob(kind, image)).obj)).toBe(false);
    // Without the annotation (not made by this version of Fairway) it is not trusted either.
    const bare = structuredClone(existing);
    delete bare.metadata.annotations[ANNOTATION_WORKLOAD];
    expect(w.canResume(bare, build(kind).obj)).toBe(false);
  });
});
