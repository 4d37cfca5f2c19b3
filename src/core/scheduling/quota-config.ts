// Quota configuration: specs converted to internal units with the isolation level applied, time
// windows laid over base quotas, and the quota tree rebuilt (on configuration changes only).
import { SchedulerInputError } from './errors.js';
import { neverPreempted } from './guaranteed.js';
import { nominalOf, overNominal } from './queue-usage.js';
import {
  emptyFlavorQuota,
  type FlavorQuota,
  potentialAvailable,
  type QuotaNode,
  RESOURCE_COUNT,
  recomputeTree,
} from './quota.js';
import type { CoreState, QueueState } from './state.js';
import { chargeQueue } from './trail.js';
import type { IsolationLevel, QuotaSpec, ResourceName } from './types.js';
import { RES, toInternal } from './units.js';
import { wakeQueue } from './wake.js';
import { openIndex } from './windows.js';

/** Validates and converts a QuotaSpec to internal units, with the isolation level applied to the limits. */
export function convertQuotas(
  core: CoreState,
  quotas: QuotaSpec,
  isolation: IsolationLevel | 'NONE',
  what: string,
): Map<string, FlavorQuota> {
  const out = new Map<string, FlavorQuota>();
  for (const [f, perRes] of Object.entries(quotas)) {
    if (!core.flavors.has(f)) throw new SchedulerInputError('UNKNOWN_FLAVOR', `${what}: unknown flavor ${f}`);
    const fq = emptyFlavorQuota();
    for (let r = 0; r < RESOURCE_COUNT; r++) {
      const lim = perRes?.[RES[r] as ResourceName];
      if (!lim) continue;
      for (const [k, v] of [
        ['nominal', lim.nominal],
        ['borrowingLimit', lim.borrowingLimit],
        ['lendingLimit', lim.lendingLimit],
      ] as const) {
        if (v === undefined && k !== 'nominal') continue;
        if (typeof v !== 'number' || !Number.isFinite(v))
          throw new SchedulerInputError('INVALID_QUANTITY', `${what}: ${f}.${RES[r]}.${k} must be a number`);
        if (v < 0)
          throw new SchedulerInputError('NEGATIVE_QUANTITY', `${what}: ${f}.${RES[r]}.${k} is negative`);
      }
      fq.declared[r] = true;
      fq.nominal[r] = toInternal(r, lim.nominal);
      fq.borrowingLimit[r] = lim.borrowingLimit === undefined ? null : toInternal(r, lim.borrowingLimit);
      fq.lendingLimit[r] = lim.lendingLimit === undefined ? null : toInternal(r, lim.lendingLimit);
      // Isolation levels are one knob over the limits (design doc, "Beyond Kueue").
      if (isolation === 'DEDICATED') {
        fq.borrowingLimit[r] = 0;
        fq.lendingLimit[r] = 0;
      } else if (isolation === 'GUARANTEED') {
        fq.borrowingLimit[r] = 0;
      } else if (isolation === 'BEST_EFFORT') {
        fq.nominal[r] = 0;
        fq.lendingLimit[r] = null;
      }
    }
    out.set(f, fq);
  }
  return out;
}

/** Base quotas with the open window's entries laid over them (flavors/resources the window does not name
 * keep their base values).
 */
export function effectiveQuotas(core: CoreState, q: QueueState): Map<string, FlavorQuota> {
  const base = convertQuotas(core, q.spec.quotas, q.isolation, q.spec.name);
  const w = q.activeWindow === null ? undefined : q.spec.timeWindows?.[q.activeWindow];
  if (!w) return base;
  const over = convertQuotas(core, w.quotas, q.isolation, q.spec.name);
  for (const [f, fq] of over) {
    const b = base.get(f);
    if (!b) {
      base.set(f, fq);
      continue;
    }
    for (let r = 0; r < RESOURCE_COUNT; r++) {
      if (!fq.declared[r]) continue;
      b.declared[r] = true;
      b.nominal[r] = fq.nominal[r] as number;
      b.borrowingLimit[r] = fq.borrowingLimit[r] ?? null;
      b.lendingLimit[r] = fq.lendingLimit[r] ?? null;
    }
  }
  return base;
}

export function openWindow(q: QueueState, at: number): number | null {
  const i = openIndex(q.spec.timeWindows ?? [], at);
  return i < 0 ? null : i;
}

/** Rebuilds the quota tree from specs and re-charges every admitted job. Runs on configuration changes only
 * (rare), never per cycle.
 */
export function rebuildQuotas(core: CoreState): void {
  core.stateVersion++;
  core.treeViews.clear(); // trees may have been regrouped
  for (const { node } of core.cohorts.values()) {
    node.children.length = 0;
    node.parent = null;
  }
  for (const q of core.queues.values()) q.node.parent = null;
  for (const { spec, node } of core.cohorts.values()) {
    node.own = convertQuotas(core, spec.quotas ?? {}, 'NONE', `cohort ${spec.name}`);
    if (spec.parent !== undefined) {
      const p = core.cohorts.get(spec.parent);
      if (p) {
        node.parent = p.node;
        p.node.children.push(node);
      }
    }
  }
  for (const q of core.queues.values()) {
    q.node.own = effectiveQuotas(core, q);
    q.node.children.length = 0;
    if (q.spec.cohort !== undefined) {
      const c = core.cohorts.get(q.spec.cohort);
      if (c) {
        q.node.parent = c.node;
        c.node.children.push(q.node);
      }
    }
  }
  const roots = new Set<QuotaNode>();
  for (const { node } of core.cohorts.values()) if (!node.parent) roots.add(node);
  for (const q of core.queues.values()) if (!q.node.parent) roots.add(q.node);
  for (const r of roots) recomputeTree(r);
  core.treeQueues.clear();
  for (const q of core.queues.values()) {
    q.root = q.node.root();
    let list = core.treeQueues.get(q.root);
    if (!list) {
      list = [];
      core.treeQueues.set(q.root, list);
    }
    list.push(q);
    // The tree's usage was reset: charge every running job again (the guaranteed usage with it).
    q.guaranteed.clear();
    for (const j of q.admitted) chargeQueue(q, j.usage, 1, neverPreempted(j));
  }
  for (const q of core.queues.values()) {
    q.usageVersion++;
    q.lendable = [0, 0, 0];
    const parent = q.node.parent;
    if (!parent) continue;
    for (const f of q.node.flavors.keys())
      for (let r = 0; r < RESOURCE_COUNT; r++)
        q.lendable[r] = (q.lendable[r] as number) + Math.max(0, potentialAvailable(parent, f, r));
  }
  for (const q of core.queues.values()) wakeQueue(core, q);
}

export function refreshWindows(core: CoreState, now: number): void {
  if (core.windowQueues.size === 0) return;
  const minute = Math.floor(now / 60_000);
  if (minute === core.lastWindowMinute) return; // windows are minute-granular
  core.lastWindowMinute = minute;
  const switched = new Map<QueueState, Map<string, number[]>>();
  for (const q of core.windowQueues) {
    const w = openWindow(q, now);
    if (w === q.activeWindow) continue;
    switched.set(q, new Map([...q.node.flavors].map(([f, fq]) => [f, [...fq.nominal]])));
    q.activeWindow = w;
  }
  if (switched.size === 0) return;
  rebuildQuotas(core);
  // Nothing is killed when a window switches: what is now above a nominal that the switch
  // lowered just becomes reclaimable, with its own reason. A switch that raised the queue's
  // nominal (a window closing back to a larger base, or opening on a larger quota) leaves
  // borrowing it already did as ordinary borrowing: reclaimed as `reclaim`, not `window-closed`.
  for (const [q, before] of switched) if (overALoweredNominal(q, before)) q.windowReclaimable = true;
}

function overALoweredNominal(q: QueueState, before: Map<string, number[]>): boolean {
  for (const f of q.node.flavors.keys())
    for (let r = 0; r < RESOURCE_COUNT; r++)
      if (nominalOf(q, f, r) < (before.get(f)?.[r] ?? 0) && overNominal(q, f, r)) return true;
  return false;
}
