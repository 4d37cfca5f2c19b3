// What each burst of the Kubernetes bench submits: one-GPU single-pod jobs, 2–4-node gangs (BATCH:
// a headless Service and an Indexed Job), or a custom workload kind (JobSet, PyTorchJob, RayJob,
// RayCluster: one custom object per job, its controller in the test API server makes the pods).
// Multi-node shapes take 2, 3, 4 pods of 8 GPUs in turn (one node each); a Ray job has a head pod
// without GPU besides. The submit inputs are those of test/backends/kubernetes/kubernetes.workloads.test.ts.
import type { CustomWorkloadKind } from '../../src/backends/kubernetes/workload-kinds.js';
import { CUSTOM_WORKLOADS } from '../../src/backends/kubernetes/workload-kinds.js';

export type CustomKind = CustomWorkloadKind;
export const CUSTOM_KINDS: readonly CustomKind[] = ['JOBSET', 'PYTORCH_JOB', 'RAY_JOB', 'RAY_CLUSTER'];

/** 'single': one-GPU jobs; 'gangs': BATCH jobs of one pod set of 2–4 pods; else a custom kind. */
export type Shape = 'single' | 'gangs' | CustomKind;

export const isCustom = (shape: Shape): shape is CustomKind => shape !== 'single' && shape !== 'gangs';

/** aurora-research's data boundaries allow nvcr.io/nvidia. */
export const IMAGE = 'nvcr.io/nvidia/pytorch:24.05-py3';

/** GPU pods of job i: 1 (one GPU) for single-pod jobs, else 2, 3, 4 pods of 8 GPUs in turn. */
export const gpuPods = (shape: Shape, i: number): number => (shape === 'single' ? 1 : 2 + (i % 3));

/** GPUs job i asks for. */
export const jobGpus = (shape: Shape, i: number): number => (shape === 'single' ? 1 : 8 * gpuPods(shape, i));

/** GPUs a burst of `jobs` asks for in all. */
export function burstGpus(shape: Shape, jobs: number): number {
  let gpus = 0;
  for (let i = 0; i < jobs; i++) gpus += jobGpus(shape, i);
  return gpus;
}

/** The kind of the object Fairway makes for the job and the burst waits for: a Job, or the custom object. */
export const workloadObjectKind = (shape: Shape): string =>
  isCustom(shape) ? CUSTOM_WORKLOADS[shape].crdKind : 'Job';

/** The table's column heading. */
export function shapeLabel(shape: Shape): string {
  if (shape === 'single') return 'Kubernetes, one-GPU jobs';
  if (shape === 'gangs') return 'Kubernetes, 2–4-node gangs';
  return `Kubernetes, ${CUSTOM_WORKLOADS[shape].crdKind} 2–4 pods${shape.startsWith('RAY') ? ' + head' : ''}`;
}

const h100 = (count: number, name?: string) => ({
  ...(name ? { name } : {}),
  count,
  gpusPerPod: 8,
  flavors: ['h100-80g'],
});

function podSets(shape: Shape, i: number): Record<string, unknown>[] {
  const n = gpuPods(shape, i);
  switch (shape) {
    case 'single':
      return [{ gpusPerPod: 1, flavors: ['h100-80g'] }];
    case 'gangs':
      return [h100(n)];
    case 'JOBSET':
      return [h100(n, 'workers')];
    case 'PYTORCH_JOB':
      // The Training Operator's rule: one Master (rank 0), the rest Workers, the same GPUs per pod.
      return [h100(1, 'master'), h100(n - 1, 'worker')];
    case 'RAY_JOB':
    case 'RAY_CLUSTER':
      return [{ name: 'head', count: 1, gpusPerPod: 0 }, h100(n, 'gpu')];
  }
}

/** submitJob's input for job i of the burst. Nothing ends by itself: pods run until deleted. */
export function submitInput(shape: Shape, i: number): Record<string, unknown> {
  return {
    name: `bench-${i}`,
    ...(isCustom(shape) ? { workloadKind: shape } : {}),
    podSets: podSets(shape, i),
    expectedDurationSeconds: 3600,
    // A RayCluster takes an image and no command (KubeRay runs `ray start` in every pod).
    container: shape === 'RAY_CLUSTER' ? { image: IMAGE } : { image: IMAGE, command: ['python', 'train.py'] },
  };
}
