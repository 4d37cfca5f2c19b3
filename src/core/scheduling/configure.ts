// Configuration: flavors, nodes, cohorts and queues (with their policy defaults). Quota changes go
// through upsertQueue/upsertCohort and rebuild the quota tree (quota-config.ts).
import { SchedulerInputError } from './errors.js';
import { IndexedHeap } from './heap.js';
import { type NodeState, newNodeState } from './nodes.js';
import { newParkIndex } from './park-index.js';
import { QuotaNode } from './quota.js';
import { convertQuotas, openWindow, rebuildQuotas } from './quota-config.js';
import { type CoreState, type JobState, queueLess } from './state.js';
import type { CohortSpec, FlavorSpec, NodeSpec, QueueSpec } from './types.js';
import { structuredCloneSpec } from './units.js';
import { wakeFlavor } from './wake.js';
import { parseClock } from './windows.js';

export function upsertFlavor(core: CoreState, f: FlavorSpec): void {
  if (!f.name) throw new SchedulerInputError('INVALID_SPEC', 'flavor needs a name');
  if (f.kind !== 'gpu') {
    if (!Number.isInteger(f.slicesPerGpu) || (f.slicesPerGpu as number) < 1)
      throw new SchedulerInputError(
        'INVALID_SPEC',
        `flavor ${f.name}: ${f.kind} needs an integer slicesPerGpu >= 1`,
      );
  }
  const perGpuMilli = f.kind === 'gpu' ? 1000 : (f.slicesPerGpu as number) * 1000;
  const cur = core.flavors.get(f.name);
  if (cur) {
    if ((cur.spec.kind !== f.kind || cur.perGpuMilli !== perGpuMilli) && cur.nodes.length > 0)
      throw new SchedulerInputError(
        'FLAVOR_IN_USE',
        `flavor ${f.name} has nodes; its kind/slices cannot change`,
      );
    cur.spec = { ...f };
    cur.perGpuMilli = perGpuMilli;
    return;
  }
  core.flavors.set(f.name, {
    spec: { ...f },
    perGpuMilli,
    nodes: [],
    withFreeGpu: new Set(),
    freeGpu: 0,
    freeCpu: 0,
    freeMem: 0,
  });
}

export function upsertNode(core: CoreState, n: NodeSpec): void {
  const flavor = core.flavors.get(n.flavor);
  if (!flavor) throw new SchedulerInputError('UNKNOWN_FLAVOR', `node ${n.name}: unknown flavor ${n.flavor}`);
  for (const [k, v] of [
    ['gpus', n.gpus],
    ['cpu', n.cpu],
    ['memory', n.memory],
  ] as const) {
    if (!Number.isFinite(v))
      throw new SchedulerInputError('INVALID_QUANTITY', `node ${n.name}: ${k} must be a number`);
    if (v < 0) throw new SchedulerInputError('NEGATIVE_QUANTITY', `node ${n.name}: ${k} is negative`);
  }
  if (!Number.isInteger(n.gpus))
    throw new SchedulerInputError('INVALID_QUANTITY', `node ${n.name}: gpus must be an integer`);
  const cur = core.nodes.get(n.name);
  if (cur) {
    if (cur.pods > 0) {
      if (cur.spec.flavor !== n.flavor || cur.spec.gpus !== n.gpus)
        throw new SchedulerInputError(
          'NODE_IN_USE',
          `node ${n.name} has pods; its flavor/gpus cannot change`,
        );
      const dCpu = Math.round(n.cpu) - Math.round(cur.spec.cpu);
      const dMem = Math.round(n.memory) - Math.round(cur.spec.memory);
      cur.cpuFree += dCpu;
      cur.memFree += dMem;
      cur.flavor.freeCpu += dCpu;
      cur.flavor.freeMem += dMem;
      cur.spec = { ...n };
      core.stateVersion++;
      wakeFlavor(core, n.flavor, [cur]);
      return;
    }
    detachNode(core, cur);
  }
  const state = newNodeState({ ...n }, flavor);
  const list = flavor.nodes;
  let i = list.length;
  while (i > 0 && (list[i - 1] as NodeState).spec.name > n.name) i--;
  list.splice(i, 0, state);
  flavor.freeGpu += state.freeGpuTotal;
  flavor.freeCpu += state.cpuFree;
  flavor.freeMem += state.memFree;
  if (state.freeGpuTotal > 0) flavor.withFreeGpu.add(state);
  core.nodes.set(n.name, state);
  core.stateVersion++;
  wakeFlavor(core, n.flavor, [state]);
}

export function removeNode(core: CoreState, name: string): void {
  const cur = core.nodes.get(name);
  if (!cur) throw new SchedulerInputError('UNKNOWN_NODE', `unknown node ${name}`);
  if (cur.pods > 0)
    throw new SchedulerInputError(
      'NODE_IN_USE',
      `node ${name} still runs pods; finish or cancel its jobs first`,
    );
  detachNode(core, cur);
}

export function detachNode(core: CoreState, cur: NodeState): void {
  core.stateVersion++;
  const f = cur.flavor;
  f.nodes.splice(f.nodes.indexOf(cur), 1);
  f.withFreeGpu.delete(cur);
  f.freeGpu -= cur.freeGpuTotal;
  f.freeCpu -= cur.cpuFree;
  f.freeMem -= cur.memFree;
  core.nodes.delete(cur.spec.name);
}

export function upsertCohort(core: CoreState, c: CohortSpec): void {
  checkCohort(
    core,
    c,
    (name) => core.cohorts.get(name)?.spec.parent,
    (name) => core.cohorts.has(name),
  );
  applyCohort(core, c);
  rebuildQuotas(core);
}

/**
 * Refuses a cohort spec as upsertCohort would: an unknown parent, a parent chain back to itself,
 * bad quotas. `parentOf` and `known` answer for the cohorts as they would be with the change made.
 */
export function checkCohort(
  core: CoreState,
  c: CohortSpec,
  parentOf: (name: string) => string | undefined,
  known: (name: string) => boolean,
): void {
  if (!c.name) throw new SchedulerInputError('INVALID_SPEC', 'cohort needs a name');
  if (c.parent !== undefined) {
    if (!known(c.parent) && c.parent !== c.name)
      throw new SchedulerInputError('UNKNOWN_COHORT', `cohort ${c.name}: unknown parent ${c.parent}`);
    // Walk up from the parent: meeting ourselves means a cycle.
    let p: string | undefined = c.parent;
    while (p !== undefined) {
      if (p === c.name)
        throw new SchedulerInputError('COHORT_CYCLE', `cohort ${c.name} would be its own ancestor`);
      p = parentOf(p);
    }
  }
  convertQuotas(core, c.quotas ?? {}, 'NONE', `cohort ${c.name}`);
}

/** Sets a checked cohort spec; the quota tree is rebuilt by the caller (rebuildQuotas). */
export function applyCohort(core: CoreState, c: CohortSpec): void {
  const cur = core.cohorts.get(c.name);
  if (cur) cur.spec = structuredCloneSpec(c);
  else core.cohorts.set(c.name, { spec: structuredCloneSpec(c), node: new QuotaNode(c.name, 'cohort') });
}

export function upsertQueue(core: CoreState, q: QueueSpec): void {
  checkQueue(core, q, (name) => core.cohorts.has(name));
  applyQueue(core, q);
  rebuildQuotas(core);
}

/** Refuses a queue spec as upsertQueue would; `knownCohort` answers for the cohorts with the change made. */
export function checkQueue(core: CoreState, q: QueueSpec, knownCohort: (name: string) => boolean): void {
  if (!q.name) throw new SchedulerInputError('INVALID_SPEC', 'queue needs a name');
  if (q.cohort !== undefined && !knownCohort(q.cohort))
    throw new SchedulerInputError('UNKNOWN_COHORT', `queue ${q.name}: unknown cohort ${q.cohort}`);
  if (q.weight !== undefined && (!Number.isFinite(q.weight) || q.weight < 0))
    throw new SchedulerInputError('INVALID_QUANTITY', `queue ${q.name}: weight must be >= 0`);
  const minRun = q.preemption?.minRunBeforeReclaimMs;
  if (minRun !== undefined && (typeof minRun !== 'number' || !Number.isFinite(minRun) || minRun < 0))
    throw new SchedulerInputError(
      'INVALID_SPEC',
      `queue ${q.name}: preemption.minRunBeforeReclaimMs must be a number >= 0`,
    );
  const maxLost = q.preemption?.fairShareMaxLostRunMs;
  if (maxLost !== undefined && (typeof maxLost !== 'number' || Number.isNaN(maxLost) || maxLost < 0))
    throw new SchedulerInputError(
      'INVALID_SPEC',
      `queue ${q.name}: preemption.fairShareMaxLostRunMs must be a number >= 0`,
    );
  const isolation = q.isolation ?? 'ELASTIC';
  convertQuotas(core, q.quotas, isolation, `queue ${q.name}`);
  for (const w of q.timeWindows ?? []) {
    convertQuotas(core, w.quotas, isolation, `queue ${q.name} window`);
    try {
      parseClock(w.start);
      parseClock(w.end);
      new Intl.DateTimeFormat('en-US', { timeZone: w.timeZone });
    } catch (e) {
      throw new SchedulerInputError(
        'INVALID_SPEC',
        `queue ${q.name}: bad time window (${(e as Error).message})`,
      );
    }
  }
}

/** A queue's default flavor preference: declaration order (base quotas, then window-only flavors). */
export function flavorOrderOf(q: QueueSpec): string[] {
  const flavorOrder: string[] = [];
  for (const quotas of [q.quotas, ...(q.timeWindows ?? []).map((w) => w.quotas)])
    for (const f of Object.keys(quotas)) if (!flavorOrder.includes(f)) flavorOrder.push(f);
  return flavorOrder;
}

/** Sets a checked queue spec (a new queue starts empty); the quota tree is rebuilt by the caller. */
export function applyQueue(core: CoreState, q: QueueSpec): void {
  const isolation = q.isolation ?? 'ELASTIC';
  const spec = structuredCloneSpec(q);
  const flavorOrder = flavorOrderOf(q);
  const pre = q.preemption ?? {};
  const settings = {
    spec,
    weight: q.weight ?? 1,
    strategy: q.queueingStrategy ?? 'BestEffortFIFO',
    isolation,
    withinQueue: pre.withinQueue ?? 'Never',
    // GUARANTEED means "reclaims its lent nominal at once": default to reclaiming from anyone.
    reclaim:
      pre.reclaimWithinCohort ?? (isolation === 'GUARANTEED' || isolation === 'DEDICATED' ? 'Any' : 'Never'),
    borrowPolicy: pre.borrowWithinCohort?.policy ?? 'Never',
    borrowThreshold: pre.borrowWithinCohort?.maxPriorityThreshold ?? null,
    flavorOrder,
  } as const;
  let state = core.queues.get(q.name);
  if (state) {
    Object.assign(state, settings);
  } else {
    const node = new QuotaNode(q.name, 'queue');
    state = {
      ...settings,
      node,
      root: node,
      heap: new IndexedHeap<JobState>(queueLess),
      parked: new Set(),
      parkIndex: newParkIndex(),
      blocked: false,
      admitted: new Set(),
      activeWindow: null,
      windowReclaimable: false,
      history: { value: 0, at: core.clock.now(), rateMilli: 0 },
      lendable: [0, 0, 0],
      usageVersion: 0,
      shareCache: { version: -1, value: 0 },
      guaranteed: new Map(),
      preemptFails: [],
    };
    core.queues.set(q.name, state);
  }
  if ((q.timeWindows ?? []).length > 0) {
    core.windowQueues.add(state);
    state.activeWindow = openWindow(state, core.clock.now());
  } else {
    core.windowQueues.delete(state);
    state.activeWindow = null;
  }
}
