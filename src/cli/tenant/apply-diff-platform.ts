// `fairway apply`'s plan for the platform-wide objects: flavors, priority classes, cohorts and
// node pools (what apply-diff.ts's computePlan puts before and around the tenants); deleting
// those the file no longer names (--prune) is apply-prune.ts's.
import type { ObjectPlan, Step } from './apply-diff.js';
import { compare, ID, need, quotaAware, quotaLines, result } from './apply-diff-fields.js';
import type { CohortSpec, PlatformSpec } from './apply-spec.js';
import type { ServerState } from './apply-state.js';

export function planFlavor(f: PlatformSpec['flavors'][number], state: ServerState): ObjectPlan {
  const cur = state.flavors.get(f.name);
  const changes = compare(
    {
      kind: f.kind,
      gpuModel: f.gpuModel,
      slicesPerGpu: f.slicesPerGpu,
      pricePerUnitHour: f.pricePerUnitHour,
    },
    cur,
  );
  if (!cur) {
    const step: Step = {
      document: 'mutation($input: CreateFlavorInput!) { createFlavor(input: $input) { id } }',
      variables: () => ({
        input: {
          name: f.name,
          kind: f.kind,
          gpuModel: f.gpuModel,
          slicesPerGpu: f.slicesPerGpu,
          pricePerUnitHour: f.pricePerUnitHour,
        },
      }),
      registers: ID('flavor', f.name),
    };
    return result('flavor', f.name, false, changes, [], [], [step]);
  }
  // Quotas, nodes and admissions count in the flavor's units: the server changes them only while nothing uses it.
  const users = flavorUsers(f.name, state);
  const blocked = changes
    .filter((c) => (c.field === 'kind' || c.field === 'slicesPerGpu') && users.length)
    .map(
      (c) =>
        `${c.field} cannot be changed while ${users.join(', ')} use(s) the flavor (create a flavor under a new name)`,
    );
  const input = Object.fromEntries(changes.map((c) => [c.field, c.new]));
  const steps: Step[] = changes.length
    ? [
        {
          // A new price is a new price-book version from now on.
          document: 'mutation($input: UpdateFlavorInput!) { updateFlavor(input: $input) { id } }',
          variables: () => ({ input: { id: cur.id, ...input } }),
        },
      ]
    : [];
  return result('flavor', f.name, true, changes, [], blocked, steps);
}

/** What on the server counts in a flavor's units: node pools' nodes, queues' and cohorts' quotas. */
function flavorUsers(flavor: string, state: ServerState): string[] {
  const pools = [...state.nodePools.values()].filter((p) => p.nodes.some((n) => n.flavor === flavor));
  const queues = [...state.queues.values()].filter((q) => q.quotas.some((l) => l.flavor === flavor));
  const cohorts = [...state.cohorts.values()].filter((c) => c.quotas.some((l) => l.flavor === flavor));
  const users = [
    ...pools.map((p) => `node pool ${p.name}`),
    ...queues.map((q) => `queue ${q.name}`),
    ...cohorts.map((c) => `cohort ${c.name}`),
  ];
  return users.length > 3 ? [...users.slice(0, 3), `${users.length - 3} more`] : users;
}

export function planPriorityClass(
  p: PlatformSpec['priorityClasses'][number],
  state: ServerState,
): ObjectPlan {
  const cur = state.priorityClasses.get(p.name);
  const multiplierStep: Step = {
    document:
      'mutation($input: SetPriceMultiplierInput!) { setPriceMultiplier(input: $input) { priorityClass } }',
    variables: () => ({ input: { priorityClass: p.name, multiplier: p.multiplier } }),
  };
  if (!cur) {
    if (p.value === undefined || p.preemptible === undefined)
      return result(
        'priorityClass',
        p.name,
        false,
        [],
        [],
        ['not on the server: give its value and preemptible to create it'],
        [],
      );
    const create: Step = {
      document: 'mutation($input: CreatePriorityClassInput!) { createPriorityClass(input: $input) { name } }',
      variables: () => ({
        input: {
          name: p.name,
          value: p.value,
          preemptible: p.preemptible,
          requiresGrant: p.requiresGrant ?? false,
          ...(p.description !== undefined ? { description: p.description } : {}),
        },
      }),
    };
    const fields = {
      value: p.value,
      preemptible: p.preemptible,
      description: p.description,
      requiresGrant: p.requiresGrant,
      multiplier: p.multiplier,
    };
    return result(
      'priorityClass',
      p.name,
      false,
      compare(fields, undefined),
      [],
      [],
      [create, ...(p.multiplier !== undefined ? [multiplierStep] : [])],
    );
  }
  const changes = compare(
    {
      value: p.value,
      preemptible: p.preemptible,
      description: p.description,
      requiresGrant: p.requiresGrant,
      multiplier: p.multiplier,
    },
    cur,
  );
  const steps: Step[] = [];
  const updated = changes.filter((c) => c.field !== 'multiplier').map((c) => c.field);
  if (updated.length)
    steps.push({
      document: 'mutation($input: UpdatePriorityClassInput!) { updatePriorityClass(input: $input) { name } }',
      variables: () => ({
        input: { name: p.name, ...Object.fromEntries(updated.map((f) => [f, p[f as keyof typeof p]])) },
      }),
    });
  if (changes.some((c) => c.field === 'multiplier')) steps.push(multiplierStep);
  return result('priorityClass', p.name, true, changes, [], [], steps);
}

/** Parents before children (by the file's order otherwise); a cycle is left for planCohort to block. */
export function orderCohorts(cohorts: CohortSpec[]): CohortSpec[] {
  const byName = new Map(cohorts.map((c) => [c.name, c]));
  const out: CohortSpec[] = [];
  const visiting = new Set<string>();
  const visit = (c: CohortSpec) => {
    if (out.includes(c) || visiting.has(c.name)) return;
    visiting.add(c.name);
    const parent = c.parent ? byName.get(c.parent) : undefined;
    if (parent) visit(parent);
    out.push(c);
  };
  cohorts.forEach(visit);
  return out;
}

export function planCohort(c: CohortSpec, spec: PlatformSpec, state: ServerState): ObjectPlan {
  const cur = state.cohorts.get(c.name);
  const blocked: string[] = [];
  if (c.parent && !state.cohorts.has(c.parent) && !spec.cohorts.some((o) => o.name === c.parent))
    blocked.push(`parent cohort "${c.parent}" is neither in the file nor on the server`);
  const want = { parent: c.parent, ...(c.quotas ? { quotas: quotaLines(c.quotas) } : {}) };
  const changes = quotaAware(want, cur ? { parent: cur.parent, quotas: cur.quotas } : undefined);
  if (cur) {
    // parentName reads null for a root cohort; a file that leaves `parent` out does not manage it.
    if (c.parent && wouldCycle(c, spec, state))
      blocked.push(`parent "${c.parent}" would make the cohort its own ancestor`);
    const step: Step = {
      document: 'mutation($input: UpdateCohortInput!) { updateCohort(input: $input) { id } }',
      variables: (ids) => ({
        input: {
          id: cur.id,
          ...(changes.some((ch) => ch.field === 'parent') && c.parent
            ? { parentId: need(ids, 'cohort', c.parent) }
            : {}),
          ...(changes.some((ch) => ch.field.startsWith('quotas')) ? { quotas: c.quotas } : {}),
        },
      }),
    };
    return result('cohort', c.name, true, changes, [], blocked, [step]);
  }
  const step: Step = {
    document: 'mutation($input: CreateCohortInput!) { createCohort(input: $input) { id } }',
    variables: (ids) => ({
      input: {
        name: c.name,
        parentId: c.parent ? need(ids, 'cohort', c.parent) : undefined,
        quotas: c.quotas,
      },
    }),
    registers: ID('cohort', c.name),
  };
  return result('cohort', c.name, false, changes, [], blocked, [step]);
}

/** Whether the parents after this run (the file's over the server's) would lead from `c` back to itself. */
function wouldCycle(c: CohortSpec, spec: PlatformSpec, state: ServerState): boolean {
  const parentOf = (name: string): string | null | undefined => {
    const inFile = spec.cohorts.find((o) => o.name === name);
    return inFile?.parent ?? state.cohorts.get(name)?.parent;
  };
  const seen = new Set<string>();
  for (let p = c.parent ?? null; p; p = parentOf(p) ?? null) {
    if (p === c.name) return true;
    if (seen.has(p)) return false;
    seen.add(p);
  }
  return false;
}

export function planNodePool(
  p: PlatformSpec['nodePools'][number],
  spec: PlatformSpec,
  state: ServerState,
): ObjectPlan {
  const cur = state.nodePools.get(p.name);
  const blocked: string[] = [];
  const nodes = [...p.nodes].sort((a, b) => a.name.localeCompare(b.name));
  if (
    p.dedicatedTenant &&
    !state.tenants.has(p.dedicatedTenant) &&
    !spec.tenants.some((t) => t.slug === p.dedicatedTenant)
  )
    blocked.push(`dedicatedTenant "${p.dedicatedTenant}" is neither in the file nor on the server`);
  if (cur) {
    const have = [...cur.nodes]
      .map(({ name, flavor, gpus, cpuMillis, memoryMiB }) => ({ name, flavor, gpus, cpuMillis, memoryMiB }))
      .sort((a, b) => a.name.localeCompare(b.name));
    const changes = compare(
      { nodes, dedicated: p.dedicatedTenant !== undefined },
      { nodes: have, dedicated: cur.dedicated },
    );
    // The server refuses (CONFLICT) to take away or reshape a node a job runs on.
    const step: Step = {
      document: 'mutation($input: UpdateNodePoolInput!) { updateNodePool(input: $input) { id } }',
      variables: (ids) => ({
        input: {
          id: cur.id,
          ...(changes.some((ch) => ch.field === 'nodes') ? { nodes: p.nodes } : {}),
          ...(changes.some((ch) => ch.field === 'dedicated')
            ? { dedicatedTenantId: p.dedicatedTenant ? need(ids, 'tenant', p.dedicatedTenant) : null }
            : {}),
        },
      }),
    };
    // Which tenant a pool is dedicated to cannot be read back: only whether it is dedicated.
    return result(
      'nodePool',
      p.name,
      true,
      changes,
      [],
      blocked,
      [step],
      p.dedicatedTenant ? ['dedicatedTenant'] : [],
    );
  }
  const changes = compare({ dedicatedTenant: p.dedicatedTenant, nodes }, undefined);
  const step: Step = {
    document: 'mutation($input: CreateNodePoolInput!) { createNodePool(input: $input) { id } }',
    variables: (ids) => ({
      input: {
        name: p.name,
        dedicatedTenantId: p.dedicatedTenant ? need(ids, 'tenant', p.dedicatedTenant) : undefined,
        nodes: p.nodes,
      },
    }),
    registers: ID('nodePool', p.name),
  };
  return result('nodePool', p.name, false, changes, [], blocked, [step]);
}
