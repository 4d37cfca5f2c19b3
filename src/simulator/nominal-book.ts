import type { SimQueue } from './queues.js';
import { jobGpus, type TraceJob } from './trace.js';

type Usage = { gpu: number; cpu: number; memory: number };

/**
 * Per-queue, per-flavor usage of the running jobs, counted against the queues file's
 * nominal whatever the policy: a job submitted while it fits its queue's unused nominal
 * is SLA eligible (see docs/simulator.md).
 */
export class NominalBook {
  private used = new Map<string, Map<string, Usage>>();
  private get(q: string, f: string): Usage {
    let m = this.used.get(q);
    if (!m) this.used.set(q, (m = new Map()));
    let u = m.get(f);
    if (!u) m.set(f, (u = { gpu: 0, cpu: 0, memory: 0 }));
    return u;
  }
  /** Count the job (all pods) on the queue's flavor when it starts (+1) or stops (-1). */
  add(q: SimQueue, flavor: string, j: TraceJob, sign: 1 | -1): void {
    const u = this.get(q.name, flavor);
    u.gpu += sign * jobGpus(j);
    u.cpu += sign * (j.cpuMilli ?? 0) * j.pods;
    u.memory += sign * (j.memoryMib ?? 0) * j.pods;
  }
  /** Does the job fit the queue's unused nominal on some allowed flavor? */
  fits(q: SimQueue, j: TraceJob): boolean {
    const flavors = j.gpuType !== undefined ? [j.gpuType] : Object.keys(q.quotas);
    for (const f of flavors) {
      const quota = q.quotas[f];
      if (!quota) continue;
      const u = this.get(q.name, f);
      const need = { gpu: jobGpus(j), cpu: (j.cpuMilli ?? 0) * j.pods, memory: (j.memoryMib ?? 0) * j.pods };
      let ok = true;
      for (const r of ['gpu', 'cpu', 'memory'] as const) {
        if (need[r] <= 0) continue;
        const lim = quota[r];
        // cpu and memory count only where the queue declares them (the core does not
        // limit an undeclared resource by quota either); GPUs always count: a flavor
        // without a GPU quota has a nominal of 0 GPUs.
        if (!lim) {
          if (r === 'gpu') ok = false;
          continue;
        }
        if (u[r] + need[r] > lim.nominal + 1e-9) ok = false;
      }
      if (ok) return true;
    }
    return false;
  }
}
