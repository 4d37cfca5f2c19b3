import type { FlavorSpec, RestoredAdmission } from '../../core/scheduling/index.js';

/** A stored admission that claims GPU capacity an earlier admission already holds. */
export interface DoubleBooking {
  jobId: string;
  /** `node#gpuIndex` entries that would be over capacity with this job loaded. */
  gpus: string[];
  /** The earlier jobs holding those GPUs. */
  heldBy: string[];
}

export interface RestoreCheck {
  /** Admissions that can be loaded together, earliest admitted first. */
  load: RestoredAdmission[];
  conflicts: DoubleBooking[];
}

type FlavorShape = Pick<FlavorSpec, 'name' | 'kind' | 'slicesPerGpu'>;

/**
 * Splits stored admissions into those that fit together on the nodes' GPU indices and those
 * that double-book one (two leaders that both admitted, or a write that bypassed fencing).
 * The earliest admission (then the smaller job id) keeps the GPU; the later ones conflict.
 *
 * Capacity follows the core's encoding (src/core/README.md, "Admission placements"): a GPU
 * index of a `gpu` flavor holds 1000 milli-GPU, one of a mig/timeslice flavor holds
 * slicesPerGpu slices. Each entry of `gpuIndices` is one unit: a whole GPU (1000), one
 * pod's fraction of a GPU (its milli-GPU, so fractional pods may share an index up to a
 * whole GPU), or one slice/share (1000 of the index's slicesPerGpu × 1000).
 */
export function findDoubleBookings(admitted: RestoredAdmission[], flavors: FlavorShape[]): RestoreCheck {
  const flavorByName = new Map(flavors.map((f) => [f.name, f]));
  const ordered = [...admitted].sort(
    (a, b) => a.admission.at - b.admission.at || (a.job.id < b.job.id ? -1 : a.job.id > b.job.id ? 1 : 0),
  );
  /** `node#index` → milli units used, and by whom. */
  const used = new Map<string, { milli: number; jobs: string[] }>();
  const load: RestoredAdmission[] = [];
  const conflicts: DoubleBooking[] = [];
  for (const entry of ordered) {
    const claims = claimsOf(entry, flavorByName);
    const over = new Set<string>();
    const heldBy = new Set<string>();
    for (const [gpu, { milli, capacity }] of claims) {
      const current = used.get(gpu);
      if ((current?.milli ?? 0) + milli > capacity) {
        over.add(gpu);
        for (const job of current?.jobs ?? []) heldBy.add(job);
      }
    }
    if (over.size) {
      conflicts.push({ jobId: entry.job.id, gpus: [...over].sort(), heldBy: [...heldBy].sort() });
      continue;
    }
    for (const [gpu, { milli }] of claims) {
      const current = used.get(gpu) ?? { milli: 0, jobs: [] };
      current.milli += milli;
      current.jobs.push(entry.job.id);
      used.set(gpu, current);
    }
    load.push(entry);
  }
  return { load, conflicts };
}

/** What one admission claims per `node#index`, in milli units, with that index's capacity. */
function claimsOf(
  { job, admission }: RestoredAdmission,
  flavors: Map<string, FlavorShape>,
): Map<string, { milli: number; capacity: number }> {
  const claims = new Map<string, { milli: number; capacity: number }>();
  for (const podSet of admission.podSets) {
    const flavor = flavors.get(podSet.flavor);
    const perPodGpu = job.podSets.find((ps) => ps.name === podSet.name)?.perPod.gpu ?? 0;
    // Unknown flavor or pod set: the core's restore reports it; nothing to compare here.
    if (!flavor || perPodGpu <= 0) continue;
    const capacity = flavor.kind === 'gpu' ? 1000 : (flavor.slicesPerGpu ?? 1) * 1000;
    const fractional = flavor.kind === 'gpu' && perPodGpu < 1;
    const perUnit = fractional ? Math.round(perPodGpu * 1000) : 1000;
    for (const placement of podSet.placements) {
      for (const index of placement.gpuIndices ?? []) {
        const gpu = `${placement.node}#${index}`;
        const claim = claims.get(gpu) ?? { milli: 0, capacity };
        claim.milli += perUnit;
        claims.set(gpu, claim);
      }
    }
  }
  return claims;
}
