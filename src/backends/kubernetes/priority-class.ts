// The cluster-wide PriorityClass that BEST_EFFORT tenants' pods name. A PriorityClass's value and
// preemption policy cannot change (an update answers 422), so a class of that name made by
// someone else with another value is beyond Fairway's repair: only the tenants whose pods need it
// are refused, with a reason an operator can act on, and every other tenant goes on.
import type { V1PriorityClass } from '@kubernetes/client-node';
import { apiMessage, type KubeClient, statusOf } from './client.js';
import type { KubernetesSettings } from './settings.js';
import { covers } from './tenant-drift.js';
import { bestEffortPriorityClass } from './tenant-objects.js';

/** A tenant whose namespace (or what its jobs need) cannot be made: its jobs cannot run here. */
export class TenantRefusedError extends Error {}

/** Answers that asking again will not change: the class is refused as it is, or Fairway may not touch it. */
const REFUSED = new Set([400, 403, 422]);

export class BestEffortPriorityClass {
  /** Why best-effort jobs cannot run now; null while the class is as Fairway needs. */
  private conflict: string | null = null;
  /** The class was seen or made as Fairway needs at least once. */
  private ready = false;
  private appliedJson: string | null = null;

  constructor(
    private readonly client: KubeClient,
    private readonly settings: KubernetesSettings,
    private readonly log: (message: string) => void,
  ) {}

  /**
   * Reads the class and applies it where it is missing or differs, except when it was applied
   * already and nothing asks for a look (`check`: a repair; a conflict is always looked at again,
   * so a fixed class is noticed at the next sync). Never throws: returns a transient failure for
   * the caller to throw once every tenant was synced.
   */
  async ensure(check: boolean): Promise<unknown> {
    const desired = bestEffortPriorityClass(this.settings);
    const json = JSON.stringify(desired);
    if (!check && this.conflict === null && this.appliedJson === json) return null;
    try {
      const live = await this.client.read<V1PriorityClass>(desired);
      const wrong = live ? this.immutableMismatch(live, desired as V1PriorityClass) : null;
      if (wrong) {
        this.conflicted(wrong);
        return null;
      }
      if (!live || this.appliedJson !== json || !covers(live, desired)) {
        await this.client.apply(desired);
        if (this.appliedJson === json)
          this.log(
            `repaired PriorityClass ${desired.metadata.name}: ${live ? 'edited' : 'missing'} outside Fairway`,
          );
      }
      this.appliedJson = json;
      this.ready = true;
      this.resolved();
      return null;
    } catch (error) {
      const status = statusOf(error);
      if (status === undefined || !REFUSED.has(status)) return error;
      this.conflicted(`the Kubernetes API refused it (${status}): ${apiMessage(error)}`);
      return null;
    }
  }

  /**
   * Throws why a BEST_EFFORT tenant's job cannot start now: a TenantRefusedError while the class
   * conflicts (the job fails with it), a plain Error while the class was never made (the start
   * is retried).
   */
  admit(): void {
    if (this.conflict) throw new TenantRefusedError(this.conflict);
    if (!this.ready)
      throw new Error(
        `the PriorityClass "${this.settings.bestEffortPriorityClass}" is not made yet; the start is retried`,
      );
  }

  private immutableMismatch(live: V1PriorityClass, desired: V1PriorityClass): string | null {
    const name = desired.metadata!.name!;
    const fix = `and it cannot change: delete that PriorityClass or set bestEffortPriorityClass to another name`;
    if (live.value !== desired.value)
      return `its jobs need the PriorityClass "${name}", which exists in the cluster with value ${live.value} (Fairway needs ${desired.value}), ${fix}`;
    const policy = live.preemptionPolicy ?? 'PreemptLowerPriority';
    if (policy !== desired.preemptionPolicy)
      return `its jobs need the PriorityClass "${name}", which exists in the cluster with preemptionPolicy ${policy} (Fairway needs ${desired.preemptionPolicy}), ${fix}`;
    return null;
  }

  private conflicted(reason: string): void {
    const message = reason.startsWith('its jobs need')
      ? reason
      : `its jobs need the PriorityClass "${this.settings.bestEffortPriorityClass}": ${reason}`;
    if (this.conflict === null)
      this.log(
        `best-effort tenants: ${message}; their jobs are refused until it is fixed, other tenants are not affected`,
      );
    this.conflict = message;
  }

  private resolved(): void {
    if (this.conflict !== null)
      this.log(
        `the PriorityClass "${this.settings.bestEffortPriorityClass}" is as Fairway needs now: jobs of best-effort tenants run again`,
      );
    this.conflict = null;
  }
}
