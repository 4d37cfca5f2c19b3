// Rebuilding state from running jobs: restore after a restart (no decisions), and the naive
// baseline's rescan of every running job each cycle (rescanEveryCycle).
import { SchedulerInputError } from './errors.js';
import { neverPreempted } from './guaranteed.js';
import { buildJob } from './jobs.js';
import { isFractional, type PodAlloc, reapplyAlloc } from './nodes.js';
import { historyChange } from './queue-usage.js';
import { rebuildQuotas } from './quota-config.js';
import type { CoreState } from './state.js';
import { chargeQueue } from './trail.js';
import type { RestoredAdmission } from './types.js';
import { addVec, gpuOf, structuredCloneSpec } from './units.js';

/** The naive baseline: rebuild usage and node capacity from every running job, retry every pending job. */
export function rescanAll(core: CoreState): void {
  for (const f of core.flavors.values()) {
    f.freeGpu = 0;
    f.freeCpu = 0;
    f.freeMem = 0;
    f.withFreeGpu.clear();
    for (const n of f.nodes) {
      if (n.spec.gpus > 0) f.withFreeGpu.add(n);
      n.gpuFree.fill(f.perGpuMilli);
      n.freeGpuTotal = n.spec.gpus * f.perGpuMilli;
      n.cpuFree = Math.round(n.spec.cpu);
      n.memFree = Math.round(n.spec.memory);
      n.pods = 0;
      f.freeGpu += n.freeGpuTotal;
      f.freeCpu += n.cpuFree;
      f.freeMem += n.memFree;
    }
  }
  for (const j of core.jobs.values()) if (j.status === 'admitted') for (const a of j.allocs) reapplyAlloc(a);
  rebuildQuotas(core); // re-charges all running jobs and wakes every queue
}

/** Rebuilds running jobs after a restart from persisted admissions, exactly as recorded (no decisions are
 * made).
 */
export function restore(core: CoreState, admitted: RestoredAdmission[]): void {
  for (const { job, admission } of admitted) {
    if (core.jobs.has(job.id)) throw new SchedulerInputError('DUPLICATE_JOB', `job ${job.id} already exists`);
    const j = buildJob(core, job);
    const usage = new Map<string, number[]>();
    const allocs: PodAlloc[] = [];
    for (const pa of admission.podSets) {
      const ps = j.podSets.find((p) => p.name === pa.name);
      const flavor = core.flavors.get(pa.flavor);
      if (!ps || !flavor)
        throw new SchedulerInputError(
          'INVALID_SPEC',
          `restore ${job.id}: pod set ${pa.name} or flavor ${pa.flavor} unknown`,
        );
      addVec(usage, pa.flavor, [ps.shape.gpu, ps.shape.cpu, ps.shape.mem], pa.count);
      const frac = isFractional(flavor, ps.shape.gpu);
      const unitsPerPod = ps.shape.gpu === 0 ? 0 : frac ? 1 : ps.shape.gpu / 1000;
      const perUnit = frac ? ps.shape.gpu : 1000;
      for (const pl of pa.placements) {
        const node = core.nodes.get(pl.node);
        if (!node)
          throw new SchedulerInputError('UNKNOWN_NODE', `restore ${job.id}: unknown node ${pl.node}`);
        const idx = pl.gpuIndices ?? [];
        for (let p = 0; p < pl.pods; p++) {
          const gpus = idx.slice(p * unitsPerPod, (p + 1) * unitsPerPod);
          allocs.push({
            node,
            cpu: ps.shape.cpu,
            mem: ps.shape.mem,
            gpus,
            gpuMilli: gpus.map(() => perUnit),
          });
        }
      }
    }
    for (const a of allocs) reapplyAlloc(a);
    chargeQueue(j.queue, usage, 1, neverPreempted(j));
    j.status = 'admitted';
    j.usage = usage;
    j.allocs = allocs;
    j.admittedAt = admission.at;
    j.admitSeq = ++core.admitSeq;
    j.admission = structuredCloneSpec(admission);
    core.jobs.set(job.id, j);
    j.queue.admitted.add(j);
    core.stateVersion++;
    historyChange(core, j.queue, admission.at, gpuOf(usage), 0);
  }
}
