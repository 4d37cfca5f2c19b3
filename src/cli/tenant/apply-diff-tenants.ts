// `fairway apply`'s plan for the tenants and their queues: a tenant's fields, granted priority
// classes, data boundaries and egress allowlist; a queue's cohort, quotas and scheduling fields.
import type { FieldChange, IdBook, ObjectPlan, Step } from './apply-diff.js';
import { compare, ID, need, quotaAware, quotaLines, result } from './apply-diff-fields.js';
import type { PlatformSpec, TenantSpec } from './apply-spec.js';
import type { Boundaries, ServerState } from './apply-state.js';

export function planTenant(t: TenantSpec, state: ServerState): ObjectPlan {
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

export function planQueue(
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
