// `fairway apply`'s plan for the platform-wide objects: flavors, priority classes, cohorts and
// node pools (what apply-diff.ts's computePlan puts before and around the tenants).
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
  const blocked = changes
    .filter((c) => c.field !== 'pricePerUnitHour')
    .map(
      (c) => `${c.field} cannot be changed: the API has no updateFlavor (create a flavor under a new name)`,
    );
  const steps: Step[] = changes.some((c) => c.field === 'pricePerUnitHour')
    ? [
        {
          document: 'mutation($input: SetFlavorPriceInput!) { setFlavorPrice(input: $input) { flavor } }',
          variables: () => ({ input: { flavor: f.name, pricePerUnitHour: f.pricePerUnitHour } }),
        },
      ]
    : [];
  return result('flavor', f.name, true, changes, [], blocked, steps);
}

export function planPriorityClass(
  p: PlatformSpec['priorityClasses'][number],
  state: ServerState,
): ObjectPlan {
  const cur = state.priorityClasses.get(p.name);
  if (!cur)
    return result(
      'priorityClass',
      p.name,
      false,
      [],
      [],
      ['not on the server: the API has no createPriorityClass (only existing classes can be configured)'],
      [],
    );
  const changes = compare({ requiresGrant: p.requiresGrant, multiplier: p.multiplier }, cur);
  const steps: Step[] = [];
  if (changes.some((c) => c.field === 'requiresGrant'))
    steps.push({
      document: 'mutation($input: UpdatePriorityClassInput!) { updatePriorityClass(input: $input) { name } }',
      variables: () => ({ input: { name: p.name, requiresGrant: p.requiresGrant } }),
    });
  if (changes.some((c) => c.field === 'multiplier'))
    steps.push({
      document:
        'mutation($input: SetPriceMultiplierInput!) { setPriceMultiplier(input: $input) { priorityClass } }',
      variables: () => ({ input: { priorityClass: p.name, multiplier: p.multiplier } }),
    });
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
    for (const ch of changes) blocked.push(`${ch.field} cannot be changed: the API has no updateCohort`);
    return result('cohort', c.name, true, changes, [], blocked, []);
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
    for (const ch of changes) blocked.push(`${ch.field} cannot be changed: the API has no updateNodePool`);
    // Which tenant a pool is dedicated to cannot be read back: only whether it is dedicated.
    return result(
      'nodePool',
      p.name,
      true,
      changes,
      [],
      blocked,
      [],
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
