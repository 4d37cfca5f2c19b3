import {
  ADD_MEMBER,
  CREATE_PROJECT,
  type Expectations,
  type MatrixRow,
  m,
  newMember,
  only,
  PLATFORM_ONLY,
  SUBMIT,
} from './role-matrix.js';
import { CLUSTER_UPDATE_ROWS } from './role-matrix-rows-cluster.js';

/**
 * Who may call each mutation, by the permission rules (docs/api.md, "Who may do what"):
 * - platform admins configure the platform; inside a tenant they change nothing without a
 *   break-glass grant (they may still revoke a leaked token: that only takes access away);
 * - tenant admins run the tenant (members, projects, grants to projects, settings) and are
 *   PROJECT_ADMIN of every project;
 * - a project's admins manage it (members, queue, visibility, data boundaries), its
 *   contributors submit; a job is changed by its submitter and the project's admins;
 * - VIEWER and AUDITOR change nothing, whatever their project role.
 */
const BOUNDARIES = {
  imageRegistries: ['nvcr.io/nvidia'],
  datasetLocations: ['s3://aurora-datasets'],
  artifactStores: ['s3://aurora-models'],
};
const OPEN_GRANT = `mutation($in: OpenBreakGlassInput!) { openBreakGlass(input: $in) { id } }`;
const CLOSE_GRANT = `mutation($id: ID!) { closeBreakGlass(id: $id) { id } }`;
const SET_BUDGET = `mutation($in: SetBudgetInput!) { setBudget(input: $in) { id } }`;
const REQUEST_QUOTA = `mutation($in: RequestQuotaChangeInput!) { requestQuotaChange(input: $in) { id } }`;
const openGrantInput = () => ({
  in: { tenantId: m.ids.Tenant, reason: 'Role matrix: checking who may close this', durationMinutes: 5 },
});

const matrixPolicy = (name: string) => ({
  name,
  level: 'ELASTIC',
  lend: { min: 0, base: 1, max: 1 },
  borrow: null,
  minRunBeforeReclaimSeconds: 0,
  reclaimGraceSeconds: 60,
  preemptible: 'ANY',
  idle: { utilizationBelow: 0.1, idleForSeconds: 1800, notRunningForSeconds: 900, action: 'NOTIFY' },
});
let lastGrant: string | undefined;

/** Ends a grant the row left open, so the platform admin never holds one in a later row. */
async function closeIfOpen(id: string | undefined): Promise<void> {
  if (id) await m.as('platformAdmin', CLOSE_GRANT, { id });
}

export const TENANT_ROWS: MatrixRow[] = [
  {
    name: 'createTenant',
    query: `mutation($in: CreateTenantInput!) { createTenant(input: $in) { id } }`,
    variables: async () => ({ in: { slug: `t-${m.next()}`, name: 'New tenant' } }),
    expect: PLATFORM_ONLY,
  },
  {
    name: 'updateTenant',
    query: `mutation($in: UpdateTenantInput!) { updateTenant(input: $in) { id } }`,
    variables: async () => ({ in: { id: m.ids.Tenant, name: 'Aurora Research' } }),
    expect: PLATFORM_ONLY,
  },
  {
    name: 'grantTenantPriorityClass',
    query: `mutation($t: ID!) { grantTenantPriorityClass(tenantId: $t, priorityClass: "production") { id } }`,
    variables: async () => ({ t: m.ids.Tenant }),
    expect: PLATFORM_ONLY,
  },
  {
    name: 'revokeTenantPriorityClass',
    query: `mutation($t: ID!) { revokeTenantPriorityClass(tenantId: $t, priorityClass: "production") { id } }`,
    variables: async () => ({ t: m.ids.Tenant }),
    expect: PLATFORM_ONLY,
  },
  {
    name: 'setTenantDataBoundaries',
    query: `mutation($t: ID!, $b: DataBoundariesInput!) { setTenantDataBoundaries(tenantId: $t, boundaries: $b) { id } }`,
    // The demo's own boundaries for aurora: an allowed call changes nothing later rows rely on.
    variables: async () => ({
      t: m.ids.Tenant,
      b: {
        imageRegistries: ['nvcr.io/nvidia', 'registry.aurora.example'],
        datasetLocations: ['s3://aurora-datasets'],
        artifactStores: ['s3://aurora-models'],
      },
    }),
    expect: PLATFORM_ONLY,
  },
  {
    name: 'setTenantEgressAllowlist',
    query: `mutation($t: ID!) { setTenantEgressAllowlist(tenantId: $t, cidrs: null) { id } }`,
    variables: async () => ({ t: m.ids.Tenant }),
    expect: PLATFORM_ONLY,
  },
  {
    name: 'updatePriorityClass',
    query: `mutation { updatePriorityClass(input: { name: "experiment", requiresGrant: false }) { name } }`,
    variables: async () => ({}),
    expect: PLATFORM_ONLY,
  },
  {
    name: 'createFlavor',
    query: `mutation($in: CreateFlavorInput!) { createFlavor(input: $in) { id } }`,
    variables: async () => ({ in: { name: `f-${m.next()}`, kind: 'GPU', pricePerUnitHour: 1 } }),
    expect: PLATFORM_ONLY,
  },
  // Price book: platform list prices; each allowed call schedules a new version a day ahead (never in the
  // past).
  {
    name: 'setFlavorPrice',
    query: `mutation($in: SetFlavorPriceInput!) { setFlavorPrice(input: $in) { effectiveFrom } }`,
    variables: async () => ({
      in: {
        flavor: 'h100-80g',
        pricePerUnitHour: 2.49,
        effectiveFrom: new Date(m.t.now.value + 86_400_000 + m.next() * 1000).toISOString(),
      },
    }),
    expect: PLATFORM_ONLY,
  },
  {
    name: 'setPriceMultiplier',
    query: `mutation($in: SetPriceMultiplierInput!) { setPriceMultiplier(input: $in) { effectiveFrom } }`,
    variables: async () => ({
      in: {
        priorityClass: 'training',
        multiplier: 1,
        effectiveFrom: new Date(m.t.now.value + 86_400_000 + m.next() * 1000).toISOString(),
      },
    }),
    expect: PLATFORM_ONLY,
  },
  // Budgets: tenant admins only (a platform admin would need a break-glass grant).
  {
    name: 'setBudget',
    query: SET_BUDGET,
    variables: async () => ({ in: { tenantId: m.ids.Tenant, monthlyAmount: 1e9 } }),
    expect: only('tenantAdmin'),
  },
  {
    name: 'setBudget (a project budget, P)',
    query: SET_BUDGET,
    variables: async () => ({ in: { tenantId: m.ids.Tenant, projectId: m.P, monthlyAmount: 1e9 } }),
    expect: only('tenantAdmin'),
  },
  {
    name: 'removeBudget',
    query: `mutation($id: ID!) { removeBudget(id: $id) { removedBudgetId } }`,
    variables: async () => ({
      id: (
        await m.as('tenantAdmin', SET_BUDGET, {
          in: { tenantId: m.ids.Tenant, projectId: m.Q, monthlyAmount: 1e9 },
        })
      ).setBudget.id,
    }),
    expect: only('tenantAdmin'),
  },
  {
    name: 'createNodePool',
    query: `mutation($in: CreateNodePoolInput!) { createNodePool(input: $in) { id } }`,
    variables: async () => {
      const n = m.next();
      return {
        in: {
          name: `pool-${n}`,
          nodes: [{ name: `n-${n}`, flavor: 'h100-80g', gpus: 8, cpuMillis: 64000, memoryMiB: 65536 }],
        },
      };
    },
    expect: PLATFORM_ONLY,
  },
  {
    name: 'createCohort',
    query: `mutation($in: CreateCohortInput!) { createCohort(input: $in) { id } }`,
    variables: async () => ({ in: { name: `c-${m.next()}` } }),
    expect: PLATFORM_ONLY,
  },
  ...CLUSTER_UPDATE_ROWS,
  {
    name: 'createQueue',
    query: `mutation($in: CreateQueueInput!) { createQueue(input: $in) { id } }`,
    variables: async () => ({
      in: { name: `q-${m.next()}`, tenantId: m.ids.Tenant, quotas: [{ flavor: 'h100-80g', nominal: 0 }] },
    }),
    expect: PLATFORM_ONLY,
  },
  // A queue's minimum run before reclaim and fair-share loss limit are platform configuration too.
  {
    name: 'createQueue (with minRunBeforeReclaimSeconds)',
    query: `mutation($in: CreateQueueInput!) { createQueue(input: $in) { id minRunBeforeReclaimSeconds } }`,
    variables: async () => ({
      in: {
        name: `q-${m.next()}`,
        tenantId: m.ids.Tenant,
        quotas: [{ flavor: 'h100-80g', nominal: 0 }],
        preemption: { minRunBeforeReclaimSeconds: 600, fairShareMaxLostRunSeconds: 300 },
      },
    }),
    expect: PLATFORM_ONLY,
  },
  {
    name: 'updateQueue',
    query: `mutation($in: UpdateQueueInput!) { updateQueue(input: $in) { id } }`,
    variables: async () => ({ in: { id: m.ids.Queue, weight: 1 } }),
    expect: PLATFORM_ONLY,
  },
  {
    name: 'setQuota',
    query: `mutation($id: ID!) { setQuota(queueId: $id, quota: { flavor: "h100-80g", nominal: 16 }) { id } }`,
    variables: async () => ({ id: m.ids.Queue }),
    expect: PLATFORM_ONLY,
  },
  // The isolation-policy library is platform policy (any caller reads it; only platform admins change it).
  {
    name: 'setIsolationPolicy',
    query: `mutation($in: SetIsolationPolicyInput!) { setIsolationPolicy(input: $in) { name } }`,
    variables: async () => ({ in: matrixPolicy(`matrix-${m.next()}`) }),
    expect: PLATFORM_ONLY,
  },
  {
    name: 'deleteIsolationPolicy',
    query: `mutation($n: String!) { deleteIsolationPolicy(name: $n) { name } }`,
    variables: async () => ({
      n: (
        await m.as(
          'platformAdmin',
          `mutation($in: SetIsolationPolicyInput!) { setIsolationPolicy(input: $in) { name } }`,
          { in: matrixPolicy(`matrix-${m.next()}`) },
        )
      ).setIsolationPolicy.name,
    }),
    expect: PLATFORM_ONLY,
  },
  // An empty list restores the default rules: an allowed call changes no queue's policy.
  {
    name: 'setIsolationPolicyRules',
    query: `mutation { setIsolationPolicyRules(rules: []) { policy } }`,
    variables: async () => ({}),
    expect: PLATFORM_ONLY,
  },
  // The governance controller's switch: an allowed call leaves it on (as it was).
  {
    name: 'setGovernanceController',
    query: `mutation { setGovernanceController(enabled: true) { enabled } }`,
    variables: async () => ({}),
    expect: PLATFORM_ONLY,
  },
  // Platform admins no longer run tenants' membership: that takes a break-glass grant.
  {
    name: 'addMember',
    query: ADD_MEMBER,
    variables: async () => ({
      in: { tenantId: m.ids.Tenant, email: `new-${m.next()}@aurora.example`, role: 'VIEWER' },
    }),
    expect: only('tenantAdmin'),
  },
  {
    name: 'addMember (with a role in P: project roles in the same transaction)',
    query: ADD_MEMBER,
    variables: async () => ({
      in: {
        tenantId: m.ids.Tenant,
        email: `new-${m.next()}@aurora.example`,
        role: 'MEMBER',
        projects: [{ projectId: m.P, role: 'CONTRIBUTOR' }],
      },
    }),
    // Administering P does not let its admin add people to the tenant.
    expect: only('tenantAdmin'),
  },
  // Only the person themself (the contributor's own, still invited, membership).
  {
    name: 'acceptMembership',
    query: `mutation($id: ID!) { acceptMembership(id: $id) { id } }`,
    variables: async () => ({ id: m.memberIds.contributor }),
    expect: only('contributor'),
  },
  {
    name: 'changeMemberRole',
    query: `mutation($id: ID!) { changeMemberRole(id: $id, role: MEMBER) { id } }`,
    variables: async () => ({ id: m.ids.Member }),
    expect: only('tenantAdmin'),
  },
  {
    name: 'removeMember',
    query: `mutation($id: ID!) { removeMember(id: $id) { removedMemberId } }`,
    variables: async () => ({ id: (await newMember({ id: m.P, role: 'CONTRIBUTOR' })).memberId }),
    expect: only('tenantAdmin'),
  },
  {
    name: 'updateTenantSettings',
    query: `mutation($in: UpdateTenantSettingsInput!) { updateTenantSettings(input: $in) { id } }`,
    variables: async () => ({ in: { tenantId: m.ids.Tenant, projectsOpen: false } }),
    expect: only('tenantAdmin'),
  },
  {
    name: 'createProject',
    query: CREATE_PROJECT,
    variables: async () => ({ in: { tenantId: m.ids.Tenant, slug: `p-${m.next()}`, name: 'Project' } }),
    expect: only('tenantAdmin'),
  },
  {
    name: 'createApiToken',
    query: `mutation($in: CreateApiTokenInput!) { createApiToken(input: $in) { secret } }`,
    variables: async () => ({
      in: { tenantId: m.ids.Tenant, name: `tok-${m.next()}`, scopes: ['TENANT_READ'] },
    }),
    // Anyone who may change things in the tenant makes their own tokens; the platform admin is no member.
    expect: only('tenantAdmin', 'projectAdmin', 'contributor', 'projectViewer', 'memberWithoutProject'),
  },
  {
    name: 'revokeApiToken (a token of the tenant admin)',
    query: `mutation($id: ID!) { revokeApiToken(id: $id) { id revokedAt } }`,
    variables: async () => ({
      id: (
        await m.as(
          'tenantAdmin',
          `mutation($in: CreateApiTokenInput!) { createApiToken(input: $in) { token { id } } }`,
          { in: { tenantId: m.ids.Tenant, name: `victim-${m.next()}`, scopes: ['TENANT_READ'] } },
        )
      ).createApiToken.token.id,
    }),
    // Members cannot see other people's tokens, so for them it does not exist; platform admins may revoke
    // any (it only takes access away).
    expect: { ...allNotFound(), platformAdmin: 'OK', tenantAdmin: 'OK' },
  },
  {
    name: 'openBreakGlass',
    query: OPEN_GRANT,
    variables: async () => openGrantInput(),
    // Only platform admins open grants; tenant people already see their tenant (FORBIDDEN, whoever they are).
    expect: PLATFORM_ONLY,
    after: (res) => closeIfOpen(res.body.data?.openBreakGlass?.id),
  },
  {
    name: 'closeBreakGlass (the platform admin open grant)',
    query: CLOSE_GRANT,
    variables: async () => {
      lastGrant = (await m.as('platformAdmin', OPEN_GRANT, openGrantInput())).openBreakGlass.id as string;
      return { id: lastGrant };
    },
    // The operator (any platform admin) and the tenant's admins; members and read-only roles may not.
    expect: only('platformAdmin', 'tenantAdmin'),
    after: async (res) => {
      if (res.body.errors) await closeIfOpen(lastGrant);
    },
  },
  // Quota requests: tenant admins ask (platform admins set quotas directly), platform admins decide.
  {
    name: 'requestQuotaChange',
    query: REQUEST_QUOTA,
    variables: async () => quotaRequestInput(),
    expect: only('tenantAdmin'),
  },
  {
    name: 'approveQuotaRequest',
    query: `mutation($id: ID!) { approveQuotaRequest(id: $id) { status } }`,
    variables: async () => ({ id: await pendingQuotaRequest() }),
    expect: PLATFORM_ONLY,
    // The approval raised aurora's H100 nominal: back to the demo's 16 for later rows.
    after: async (res) => {
      if (!res.body.errors)
        await m.as(
          'platformAdmin',
          `mutation($q: ID!) { setQuota(queueId: $q, quota: { flavor: "h100-80g", nominal: 16 }) { id } }`,
          { q: m.ids.Queue },
        );
    },
  },
  {
    name: 'rejectQuotaRequest',
    query: `mutation($id: ID!) { rejectQuotaRequest(id: $id, note: "not now") { status } }`,
    variables: async () => ({ id: await pendingQuotaRequest() }),
    expect: PLATFORM_ONLY,
  },
  {
    name: 'cancelQuotaRequest',
    query: `mutation($id: ID!) { cancelQuotaRequest(id: $id) { status } }`,
    variables: async () => ({ id: await pendingQuotaRequest() }),
    expect: only('tenantAdmin'),
  },
];

const quotaRequestInput = () => ({
  in: { queueId: m.ids.Queue, flavor: 'h100-80g', nominal: 1000 + m.next(), justification: 'role matrix' },
});
/** A PENDING request of aurora's admin. */
async function pendingQuotaRequest(): Promise<string> {
  return (await m.as('tenantAdmin', REQUEST_QUOTA, quotaRequestInput())).requestQuotaChange.id;
}

function allNotFound(): Expectations {
  return {
    ...only(),
    projectAdmin: 'NOT_FOUND',
    contributor: 'NOT_FOUND',
    projectViewer: 'NOT_FOUND',
    memberWithoutProject: 'NOT_FOUND',
    viewer: 'NOT_FOUND',
    auditor: 'NOT_FOUND',
    platformAdmin: 'NOT_FOUND',
    tenantAdmin: 'NOT_FOUND',
  };
}

type Which = 'P' | 'Q';
const LABEL: Record<Which, string> = { P: '(P: their project)', Q: '(Q: another project)' };
const projectOf = (which: Which) => (which === 'P' ? m.P : m.Q);
/** Project managers: tenant admins everywhere; a project's admins in their own project only. */
const managers = (which: Which) =>
  which === 'P' ? only('tenantAdmin', 'projectAdmin') : only('tenantAdmin');
/** Submitters: tenant admins everywhere; a project's admins and contributors in their project. */
const submitters = (which: Which) =>
  which === 'P' ? only('tenantAdmin', 'projectAdmin', 'contributor') : only('tenantAdmin');
const jobInput = (which: Which, name: string, big = false) => ({
  queueId: m.ids.Queue,
  projectId: projectOf(which),
  name: `${name}-${m.next()}`,
  // More GPUs than the cluster has: the job stays pending, the cluster stays free for later rows.
  podSets: [big ? { count: 8, gpusPerPod: 8 } : { gpusPerPod: 1 }],
  expectedDurationSeconds: 60,
});

/** A service that sleeps at zero replicas: rights are checked, no GPU is held. */
const serviceInput = (which: Which, name: string) => ({
  queueId: m.ids.Queue,
  projectId: projectOf(which),
  name: `${name}-${m.next()}`,
  container: { image: 'nvcr.io/nvidia/tritonserver:24.01-py3' },
  port: 8000,
  replica: { gpusPerPod: 1 },
  minReplicas: 0,
  maxReplicas: 2,
  scaling: { signal: 'IN_FLIGHT', target: 4, scaleToZeroAfterSeconds: 600 },
});
const CREATE_SERVICE = `mutation($in: CreateInferenceServiceInput!) { createInferenceService(input: $in) { id } }`;
const adminService = async (which: Which) =>
  (await m.as('tenantAdmin', CREATE_SERVICE, { in: serviceInput(which, 'admin-svc') })).createInferenceService
    .id;

function serviceRows(which: Which, label: string): MatrixRow[] {
  return [
    {
      name: `createInferenceService ${label}`,
      query: CREATE_SERVICE,
      variables: async () => ({ in: serviceInput(which, 'svc') }),
      expect: submitters(which),
    },
    {
      name: `previewService ${label}`,
      query: `mutation($in: CreateInferenceServiceInput!) { previewService(input: $in, replicas: 1) { admissible } }`,
      variables: async () => ({ in: serviceInput(which, 'what-if-svc') }),
      expect: submitters(which),
    },
    // Not the creator: only the project's admins (and tenant admins) may change it, as a job.
    {
      name: `updateInferenceService ${label}, a service of the tenant admin`,
      query: `mutation($id: ID!) { updateInferenceService(id: $id, input: { port: 9000 }) { id } }`,
      variables: async () => ({ id: await adminService(which) }),
      expect: managers(which),
    },
    {
      name: `scaleInferenceService ${label}, a service of the tenant admin`,
      query: `mutation($id: ID!) { scaleInferenceService(id: $id, maxReplicas: 3) { id } }`,
      variables: async () => ({ id: await adminService(which) }),
      expect: managers(which),
    },
    {
      name: `deleteInferenceService ${label}, a service of the tenant admin`,
      query: `mutation($id: ID!) { deleteInferenceService(id: $id) }`,
      variables: async () => ({ id: await adminService(which) }),
      expect: managers(which),
    },
  ];
}

function projectRows(which: Which): MatrixRow[] {
  const label = LABEL[which];
  return [
    {
      name: `addProjectMember ${label}`,
      query: `mutation($in: AddProjectMemberInput!) { addProjectMember(input: $in) { id } }`,
      variables: async () => ({
        in: { projectId: projectOf(which), memberId: (await newMember()).memberId, role: 'CONTRIBUTOR' },
      }),
      expect: managers(which),
    },
    {
      name: `changeProjectMemberRole ${label}`,
      query: `mutation($id: ID!) { changeProjectMemberRole(id: $id, role: VIEWER) { id } }`,
      variables: async () => ({
        id: (await newMember({ id: projectOf(which), role: 'CONTRIBUTOR' })).projectMemberId,
      }),
      expect: managers(which),
    },
    {
      name: `removeProjectMember ${label}`,
      query: `mutation($id: ID!) { removeProjectMember(id: $id) { removedProjectMemberId } }`,
      variables: async () => ({
        id: (await newMember({ id: projectOf(which), role: 'CONTRIBUTOR' })).projectMemberId,
      }),
      expect: managers(which),
    },
    {
      name: `updateProject ${label}`,
      query: `mutation($in: UpdateProjectInput!) { updateProject(input: $in) { id } }`,
      variables: async () => ({ in: { id: projectOf(which), description: `changed ${m.next()}` } }),
      expect: managers(which),
    },
    {
      name: `setProjectQueue ${label}`,
      query: `mutation($p: ID!, $q: ID) { setProjectQueue(projectId: $p, queueId: $q) { id } }`,
      variables: async () => ({ p: projectOf(which), q: m.ids.Queue }),
      expect: managers(which),
    },
    {
      name: `setProjectDataBoundaries ${label}`,
      query: `mutation($p: ID!, $b: DataBoundariesInput!) { setProjectDataBoundaries(projectId: $p, boundaries: $b) { id } }`,
      variables: async () => ({ p: projectOf(which), b: BOUNDARIES }),
      expect: managers(which),
    },
    // Resources are the tenant's to hand out: tenant admins only, even in a project one administers.
    {
      name: `grantProjectAccess ${label}`,
      query: `mutation($in: ProjectAccessInput!) { grantProjectAccess(input: $in) { id } }`,
      variables: async () => ({
        in: { projectId: projectOf(which), kind: 'PRIORITY_CLASS', name: 'inference-critical' },
      }),
      expect: only('tenantAdmin'),
    },
    {
      name: `revokeProjectAccess ${label}`,
      query: `mutation($in: ProjectAccessInput!) { revokeProjectAccess(input: $in) { id } }`,
      variables: async () => ({
        in: { projectId: projectOf(which), kind: 'PRIORITY_CLASS', name: 'inference-critical' },
      }),
      expect: only('tenantAdmin'),
    },
    {
      name: `submitJob ${label}`,
      query: SUBMIT,
      variables: async () => ({ in: jobInput(which, 'job') }),
      expect: submitters(which),
    },
    {
      name: `submitJobs ${label}`,
      query: `mutation($jobs: [SubmitJobInput!]!) { submitJobs(jobs: $jobs) { id } }`,
      variables: async () => ({ jobs: [jobInput(which, 'batch-a'), jobInput(which, 'batch-b')] }),
      expect: submitters(which),
    },
    {
      name: `previewJob ${label}`,
      query: `mutation($in: SubmitJobInput!) { previewJob(input: $in) { admissible } }`,
      variables: async () => ({ in: jobInput(which, 'what-if') }),
      expect: submitters(which),
    },
    {
      name: `cancelJob ${label}, a job of the tenant admin`,
      query: `mutation($id: ID!) { cancelJob(id: $id) { state } }`,
      variables: async () => ({
        id: (await m.as('tenantAdmin', SUBMIT, { in: jobInput(which, 'admin-job', true) })).submitJob.id,
      }),
      // Not the submitter: only the project's admins (and tenant admins) may cancel it.
      expect: managers(which),
    },
    ...serviceRows(which, label),
  ];
}

export const PROJECT_ROWS: MatrixRow[] = [
  ...projectRows('P'),
  ...projectRows('Q'),
  // Declaring checkpoints is part of submitting, nothing more.
  {
    name: 'submitJob (P, with a checkpoint declaration)',
    query: SUBMIT,
    variables: async () => ({
      in: { ...jobInput('P', 'checkpointed'), checkpoint: { intervalSeconds: 900, resumable: true } },
    }),
    expect: submitters('P'),
  },
  {
    name: 'submitJob (no project named: the default project P)',
    query: SUBMIT,
    variables: async () => ({ in: { ...jobInput('P', 'default'), projectId: undefined } }),
    expect: submitters('P'),
  },
  {
    name: "cancelJob (P: the contributor's own job)",
    query: `mutation($id: ID!) { cancelJob(id: $id) { state } }`,
    variables: async () => ({
      id: (await m.as('contributor', SUBMIT, { in: jobInput('P', 'own-job', true) })).submitJob.id,
    }),
    expect: only('tenantAdmin', 'projectAdmin', 'contributor'),
  },
  // Archiving is the tenant's decision, even for a project one administers.
  {
    name: 'archiveProject (a project the project admin administers)',
    query: `mutation($id: ID!) { archiveProject(id: $id) { id status } }`,
    variables: async () => {
      const id = (
        await m.as('tenantAdmin', CREATE_PROJECT, {
          in: { tenantId: m.ids.Tenant, slug: `a-${m.next()}`, name: 'To archive' },
        })
      ).createProject.id;
      await m.as(
        'tenantAdmin',
        `mutation($in: AddProjectMemberInput!) { addProjectMember(input: $in) { id } }`,
        { in: { projectId: id, memberId: m.memberIds.projectAdmin, role: 'PROJECT_ADMIN' } },
      );
      return { id };
    },
    expect: only('tenantAdmin'),
  },
];
