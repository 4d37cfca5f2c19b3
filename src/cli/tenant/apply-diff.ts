// `fairway apply`: the plan — per object of the file, create / update / unchanged / blocked with
// its field changes (old → new) and the mutations that make it so, in dependency order. A
// field the file leaves out is not managed (left as it is); a field the API cannot change
// after creation blocks the whole apply (nothing is sent), since applying the rest would leave
// the platform neither as it was nor as the file says.
import type { CohortSpec, PlatformSpec, QuotaSpec, TenantSpec } from './apply-spec.js';
import type { Boundaries, QuotaLine, ServerState } from './apply-state.js';

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
  action: 'create' | 'update' | 'unchanged' | 'blocked';
  changes: FieldChange[];
  /** Why blocked, or what to know about a change. */
  notes: string[];
  /** Fields the file sets that the API cannot read back: applied at creation, never compared. */
  notCompared: string[];
  steps: Step[];
}

export interface Plan {
  objects: ObjectPlan[];
  /** On the server, not in the file: left as they are. */
  unmanaged: { kind: ObjectKind; name: string }[];
  ids: IdBook;
}

const ID = (kind: ObjectKind, name: string) => `${kind}:${name}`;
const need = (ids: IdBook, kind: ObjectKind, name: string): string => {
  const id = ids.get(ID(kind, name));
  // The plan orders creates before their users and blocks unknown references, so this is a bug.
  if (!id) throw new Error(`internal: no id for ${kind} ${name}`);
  return id;
};

export function computePlan(spec: PlatformSpec, state: ServerState): Plan {
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
  const inFile = {
    flavor: new Set(spec.flavors.map((f) => f.name)),
    cohort: new Set(spec.cohorts.map((c) => c.name)),
    tenant: new Set(spec.tenants.map((t) => t.slug)),
    nodePool: new Set(spec.nodePools.map((p) => p.name)),
    queue: new Set(spec.tenants.flatMap((t) => t.queues.map((q) => q.name))),
  };
  const unmanaged: Plan['unmanaged'] = [];
  for (const [kind, map] of [
    ['flavor', state.flavors],
    ['cohort', state.cohorts],
    ['tenant', state.tenants],
    ['nodePool', state.nodePools],
    ['queue', state.queues],
  ] as const)
    for (const name of [...map.keys()].sort()) if (!inFile[kind].has(name)) unmanaged.push({ kind, name });
  return { objects, unmanaged, ids };
}

function result(
  kind: ObjectKind,
  name: string,
  exists: boolean,
  changes: FieldChange[],
  notes: string[],
  blocked: string[],
  steps: Step[],
  notCompared: string[] = [],
): ObjectPlan {
  if (blocked.length)
    return { kind, name, action: 'blocked', changes, notes: [...blocked, ...notes], notCompared, steps: [] };
  const action = !exists ? 'create' : changes.length ? 'update' : 'unchanged';
  return { kind, name, action, changes, notes, notCompared, steps: action === 'unchanged' ? [] : steps };
}

/** Fields given in the file whose value differs from the server's. */
function compare(
  fields: Record<string, unknown>,
  current: Record<string, unknown> | undefined,
): FieldChange[] {
  const out: FieldChange[] = [];
  for (const [field, value] of Object.entries(fields)) {
    if (value === undefined) continue;
    const old = current?.[field];
    if (!current || !same(old, value))
      out.push({ field, old: current ? (old ?? null) : undefined, new: value });
  }
  return out;
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
}

function planFlavor(f: PlatformSpec['flavors'][number], state: ServerState): ObjectPlan {
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

function planPriorityClass(p: PlatformSpec['priorityClasses'][number], state: ServerState): ObjectPlan {
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
function orderCohorts(cohorts: CohortSpec[]): CohortSpec[] {
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

function planCohort(c: CohortSpec, spec: PlatformSpec, state: ServerState): ObjectPlan {
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

function planTenant(t: TenantSpec, state: ServerState): ObjectPlan {
  const cur = state.tenants.get(t.slug);
  const notes: string[] = [];
  const notCompared: string[] = [];
  const blocked: string[] = [];
  const basic = { name: t.name, tier: t.tier, isolationLevel: t.isolationLevel, status: t.status };
  const extras = {
    grantedPriorityClasses: t.grantedPriorityClasses ? [...t.grantedPriorityClasses].sort() : undefined,
    dataBoundaries: t.dataBoundaries === undefined ? undefined : boundaries(t.dataBoundaries),
    egressAllowlist: t.egressAllowlist,
  };
  for (const pc of t.grantedPriorityClasses ?? [])
    if (!state.priorityClasses.has(pc))
      blocked.push(`grantedPriorityClasses: priority class "${pc}" does not exist`);
  const tenantId = (ids: IdBook) => need(ids, 'tenant', t.slug);
  const steps: Step[] = [];
  let changes: FieldChange[];
  if (!cur) {
    changes = compare({ slug: t.slug, ...basic, adminEmail: t.adminEmail, ...extras }, undefined);
    steps.push({
      document: 'mutation($input: CreateTenantInput!) { createTenant(input: $input) { id } }',
      variables: () => ({
        input: {
          slug: t.slug,
          name: t.name,
          tier: t.tier,
          isolationLevel: t.isolationLevel,
          adminEmail: t.adminEmail,
        },
      }),
      registers: ID('tenant', t.slug),
    });
    // createTenant takes no status: a new tenant is ACTIVE until told otherwise.
    if (t.status && t.status !== 'ACTIVE') steps.push(updateTenant(tenantId, { status: t.status }));
  } else {
    const current = {
      ...cur,
      grantedPriorityClasses: [...cur.grantedPriorityClasses].sort(),
      dataBoundaries: boundaries(cur.dataBoundaries),
    };
    changes = compare({ ...basic, ...extras }, current);
    const basicChanged = Object.fromEntries(
      changes.filter((c) => c.field in basic).map((c) => [c.field, c.new]),
    );
    if (Object.keys(basicChanged).length) steps.push(updateTenant(tenantId, basicChanged));
    // Platform admins cannot read members' e-mails; the tenant's admins manage members.
    if (t.adminEmail) notCompared.push('adminEmail');
  }
  const had = new Set(cur?.grantedPriorityClasses ?? []);
  const wanted = new Set(t.grantedPriorityClasses ?? had);
  for (const pc of [...wanted].filter((p) => !had.has(p)))
    steps.push({
      document:
        'mutation($t: ID!, $pc: String!) { grantTenantPriorityClass(tenantId: $t, priorityClass: $pc) { id } }',
      variables: (ids) => ({ t: tenantId(ids), pc }),
    });
  for (const pc of [...had].filter((p) => !wanted.has(p)))
    steps.push({
      document:
        'mutation($t: ID!, $pc: String!) { revokeTenantPriorityClass(tenantId: $t, priorityClass: $pc) { id } }',
      variables: (ids) => ({ t: tenantId(ids), pc }),
    });
  if (changes.some((c) => c.field === 'dataBoundaries') && !(cur === undefined && t.dataBoundaries === null))
    steps.push({
      document:
        'mutation($t: ID!, $b: DataBoundariesInput!) { setTenantDataBoundaries(tenantId: $t, boundaries: $b) { id } }',
      variables: (ids) => ({ t: tenantId(ids), b: boundaries(t.dataBoundaries ?? null) }),
    });
  if (
    changes.some((c) => c.field === 'egressAllowlist') &&
    !(cur === undefined && t.egressAllowlist === null)
  )
    steps.push({
      document:
        'mutation($t: ID!, $c: [String!]) { setTenantEgressAllowlist(tenantId: $t, cidrs: $c) { id } }',
      variables: (ids) => ({ t: tenantId(ids), c: t.egressAllowlist }),
    });
  return result('tenant', t.slug, !!cur, changes, notes, blocked, steps, notCompared);
}

function updateTenant(tenantId: (ids: IdBook) => string, fields: Record<string, unknown>): Step {
  return {
    document: 'mutation($input: UpdateTenantInput!) { updateTenant(input: $input) { id } }',
    variables: (ids) => ({ input: { id: tenantId(ids), ...fields } }),
  };
}

/** A tenant without boundaries reads null: the same as three unrestricted lists. */
function boundaries(b: Partial<Boundaries> | null): Boundaries {
  return {
    imageRegistries: b?.imageRegistries ?? null,
    datasetLocations: b?.datasetLocations ?? null,
    artifactStores: b?.artifactStores ?? null,
  };
}

function planNodePool(
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

function planQueue(
  tenant: string,
  q: TenantSpec['queues'][number],
  spec: PlatformSpec,
  state: ServerState,
): ObjectPlan {
  const cur = state.queues.get(q.name);
  const blocked: string[] = [];
  const notes: string[] = [];
  if (cur && cur.tenant !== tenant)
    blocked.push(`belongs to tenant "${cur.tenant}": a queue cannot move between tenants`);
  if (q.cohort && !state.cohorts.has(q.cohort) && !spec.cohorts.some((c) => c.name === q.cohort))
    blocked.push(`cohort "${q.cohort}" is neither in the file nor on the server`);
  const want = {
    cohort: q.cohort,
    quotas: quotaLines(q.quotas),
    weight: q.weight,
    queueingStrategy: q.queueingStrategy,
    isolationLevel: q.isolationLevel,
  };
  const createOnly = { preemption: q.preemption, timeWindows: q.timeWindows, dedicatedPool: q.dedicatedPool };
  const cohortId = (ids: IdBook) => (q.cohort ? need(ids, 'cohort', q.cohort) : null);
  if (!cur) {
    const step: Step = {
      document: 'mutation($input: CreateQueueInput!) { createQueue(input: $input) { id } }',
      variables: (ids) => ({
        input: {
          tenantId: need(ids, 'tenant', tenant),
          name: q.name,
          cohortId: cohortId(ids) ?? undefined,
          quotas: q.quotas,
          weight: q.weight,
          queueingStrategy: q.queueingStrategy,
          isolationLevel: q.isolationLevel ?? undefined,
          ...createOnly,
        },
      }),
      registers: ID('queue', q.name),
    };
    return result(
      'queue',
      q.name,
      false,
      quotaAware({ tenant, ...want, ...createOnly }, undefined),
      notes,
      blocked,
      [step],
    );
  }
  const changes = quotaAware(want, cur);
  const unread = Object.entries(createOnly)
    .filter(([, v]) => v !== undefined)
    .map(([k]) => k);
  const input: Record<string, unknown> = {};
  for (const c of changes) {
    const field = c.field.startsWith('quotas[') ? 'quotas' : c.field;
    if (field === 'cohort') continue; // its ID is looked up when the step runs (it may be new)
    if (field === 'quotas') input.quotas = q.quotas;
    else input[field] = (q as Record<string, unknown>)[field];
  }
  const steps: Step[] = [];
  if (changes.length)
    steps.push({
      document: 'mutation($input: UpdateQueueInput!) { updateQueue(input: $input) { id } }',
      variables: (ids) => ({
        input: {
          id: cur.id,
          ...input,
          ...(changes.some((c) => c.field === 'cohort') ? { cohortId: cohortId(ids) } : {}),
        },
      }),
    });
  return result('queue', q.name, true, changes, notes, blocked, steps, unread);
}

function quotaLines(quotas: QuotaSpec[]): QuotaLine[] {
  return quotas.map((q) => ({
    flavor: q.flavor,
    resource: q.resource,
    nominal: q.nominal,
    borrowingLimit: q.borrowingLimit ?? null,
    lendingLimit: q.lendingLimit ?? null,
  }));
}

/**
 * As compare(), but quotas one by one (`quotas[h100-80g/GPU].nominal: 16 → 24`), so a diff
 * names the limit that changed; current undefined: the object is new.
 */
function quotaAware(
  want: Record<string, unknown> & { quotas?: QuotaLine[] },
  current: (Record<string, unknown> & { quotas: QuotaLine[] }) | undefined,
): FieldChange[] {
  const { quotas, ...rest } = want;
  const changes = compare(rest, current);
  if (!quotas) return changes;
  const key = (q: QuotaLine) => `${q.flavor}/${q.resource}`;
  const have = new Map((current?.quotas ?? []).map((q) => [key(q), q]));
  const wanted = new Map(quotas.map((q) => [key(q), q]));
  for (const [k, w] of wanted) {
    const h = have.get(k);
    if (!h) changes.push({ field: `quotas[${k}]`, old: current ? null : undefined, new: limits(w) });
    else
      for (const f of ['nominal', 'borrowingLimit', 'lendingLimit'] as const)
        if (h[f] !== w[f]) changes.push({ field: `quotas[${k}].${f}`, old: h[f], new: w[f] });
  }
  for (const [k, h] of have)
    if (!wanted.has(k)) changes.push({ field: `quotas[${k}]`, old: limits(h), new: null });
  return changes;
}

function limits(q: QuotaLine): Record<string, number> {
  return Object.fromEntries(
    Object.entries({
      nominal: q.nominal,
      borrowingLimit: q.borrowingLimit,
      lendingLimit: q.lendingLimit,
    }).filter(([, v]) => v !== null),
  ) as Record<string, number>;
}
