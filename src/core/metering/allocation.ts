// What a running job holds, per flavor, in the units the ledger charges.
import type { Admission, PodSetSpec } from '../scheduling/index.js';

/** How a flavor counts: whole GPUs, or MIG slices / time-slice shares of `slicesPerGpu` per device. */
export interface FlavorUnits {
  kind: 'gpu' | 'mig' | 'timeslice';
  slicesPerGpu: number | null;
}

/** Flavor units in one device: 1 for whole GPUs, slicesPerGpu for MIG slices and time-slice shares. */
export function unitsPerDevice(flavor: FlavorUnits | undefined): number {
  return flavor && flavor.kind !== 'gpu' ? (flavor.slicesPerGpu ?? 1) : 1;
}

export interface Allocation {
  flavor: string;
  /** Flavor units held (priced): GPUs, or slices / shares. */
  gpuUnits: number;
  /** Device equivalents: a slice or share is 1 / slicesPerGpu of a GPU; a fractional GPU request is its
   * fraction.
   */
  gpuDevices: number;
  cpuCores: number;
  memoryGib: number;
}

/**
 * Per flavor, what the admitted pods hold: the admission's pod counts (a gang may be admitted
 * between its minimum and its count) times each pod set's per-pod request. Flavors sort by name
 * so rows come out in a stable order.
 */
export function allocationOf(
  podSets: readonly PodSetSpec[],
  admission: Admission,
  flavors: ReadonlyMap<string, FlavorUnits>,
): Allocation[] {
  const byFlavor = new Map<string, Allocation>();
  for (const admitted of admission.podSets) {
    const spec = podSets.find((p) => p.name === admitted.name);
    if (!spec) continue;
    const perDevice = unitsPerDevice(flavors.get(admitted.flavor));
    const cur = byFlavor.get(admitted.flavor) ?? {
      flavor: admitted.flavor,
      gpuUnits: 0,
      gpuDevices: 0,
      cpuCores: 0,
      memoryGib: 0,
    };
    const pods = admitted.count;
    cur.gpuUnits += pods * (spec.perPod.gpu ?? 0);
    cur.gpuDevices += (pods * (spec.perPod.gpu ?? 0)) / perDevice;
    cur.cpuCores += (pods * (spec.perPod.cpu ?? 0)) / 1000;
    cur.memoryGib += (pods * (spec.perPod.memory ?? 0)) / 1024;
    byFlavor.set(admitted.flavor, cur);
  }
  return [...byFlavor.values()].sort((a, b) => (a.flavor < b.flavor ? -1 : a.flavor > b.flavor ? 1 : 0));
}
