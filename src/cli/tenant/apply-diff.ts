// `fairway apply`: the plan — per object of the file, create / update / unchanged / blocked with
// its field changes (old → new) and the mutations that make it so, in dependency order; with
// --prune, then a delete per platform object the file no longer names (apply-prune.ts). A
// field the file leaves out is not managed (left as it is); a change the API cannot make
// blocks the whole apply (nothing is sent), since applying the rest would leave the platform
// neither as it was nor as the file says.

import { ID } from './apply-diff-fields.js';
import {
  orderCohorts,
  planCohort,
  planFlavor,
  planNodePool,
  planPriorityClass,
} from './apply-diff-platform.js';
import { planQueue, planTenant } from './apply-diff-tenants.js';
import { notInFile, planPrune } from './apply-prune.js';
import type { PlatformSpec } from './apply-spec.js';
import type { ServerState } from './apply-state.js';

export type ObjectKind = 'flavor' | 'priorityClass' | 'cohort' | 'tenant' | 'nodePool' | 'queue';

export interface FieldChange {
  field: string;
  old: unknown;
  new: unknown;
}

/** IDs by `kind:name`, from the server and from objects created earlier in the run. */
export type IdBook = Map<string, string>;

export interface Step {
  /** One GraphQL mutation; its payload's `id` (if any) is recorded under `registers`. */
  document: string;
  variables: (ids: IdBook) => Record<string, unknown>;
  registers?: string;
}

export interface ObjectPlan {
  kind: ObjectKind;
  name: string;
  action: 'create' | 'update' | 'unchanged' | 'blocked' | 'delete';
  changes: FieldChange[];
  /** Why blocked, or what to know about a change. */
  notes: string[];
  /** Fields the file sets that the API cannot read back: applied at creation, never compared. */
  notCompared: string[];
  steps: Step[];
}

export interface Plan {
  /** The file's objects in dependency order, then (with prune) the deletions. */
  objects: ObjectPlan[];
  /** On the server, not in the file: left as they are (with prune: only what the API cannot delete, and why). */
  unmanaged: { kind: ObjectKind; name: string; note?: string }[];
  ids: IdBook;
  prune: boolean;
}

export function computePlan(spec: PlatformSpec, state: ServerState, options: { prune?: boolean } = {}): Plan {
  const ids: IdBook = new Map();
  for (const [kind, map] of [
    ['flavor', state.flavors],
    ['cohort', state.cohorts],
    ['tenant', state.tenants],
    ['nodePool', state.nodePools],
    ['queue', state.queues],
  ] as const)
    for (const [name, o] of map) ids.set(ID(kind, name), o.id);
  const objects: ObjectPlan[] = [
    ...spec.flavors.map((f) => planFlavor(f, state)),
    ...spec.priorityClasses.map((p) => planPriorityClass(p, state)),
    ...orderCohorts(spec.cohorts).map((c) => planCohort(c, spec, state)),
    ...spec.tenants.map((t) => planTenant(t, state)),
    ...spec.nodePools.map((p) => planNodePool(p, spec, state)),
    ...spec.tenants.flatMap((t) => t.queues.map((q) => planQueue(t.slug, q, spec, state))),
  ];
  const unmanaged = notInFile(spec, state);
  if (!options.prune) return { objects, unmanaged, ids, prune: false };
  const { deletions, kept } = planPrune(unmanaged, state);
  return { objects: [...objects, ...deletions], unmanaged: kept, ids, prune: true };
}
