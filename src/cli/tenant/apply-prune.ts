// `fairway apply --prune`: what the server holds and the file no longer names. Node pools,
// cohorts, priority classes and flavors are deleted (in that order, after every create and
// update, so that what moved away in the same file no longer holds them; a cohort's children
// before it); the server refuses (CONFLICT) what is still in use, and the run reports it.
// Tenants and queues have no delete: they are listed as kept, with what to do instead.
import type { ObjectKind, ObjectPlan, Plan } from './apply-diff.js';
import type { PlatformSpec } from './apply-spec.js';
import type { ServerState } from './apply-state.js';

/** Why an object of this kind is never deleted by apply. */
export const NOT_DELETABLE: Partial<Record<ObjectKind, string>> = {
  tenant: 'the API has no deleteTenant: archive it with status: ARCHIVED in the file',
  queue: 'the API has no deleteQueue: it stays (set its quotas to 0 to stop it admitting)',
};

const DELETE: Record<'nodePool' | 'cohort' | 'priorityClass' | 'flavor', string> = {
  nodePool: 'mutation($id: ID!) { deleteNodePool(id: $id) }',
  cohort: 'mutation($id: ID!) { deleteCohort(id: $id) }',
  priorityClass: 'mutation($name: String!) { deletePriorityClass(name: $name) }',
  flavor: 'mutation($id: ID!) { deleteFlavor(id: $id) }',
};

/** The file's names per kind. */
export function namesInFile(spec: PlatformSpec): Record<ObjectKind, Set<string>> {
  return {
    flavor: new Set(spec.flavors.map((f) => f.name)),
    priorityClass: new Set(spec.priorityClasses.map((p) => p.name)),
    cohort: new Set(spec.cohorts.map((c) => c.name)),
    tenant: new Set(spec.tenants.map((t) => t.slug)),
    nodePool: new Set(spec.nodePools.map((p) => p.name)),
    queue: new Set(spec.tenants.flatMap((t) => t.queues.map((q) => q.name))),
  };
}

/** What the server holds that the file does not name, by kind, sorted by name. */
export function notInFile(spec: PlatformSpec, state: ServerState): Plan['unmanaged'] {
  const inFile = namesInFile(spec);
  const out: Plan['unmanaged'] = [];
  for (const [kind, map] of [
    ['flavor', state.flavors],
    ['priorityClass', state.priorityClasses],
    ['cohort', state.cohorts],
    ['tenant', state.tenants],
    ['nodePool', state.nodePools],
    ['queue', state.queues],
  ] as const)
    for (const name of [...map.keys()].sort()) if (!inFile[kind].has(name)) out.push({ kind, name });
  return out;
}

/** How deep a cohort sits on the server (a root is 0): children are deleted before their parents. */
function depth(name: string, state: ServerState): number {
  let d = 0;
  const seen = new Set<string>();
  for (let p = state.cohorts.get(name)?.parent; p && !seen.has(p); p = state.cohorts.get(p)?.parent) {
    seen.add(p);
    d++;
  }
  return d;
}

/** The deletions of --prune, in the order they run, and what stays (with why). */
export function planPrune(
  unmanaged: Plan['unmanaged'],
  state: ServerState,
): { deletions: ObjectPlan[]; kept: Plan['unmanaged'] } {
  const of = (kind: ObjectKind) => unmanaged.filter((u) => u.kind === kind);
  const cohorts = of('cohort').sort(
    (a, b) => depth(b.name, state) - depth(a.name, state) || a.name.localeCompare(b.name),
  );
  const idOf = (kind: 'nodePool' | 'cohort' | 'flavor', name: string) =>
    (kind === 'nodePool' ? state.nodePools : kind === 'cohort' ? state.cohorts : state.flavors).get(name)!.id;
  const deletion = (kind: keyof typeof DELETE, name: string): ObjectPlan => ({
    kind,
    name,
    action: 'delete',
    changes: [],
    notes: [],
    notCompared: [],
    steps: [
      {
        document: DELETE[kind],
        variables: () => (kind === 'priorityClass' ? { name } : { id: idOf(kind, name) }),
      },
    ],
  });
  const deletions = [
    ...of('nodePool').map((u) => deletion('nodePool', u.name)),
    ...cohorts.map((u) => deletion('cohort', u.name)),
    ...of('priorityClass').map((u) => deletion('priorityClass', u.name)),
    ...of('flavor').map((u) => deletion('flavor', u.name)),
  ];
  const kept = unmanaged
    .filter((u) => NOT_DELETABLE[u.kind])
    .map((u) => ({ ...u, note: NOT_DELETABLE[u.kind] }));
  return { deletions, kept };
}
