import { unitsPerDevice } from '../../core/metering/index.js';
import type { Admission, PodSetSpec } from '../../core/scheduling/index.js';
import { loadMeteringTables } from '../../persistence/metering/index.js';
import type { ServiceContext } from '../context.js';

/** What a previewed job would cost: its declared duration × the units it would hold × today's price. */
export interface CostEstimate {
  gpuHours: number;
  cost: number;
}

/**
 * The declared duration (expectedDuration, else maxRun; none: no estimate) times the units
 * of the preview's admission, or, when it would not be admitted now, the requested units on
 * each pod set's first flavor (no flavor named: no estimate). Priced at the current price
 * book (flavor price × the class's multiplier); a later price change is not foreseen.
 */
export async function estimateCost(
  ctx: ServiceContext,
  spec: {
    podSets: readonly PodSetSpec[];
    priorityClass: string;
    expectedDurationMs?: number | null;
    maxRunMs?: number | null;
  },
  admission: Admission | null | undefined,
): Promise<CostEstimate | null> {
  const durationMs = spec.expectedDurationMs ?? spec.maxRunMs ?? null;
  if (durationMs == null) return null;
  const held: { flavor: string; units: number }[] = [];
  if (admission) {
    for (const admitted of admission.podSets) {
      const podSet = spec.podSets.find((p) => p.name === admitted.name);
      if (podSet) held.push({ flavor: admitted.flavor, units: admitted.count * (podSet.perPod.gpu ?? 0) });
    }
  } else {
    for (const podSet of spec.podSets) {
      const flavor = podSet.flavors?.[0];
      if (!flavor) return null;
      held.push({ flavor, units: podSet.count * (podSet.perPod.gpu ?? 0) });
    }
  }
  // The ledger's own price book and flavor units: an estimate is priced as the run will be charged.
  const { prices, flavors } = await loadMeteringTables(ctx.em);
  const hours = durationMs / 3_600_000;
  const now = ctx.now().getTime();
  let gpuHours = 0;
  let cost = 0;
  for (const h of held) {
    const flavor = flavors.get(h.flavor);
    if (!flavor) return null;
    // A MIG slice or time-slice share counts as its fraction of a device, as the ledger counts it.
    gpuHours += (h.units / unitsPerDevice(flavor)) * hours;
    cost += h.units * hours * prices.unitPrice(h.flavor, spec.priorityClass, now);
  }
  return { gpuHours, cost };
}
