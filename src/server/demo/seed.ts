import fs from 'node:fs';
import path from 'node:path';
import type { MikroORM } from '@mikro-orm/core';
import {
  displayPrefix,
  generateApiTokenSecret,
  hashApiTokenSecret,
  ROLE_CAPABILITIES,
} from '../../auth/index.js';
import { BUILT_IN_POLICIES } from '../../core/governance/index.js';
import { ClusterNode, Cohort, Flavor, NodePool, Queue } from '../../persistence/cluster/index.js';
import { IsolationPolicyRow } from '../../persistence/governance/index.js';
import { uuidv7 } from '../../persistence/ids.js';
import { Budget } from '../../persistence/metering/index.js';
import type { DataBoundaries } from '../../persistence/tenancy/index.js';
import {
  ApiToken,
  Membership,
  Project,
  ProjectMembership,
  type ProjectRole,
  Tenant,
  type TenantRole,
  User,
} from '../../persistence/tenancy/index.js';
import { systemEntityManager } from '../../persistence/tenant-filter.js';
import {
  DEFAULT_EXEMPT_PRIORITY_CLASSES,
  DEFAULT_THRESHOLDS,
  TENANT_SCOPE_KEY,
  writeInitialFlavorPrice,
} from '../../services/metering/index.js';

export interface DemoCredential {
  who: string;
  email: string;
  tenant: string | null;
  role: TenantRole | 'PLATFORM_ADMIN';
  token: string;
}

const DEMO_TENANTS = [
  {
    slug: 'aurora-research',
    name: 'Aurora Research',
    tier: 'PREMIUM' as const,
    isolationLevel: 'GUARANTEED' as const,
    queue: 'aurora-training',
    // Governance: a CRITICAL SLA, so the default rules give the queue the guaranteed policy.
    governance: { workloadType: null, slaClass: 'CRITICAL' as const },
    project: {
      slug: 'llm-pretraining',
      name: 'LLM pre-training',
      description: 'Foundation model runs on the shared H100 pool.',
    },
    people: [
      { email: 'ada@aurora.example', name: 'Ada Admin', role: 'TENANT_ADMIN' as const },
      {
        email: 'max@aurora.example',
        name: 'Max Member',
        role: 'MEMBER' as const,
        projectRole: 'CONTRIBUTOR' as const,
      },
      {
        email: 'vera@aurora.example',
        name: 'Vera Viewer',
        role: 'VIEWER' as const,
        projectRole: 'VIEWER' as const,
      },
      { email: 'otto@aurora.example', name: 'Otto Auditor', role: 'AUDITOR' as const },
    ],
    // The platform's data boundaries for Aurora: NGC and its own registry, its own buckets.
    dataBoundaries: {
      imageRegistries: ['nvcr.io/nvidia', 'registry.aurora.example'],
      datasetLocations: ['s3://aurora-datasets'],
      artifactStores: ['s3://aurora-models'],
    },
  },
  {
    slug: 'borealis-inference',
    name: 'Borealis Inference',
    tier: 'ENTERPRISE' as const,
    isolationLevel: 'ELASTIC' as const,
    queue: 'borealis-serving',
    // Batch inference with no SLA class: the default rules make it elastic (lends all it leaves idle,
    // borrows freely).
    governance: { workloadType: 'BATCH_INFERENCE' as const, slaClass: null },
    project: {
      slug: 'chat-serving',
      name: 'Chat serving',
      description: 'Online inference for the support assistant.',
    },
    people: [
      { email: 'bea@borealis.example', name: 'Bea Admin', role: 'TENANT_ADMIN' as const },
      {
        email: 'bob@borealis.example',
        name: 'Bob Member',
        role: 'MEMBER' as const,
        projectRole: 'CONTRIBUTOR' as const,
      },
    ],
    // Online serving needs capacity that is never preempted: granted to the tenant, passed on to its project.
    grantedPriorityClasses: ['inference-critical'],
  },
];

/**
 * Seeds the demo on an empty database (a platform admin, a simulated cluster with two
 * flavors, a cohort with one queue per tenant, two tenants with members, a project each
 * and an API token per person) and writes the tokens to
 * `<dataDir>/demo-credentials.json`. Does nothing when any tenant exists.
 */
export async function seedDemo(
  orm: MikroORM,
  dataDir: string,
  now: () => number = Date.now,
): Promise<DemoCredential[] | null> {
  const system = systemEntityManager(orm);
  if ((await system.count(Tenant, {})) > 0) return null;
  const credentials: DemoCredential[] = [];
  const yearFromNow = new Date(now() + 365 * 86_400_000);
  await system.transactional(async (em) => {
    const mint = (tenant: Tenant | null, user: User, scopes: string[], name: string) => {
      const secret = generateApiTokenSecret();
      em.create(ApiToken, {
        tenant,
        createdBy: user,
        name,
        scopes,
        tokenHash: hashApiTokenSecret(secret),
        prefix: displayPrefix(secret),
        expiresAt: yearFromNow,
        revokedAt: null,
        lastUsedAt: null,
      });
      return secret;
    };
    const admin = em.create(User, {
      email: 'admin@fairway.example',
      name: 'Platform Admin',
      isPlatformAdmin: true,
      externalId: null,
    });
    credentials.push({
      who: admin.name,
      email: admin.email,
      tenant: null,
      role: 'PLATFORM_ADMIN',
      token: mint(null, admin, [], 'demo platform token'),
    });
    // A small simulated cluster: whole H100s, and A100s cut into 7 MIG slices each.
    const h100 = em.create(Flavor, {
      name: 'h100-80g',
      kind: 'gpu',
      gpuModel: 'NVIDIA H100 80GB',
      slicesPerGpu: null,
      pricePerUnitHour: 2.49,
    });
    const mig = em.create(Flavor, {
      name: 'a100-1g.10gb',
      kind: 'mig',
      gpuModel: 'NVIDIA A100 40GB (MIG 1g.10gb)',
      slicesPerGpu: 7,
      pricePerUnitHour: 0.45,
    });
    for (const flavor of [h100, mig]) writeInitialFlavorPrice(em, flavor.name, flavor.pricePerUnitHour);
    const pool = em.create(NodePool, { name: 'shared', dedicatedTenant: null });
    for (let i = 1; i <= 4; i++)
      em.create(ClusterNode, {
        name: `h100-node-${i}`,
        pool,
        flavor: h100,
        gpus: 8,
        cpu: 192_000,
        memory: 1_048_576,
      });
    for (let i = 1; i <= 2; i++)
      em.create(ClusterNode, {
        name: `a100-mig-node-${i}`,
        pool,
        flavor: mig,
        gpus: 8,
        cpu: 128_000,
        memory: 524_288,
      });
    const cohort = em.create(Cohort, { name: 'research-pool', parent: null, quotas: {} });
    // The demo platform's override of the built-in guaranteed policy: it lends all of a queue's idle
    // share by default (the built-in lends half), so the two demo queues share their pool as they did
    // before governance; the controller may still keep it back while the owner's jobs wait.
    const guaranteed = BUILT_IN_POLICIES.find((p) => p.name === 'guaranteed')!;
    const { name: _name, description: _description, level: _level, ...coefficients } = guaranteed;
    em.create(IsolationPolicyRow, {
      name: guaranteed.name,
      description:
        'Its nominal comes back at once: lends all its idle share by default (the controller moves it between none and all), never borrows.',
      level: guaranteed.level,
      coefficients: { ...coefficients, lend: { min: 0, base: 1, max: 1 } },
      builtIn: true,
    });
    for (const spec of DEMO_TENANTS) {
      const tenant = em.create(Tenant, {
        slug: spec.slug,
        name: spec.name,
        tier: spec.tier,
        isolationLevel: spec.isolationLevel,
        status: 'ACTIVE',
        projectsOpen: false,
      });
      // Ids are given here, not at flush: the project below points at the queue before anything is written.
      const queue = em.create(Queue, {
        id: uuidv7(),
        name: spec.queue,
        tenant,
        cohort,
        // Half the pool each; either may borrow the other's idle half.
        quotas: { 'h100-80g': { gpu: { nominal: 16 } }, 'a100-1g.10gb': { gpu: { nominal: 56 } } },
        weight: 1,
        queueingStrategy: 'BestEffortFIFO',
        preemption: { withinQueue: 'LowerPriority', reclaimWithinCohort: 'Any' },
        isolationLevel: spec.isolationLevel,
        timeWindows: [],
        dedicatedPool: null,
        workloadType: spec.governance.workloadType,
        slaClass: spec.governance.slaClass,
        isolationPolicy: null,
        controllerSetting: null,
      });
      const project = em.create(Project, {
        id: uuidv7(),
        tenant,
        ...spec.project,
        status: 'ACTIVE',
        archivedAt: null,
        defaultQueueId: queue.id,
      });
      tenant.defaultProjectId = project.id;
      const grants = spec as { grantedPriorityClasses?: string[]; dataBoundaries?: DataBoundaries };
      if (grants.grantedPriorityClasses)
        tenant.grantedPriorityClasses = project.grantedPriorityClasses = grants.grantedPriorityClasses;
      if (grants.dataBoundaries) tenant.dataBoundaries = grants.dataBoundaries;
      for (const person of spec.people as {
        email: string;
        name: string;
        role: TenantRole;
        projectRole?: ProjectRole;
      }[]) {
        const user = em.create(User, {
          email: person.email,
          name: person.name,
          isPlatformAdmin: false,
          externalId: null,
        });
        em.create(Membership, { tenant, user, role: person.role });
        if (person.projectRole)
          em.create(ProjectMembership, { tenant, project, user, role: person.projectRole });
        const token = mint(
          tenant,
          user,
          [...ROLE_CAPABILITIES[person.role]].sort(),
          `demo token (${person.role.toLowerCase()})`,
        );
        credentials.push({
          who: person.name,
          email: person.email,
          tenant: spec.slug,
          role: person.role,
          token,
        });
      }
    }
  });
  fs.mkdirSync(dataDir, { recursive: true });
  fs.writeFileSync(
    demoCredentialsPath(dataDir),
    JSON.stringify(
      { note: 'Demo API tokens. Send as "Authorization: Bearer <token>".', credentials },
      null,
      2,
    ),
    { mode: 0o600 },
  );
  return credentials;
}

/**
 * Soft monthly budgets for the running demo (not for tests: only main.ts with the demo trickle
 * calls this), small enough that the trickle's spend crosses their first thresholds within
 * minutes, so a `tenantEvents` subscriber sees a BUDGET_ALERT.
 */
export async function seedDemoBudgets(orm: MikroORM): Promise<void> {
  await systemEntityManager(orm).transactional(async (em) => {
    for (const [slug, monthlyAmount] of [
      ['aurora-research', 40],
      ['borealis-inference', 80],
    ] as const) {
      const tenant = await em.findOneOrFail(Tenant, { slug });
      if (await em.count(Budget, { tenant })) continue;
      em.create(Budget, {
        tenant,
        project: null,
        scopeKey: TENANT_SCOPE_KEY,
        monthlyAmount,
        thresholds: [...DEFAULT_THRESHOLDS],
        hard: false,
        exemptPriorityClasses: [...DEFAULT_EXEMPT_PRIORITY_CLASSES],
      });
    }
  });
}

export function demoCredentialsPath(dataDir: string): string {
  return path.join(dataDir, 'demo-credentials.json');
}

export function readDemoCredentials(dataDir: string): DemoCredential[] | null {
  try {
    return (
      JSON.parse(fs.readFileSync(demoCredentialsPath(dataDir), 'utf8')) as { credentials: DemoCredential[] }
    ).credentials;
  } catch {
    return null;
  }
}
