// The stored configuration (flavors, cohorts, nodes, queues, priority classes) as the core's specs,
// and a configuration change applied to a live core in place (Scheduler.reconfigure) when it only
// alters queue and cohort specs: quotas, limits, weights, policies, cohort membership, new queues
// and cohorts. Anything else (flavors, nodes, priority classes, something removed) needs a core
// built anew from the database (core-loader.ts).
import type { EntityManager } from '@mikro-orm/core';
import { governanceInForce, isGoverned } from '../../core/governance/index.js';
import type {
  CohortSpec,
  FlavorSpec,
  NodeSpec,
  PriorityClass,
  QueueSpec,
  Scheduler,
  SpecChange,
} from '../../core/scheduling/index.js';
import { DEFAULT_PRIORITY_CLASSES } from '../../core/scheduling/index.js';
import { ClusterNode, Cohort, Flavor, PriorityClassRow, Queue } from '../../persistence/cluster/index.js';
import { loadPolicyLibrary } from '../../persistence/governance/index.js';
import { Tenant } from '../../persistence/tenancy/index.js';
import { cohortSpec, flavorSpec, nodeSpec, priorityClass, queueSpec } from './specs.js';

export interface StoredConfig {
  flavors: FlavorSpec[];
  /** Parents before children. */
  cohorts: CohortSpec[];
  nodes: NodeSpec[];
  queues: QueueSpec[];
  /** Stored priority classes, highest first; none stored: the core's defaults. */
  classes: PriorityClass[] | undefined;
  /** Queue name → queue id. */
  queueIds: Map<string, string>;
}

/** Reads the configuration: a few dozen rows, no jobs. */
export async function loadConfig(em: EntityManager, timeScale: number): Promise<StoredConfig> {
  const [flavors, cohorts, nodes, queues, classes, library] = await Promise.all([
    em.find(Flavor, {}, { orderBy: { id: 'asc' } }),
    em.find(Cohort, {}, { orderBy: { id: 'asc' }, populate: ['parent'] }),
    em.find(ClusterNode, {}, { orderBy: { id: 'asc' }, populate: ['pool', 'flavor'] }),
    em.find(Queue, {}, { orderBy: { id: 'asc' }, populate: ['cohort'] }),
    em.find(PriorityClassRow, {}, { orderBy: { value: 'desc' } }),
    loadPolicyLibrary(em),
  ]);
  // Governed queues' limits depend on their tenant's tier (the rules): read only when one is governed.
  const governed = queues.filter(isGoverned);
  const tenants = governed.length
    ? await em.find(Tenant, { id: { $in: [...new Set(governed.map((q) => q.tenant.id))] } })
    : [];
  const tiers = new Map<string, string>(tenants.map((t) => [t.id, t.tier]));
  // Parents before children.
  const ordered: CohortSpec[] = [];
  const placed = new Set<string>();
  let remaining = cohorts;
  while (remaining.length) {
    const ready = remaining.filter((c) => !c.parent || placed.has(c.parent.id));
    if (!ready.length) throw new Error('cohort parents form a cycle');
    for (const cohort of ready) {
      ordered.push(cohortSpec(cohort, cohort.parent?.name ?? null));
      placed.add(cohort.id);
    }
    remaining = remaining.filter((c) => !placed.has(c.id));
  }
  return {
    flavors: flavors.map(flavorSpec),
    cohorts: ordered,
    nodes: nodes.map((n) => nodeSpec(n, n.pool.name, n.flavor.name, n.pool.dedicatedTenant?.id ?? null)),
    queues: queues.map((queue) => {
      const governance = isGoverned(queue)
        ? governanceInForce(library, queue, tiers.get(queue.tenant.id) ?? 'STANDARD')
        : null;
      return queueSpec(queue, queue.cohort?.name ?? null, timeScale, governance);
    }),
    classes: classes.length ? classes.map(priorityClass) : undefined,
    queueIds: new Map(queues.map((q) => [q.name, q.id])),
  };
}

/**
 * The queue and cohort specs that differ between the core and the stored configuration, or null
 * when the difference is more than those (flavors, nodes, priority classes, a queue or cohort
 * removed): then only a core built anew holds the stored configuration.
 */
export function specChange(core: Scheduler, stored: StoredConfig): SpecChange | null {
  const live = core.configuration();
  if (!sameSet(live.flavors, stored.flavors) || !sameSet(live.nodes, stored.nodes)) return null;
  if (!sameSet(live.priorityClasses, stored.classes ?? [...DEFAULT_PRIORITY_CLASSES])) return null;
  const cohorts = changed(live.cohorts, stored.cohorts);
  const queues = changed(live.queues, stored.queues);
  if (!cohorts || !queues) return null;
  return { cohorts, queues };
}

/**
 * Brings a live core to the stored configuration in place when it can (specChange, then
 * Scheduler.reconfigure): true when done (nothing to do counts), false when a core must be built anew.
 */
export function applyInPlace(core: Scheduler, stored: StoredConfig): boolean {
  const change = specChange(core, stored);
  return change !== null && core.reconfigure(change);
}

/** Specs of `stored` new or different from `live` (by name); null if one of `live` is gone. */
function changed<T extends { name: string }>(live: T[], stored: T[]): T[] | null {
  const byName = new Map(stored.map((s) => [s.name, s]));
  for (const l of live) if (!byName.has(l.name)) return null;
  const current = new Map(live.map((l) => [l.name, canonical(l)]));
  return stored.filter((s) => current.get(s.name) !== canonical(s));
}

function sameSet<T extends { name: string }>(a: T[], b: T[]): boolean {
  if (a.length !== b.length) return false;
  const key = (xs: T[]) => xs.map(canonical).sort().join('\n');
  return key(a) === key(b);
}

/** JSON with sorted keys, undefined fields left out (as the core's copies of its specs have them). */
export function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}
